package broker

import (
	"errors"
	"sort"
	"strings"
	"sync"

	"github.com/saguin-edge/saguin/broker/acl"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/netloop"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// shares are the shared subscription groups ($share/<name>/<filter>). The
// index holds one stand-in session per group at its filter, so a publish
// reaches a group once however many members it has; the group then hands
// the message to one member (RFC 0002 "Shared subscriptions").
type shares struct {
	mu     sync.Mutex
	groups map[string]*shareGroup // by the full "$share/<name>/<filter>"
	// pending are the groups whose backlog a member may now be able to
	// take, for the drainer (sharedrain.go); wake tells it there are some.
	pending []*shareGroup
	wake    chan struct{}
}

// shareGroup is one group: its members in client-id order and whose turn is
// next. While no member can take a QoS 1 or 2 message and one of them has a
// session that outlives its connection, the group holds it: the stand-in
// session owes it in the broadcast log like any away session (its backlog).
type shareGroup struct {
	key     string
	filter  string
	standIn *session
	members []*session // ordered by client id
	subs    map[*session]subscription
	last    string // the client id served last: turns go in client-id order
	// saved is the group cursor last stored: the lowest offset of its
	// backlog, or the log's next when it holds none.
	saved uint64
	// queued: the group is in shares.pending.
	queued bool
	// handing counts hand-overs to members whose window entries are
	// queued to be stored (storeHandOver): the group's cursor is not stored
	// past them until they are, so a restart owes them to the member.
	handing int
}

// durable reports whether a member's session outlives its connection: only
// then does the group hold what nobody can take. shares lock held.
func (g *shareGroup) durable() bool {
	for _, s := range g.members {
		if s.expiry > 0 {
			return true
		}
	}
	return false
}

// Counted drops of a shared delivery nobody could take.
func (b *Broker) shareDropped() { b.counters.SharesDroppedNoMember.Add(1) }

// checkShared applies RFC 0002's four refusals of a shared filter: 0x8F for a
// form that is not $share/<ShareName>/<filter>, $share in another case, or a
// filter beginning $share again; the inner filter refused as it would be
// alone, and anything under $saguin/ 0x87 (nothing there is ever delivered to
// a group); and a 3.1.1 client, which has no $share, refused (its 0x80). ok is
// false for a filter that is not shared at all.
func (b *Broker) checkShared(c delivery.Client, filter string) (inner string, code codec.ReasonCode, why string, ok bool) {
	if n := len(topic.SharePrefix); len(filter) >= n && strings.EqualFold(filter[:n], topic.SharePrefix) && filter[:n] != topic.SharePrefix {
		return "", codec.TopicFilterInvalid, "$share is spelled in lower case and no other", true
	}
	_, inner, shared, err := topic.SplitShared(filter)
	if !shared {
		return "", 0, "", false
	}
	if err != nil {
		return "", codec.TopicFilterInvalid, err.Error(), true
	}
	if c.Version() != codec.Version5 {
		return "", codec.UnspecifiedError, "MQTT 3.1.1 gives $share no meaning", true
	}
	if strings.HasPrefix(inner, topic.SaguinPrefix) {
		return "", codec.NotAuthorized, "nothing under $saguin/ is ever delivered to a group", true
	}
	if code, why := b.checkFilter(inner); code != codec.Success {
		return "", code, why, true
	}
	return inner, codec.Success, "", true
}

// joinShare makes s a member of the group key over inner and returns the
// group. Shard lock held.
func (b *Broker) joinShare(key, inner string, s *session, sub subscription) *shareGroup {
	b.shares.mu.Lock()
	defer b.shares.mu.Unlock()
	if b.shares.groups == nil {
		b.shares.groups = make(map[string]*shareGroup)
	}
	g := b.shares.groups[key]
	if g == nil {
		g = &shareGroup{key: key, filter: inner, subs: make(map[*session]subscription)}
		g.standIn = &session{id: key, filters: map[string]subscription{inner: {qos: 2}}, group: g}
		b.shares.groups[key] = g
		b.subs.add(inner, g.standIn, subscription{qos: 2})
	}
	if _, ok := g.subs[s]; !ok {
		i := sort.Search(len(g.members), func(i int) bool { return g.members[i].id >= s.id })
		g.members = append(g.members, nil)
		copy(g.members[i+1:], g.members[i:])
		g.members[i] = s
		r := s.rarely()
		r.groups = append(r.groups, g)
	}
	g.subs[s] = sub
	return g
}

// groupHasCursor reports whether the group keyed key has stored a cursor.
func (b *Broker) groupHasCursor(key string) bool {
	b.shares.mu.Lock()
	defer b.shares.mu.Unlock()
	g := b.shares.groups[key]
	return g != nil && g.saved != 0
}

// ensureGroupCursors gives every group a resumed session holds, when it
// outlives its connection, the cursor it may lack, before the CONNACK (RFC
// 0003 "Broadcast": a resumed session holding a group with no cursor gets one
// created). Shard lock held.
func (b *Broker) ensureGroupCursors(sh *shard, s *session) error {
	if s.expiry == 0 {
		return nil
	}
	for f := range s.filters {
		if !strings.HasPrefix(f, topic.SharePrefix) || b.groupHasCursor(f) {
			continue
		}
		next := b.bcast.log.Next()
		err := b.withRoom(sh, "a shared group's cursor", func() error { return b.sessions.SaveGroupCursor(f, next) })
		if err != nil {
			return err
		}
		b.shares.mu.Lock()
		if g := b.shares.groups[f]; g != nil && g.saved == 0 {
			g.saved = next
		}
		b.shares.mu.Unlock()
	}
	return nil
}

// groupCursorsFailed is what a resuming CONNECT is answered when its groups'
// cursors could not be created (RFC 0002 CONNACK table): 0x97 for no room
// (netloop counts it as refused for a full session store), 0x83 for any
// other failure; 0x00 for none.
func (b *Broker) groupCursorsFailed(req *netloop.ConnectRequest, err error) codec.ReasonCode {
	switch {
	case err == nil:
		return codec.Success
	case store.IsFull(err):
		b.log.Warn("connection refused: the session store has no room for the cursor of a shared group it holds", "client_id", req.ClientID)
		return codec.QuotaExceeded
	}
	b.counters.sessionStorageError()
	b.log.Error("session store failed giving a resumed session's shared group its cursor", "client_id", req.ClientID, "error", err)
	return codec.ImplementationSpecificError
}

// leaveShare takes s out of the group key; a group left with no member goes,
// and with it the backlog nobody can collect. Shard lock held.
func (b *Broker) leaveShare(key string, s *session) {
	b.shares.mu.Lock()
	defer b.shares.mu.Unlock()
	g := b.shares.groups[key]
	if g == nil {
		return
	}
	if _, ok := g.subs[s]; !ok {
		return
	}
	delete(g.subs, s)
	for i, m := range g.members {
		if m == s {
			g.members = append(g.members[:i], g.members[i+1:]...)
			break
		}
	}
	for i, x := range s.rareOrNone().groups {
		if x == g {
			s.rare.groups = append(s.rare.groups[:i], s.rare.groups[i+1:]...)
			break
		}
	}
	if len(g.members) == 0 {
		b.counters.SharesDroppedNoMemberLeft.Add(uint64(len(g.standIn.owed.entries)))
		delete(b.shares.groups, key)
		b.subs.remove(g.filter, g.standIn)
		for _, e := range g.standIn.owed.entries {
			b.bcast.unown(e.offset)
		}
		g.standIn.owed = owedList{}
		g.standIn.ended = true
	}
}

// shareDeliver hands p to one member of g that can take it now - connected,
// within its Maximum Packet Size, with room in its window (delivery.Client.CanTake) -
// taking turns in client-id order. What
// nobody can take at QoS 1 or 2 is held when a member's session outlives its
// connection (the stand-in joins the log's owers, set), and dropped, counted,
// otherwise. While the group holds a backlog a new message joins its back.
// publisher is for No Local, which a shared subscription never asks for.
func (b *Broker) shareDeliver(g *shareGroup, p *codec.Publish, m **delivery.Message, set *awaySet, ask *readCheck) {
	b.shares.mu.Lock()
	defer b.shares.mu.Unlock()
	if g.standIn.ended {
		return
	}
	if ask != nil && !ask.anyMember(g) {
		// The acl_file lets none of the members that could take it read
		// it: dropped, and counted as such (RFC 0005 "The catalogue").
		b.counters.SharesDroppedNotAuthorized.Add(1)
		return
	}
	if len(g.standIn.owed.entries) == 0 && b.handToMember(g, p, m, ask) {
		return
	}
	if g.durable() && p.QoS > 0 {
		set.add(g.standIn)
		b.counters.SharesHeld.Add(1)
		return
	}
	b.shareDropped()
}

// handToMember delivers to the next member whose turn it is and who can take
// the message; false when none can. shares lock held.
func (b *Broker) handToMember(g *shareGroup, p *codec.Publish, m **delivery.Message, ask *readCheck) bool {
	n := len(g.members)
	start := sort.Search(n, func(i int) bool { return g.members[i].id > g.last })
	for k := range n {
		s := g.members[(start+k)%n]
		ref := s.client.Load()
		if ref == nil || !ask.allows(s) {
			continue
		}
		sub := g.subs[s]
		d := delivery.Delivery{QoS: min(p.QoS, sub.qos), Retain: p.Retain && sub.retainAsPublished, Ref: logRef(0, g.key)}
		if sub.id != 0 {
			d.SubscriptionIDs = []uint32{sub.id}
		}
		if *m == nil {
			*m = delivery.AcquireMessage(p, b.now) // routeLogged's, released there
		}
		if !ref.c.CanTake(*m, d) {
			continue // passed over, not disconnected
		}
		if !ref.c.Deliver(*m, d) {
			continue
		}
		g.last = s.id
		return true
	}
	return false
}

// drainShares hands a member that can take deliveries now the backlog of
// every group it belongs to, in publish order: each held message becomes the
// member's to finish. Shard lock of s held.
func (b *Broker) drainShares(s *session, c delivery.Client) {
	b.shares.mu.Lock()
	var groups []*shareGroup
	for f := range s.filters {
		if g := b.shares.groups[f]; g != nil && len(g.standIn.owed.entries) > 0 {
			groups = append(groups, g)
		}
	}
	b.shares.mu.Unlock()
	for _, g := range groups {
		b.shares.mu.Lock()
		owed := g.standIn.owed
		g.standIn.owed = owedList{}
		b.shares.mu.Unlock()
		now := b.now()
		var handed []store.InFlight
		var taken []uint64
		for _, e := range owed.entries {
			got, err := b.bcast.log.ReadFrom(e.offset, 1, nil)
			if err != nil || len(got) == 0 || got[0].Offset != e.offset {
				b.bcast.unown(e.offset)
				continue
			}
			if ea := b.opts.ShareExpiresAfter; ea > 0 && now.Sub(got[0].Time) >= ea {
				b.bcast.unown(e.offset) // held past broker.share.expires_after
				b.counters.SharesDroppedExpired.Add(1)
				continue
			}
			if e.returned {
				if b.opts.SessionsWaitOnDisk {
					// The group's list says it holds the row: taken
					// with the window's write, off the lock.
					taken = append(taken, e.offset)
				} else if !b.takeReturned(g.key, e.offset) {
					b.bcast.unown(e.offset) // already handed over
					continue
				}
			}
			b.counters.SharesDrained.Add(1)
			if j := b.bcast.owe(s, e.offset, e.size); j >= 0 {
				s.owed.entries[j].share = g.key
				if s.expiry > 0 {
					handed = append(handed, store.InFlight{Offset: e.offset, PacketID: packetIDFor(e.offset), QoS: got[0].QoS, ShareGroup: g.key})
				}
			}
		}
		b.bcast.markDirty(s)
		b.storeHandOver(s, g, taken, handed)
	}
}

// storeHandOver stores what group g handed member s: the returned rows it
// took and the window entries saying which group handed it what, before the
// group's cursor passes them (a restart owes them to the member again
// rather than to nobody, notes-0004 "session_inflight"; a crash between the
// two re-sends, at least once). Shard lock of s held. On a provider that
// commits to disk the write is queued on s's client id (storeLater) and made
// with no lock held, so no call of the shard waits for it; g.handing keeps
// the group's cursor where it is until it is stored. On a memory provider it
// is made now.
func (b *Broker) storeHandOver(s *session, g *shareGroup, taken []uint64, window []store.InFlight) {
	if len(taken) == 0 && len(window) == 0 {
		return
	}
	write := func() {
		for _, off := range taken {
			b.takeReturned(g.key, off)
		}
		if len(window) > 0 {
			if err := b.sessions.AddInFlight(s.id, window); err != nil {
				b.storageFailed("storing what a shared group handed a member", s.id, err)
			}
		}
	}
	if !b.opts.SessionsWaitOnDisk {
		write()
		return
	}
	b.shares.mu.Lock()
	g.handing++
	b.shares.mu.Unlock()
	b.later.add(s.id, func() {
		write()
		b.shares.mu.Lock()
		g.handing--
		b.shares.mu.Unlock()
	})
}

// sendShared sends s's owed entry j, a message the group key held for its
// members, under the member's shared subscription; false when it was dropped
// (expired, or the member left the group). Shard lock of s held.
func (b *Broker) sendShared(s *session, c delivery.Client, key string, e *store.BroadcastEntry, j int) bool {
	b.shares.mu.Lock()
	var sub subscription
	g := b.shares.groups[key]
	in := false
	if g != nil {
		sub, in = g.subs[s]
	}
	b.shares.mu.Unlock()
	m := messageOf(&e.Record, b.now())
	if m == nil {
		b.counters.DeliveriesExpired.Add(1)
	}
	if m == nil || !in {
		b.bcast.drop(s, j)
		return false
	}
	d := delivery.Delivery{QoS: min(e.QoS, sub.qos), Retain: e.Retain && sub.retainAsPublished, Ref: logRef(e.Offset, key),
		PacketID: packetIDFor(e.Offset), Dup: s.owed.entries[j].maybeSent}
	if sub.id != 0 {
		d.SubscriptionIDs = []uint32{sub.id}
	}
	s.owed.markSent(j)
	c.Deliver(m, d)
	return true
}

// returnToGroups places again what an ending member's connection left
// unfinished from its groups (RFC 0003 "Broadcast", MQTT 5 4.8.2): a QoS 1
// delivery unacknowledged, or one never put on the wire, goes to another
// member; a QoS 2 delivery the member had not answered with PUBREC is
// dropped, counted; one it had answered has reached it. These are the
// deliveries handed from memory; those from the log (an offset) the ending
// gives back from the session's list (giveBack), once.
func (b *Broker) returnToGroups(ending *session, u []delivery.Unfinished) {
	for _, x := range u {
		if x.Delivery.Ref.Name == "" || x.Delivery.Released || x.Delivery.Ref.N != 0 {
			continue
		}
		if x.Delivery.QoS == 2 {
			b.counters.SharesDroppedMemberEnded.Add(1)
			continue
		}
		b.shares.mu.Lock()
		g := b.shares.groups[x.Delivery.Ref.Name]
		placed := g != nil && b.handMessage(g, x.Msg, x.Delivery, ending)
		b.shares.mu.Unlock()
		if !placed {
			b.shareDropped()
		}
	}
}

// handMessage delivers an already built message to the next member that can
// take it, never to the member it comes back from. shares lock held.
func (b *Broker) handMessage(g *shareGroup, m *delivery.Message, d delivery.Delivery, from *session) bool {
	n := len(g.members)
	start := sort.Search(n, func(i int) bool { return g.members[i].id > g.last })
	for k := range n {
		s := g.members[(start+k)%n]
		ref := s.client.Load()
		if ref == nil || s == from {
			continue
		}
		sub := g.subs[s]
		dd := delivery.Delivery{QoS: min(d.QoS, sub.qos), Retain: d.Retain && sub.retainAsPublished, Ref: logRef(0, g.key), Dup: true}
		if sub.id != 0 {
			dd.SubscriptionIDs = []uint32{sub.id}
		}
		if !ref.c.CanTake(m, dd) {
			continue
		}
		if ref.c.Deliver(m, dd) {
			g.last = s.id
			return true
		}
	}
	return false
}

// cursor is where the group's backlog begins, next when it holds none: the
// deliveries members gave back lie behind it, kept as returned rows instead.
// shares lock held.
func (g *shareGroup) cursor(next uint64) uint64 {
	for _, e := range g.standIn.owed.entries {
		if !e.returned {
			return e.offset
		}
	}
	return next
}

// takeReturned deletes a returned delivery's row as it is handed to a
// member: false when it was taken already. A store that fails hands it over
// anyway (at least once: a restart may serve it again).
func (b *Broker) takeReturned(group string, offset uint64) bool {
	took, err := b.sessions.TakeReturned(group, offset)
	if err != nil {
		b.storageFailed("handing over a delivery returned to a shared group", group, err)
		return true
	}
	return took
}

// saveGroupCursors stores the cursor of every group that holds a backlog for
// a durable member and whose cursor moved, so the backlog keeps across a
// restart what the sessions keep (RFC 0002 "What a shared group is owed").
// A refused write is tried again at the next commit.
func (b *Broker) saveGroupCursors() {
	type moved struct {
		g      *shareGroup
		cursor uint64
	}
	var todo []moved
	next := b.bcast.log.Next()
	b.shares.mu.Lock()
	for _, g := range b.shares.groups {
		if !g.durable() || g.handing > 0 {
			continue // a hand-over is being stored: the next commit
		}
		c := g.cursor(next)
		if c != g.saved {
			todo = append(todo, moved{g, c})
		}
	}
	b.shares.mu.Unlock()
	for _, m := range todo {
		err := b.sessions.SaveGroupCursor(m.g.key, m.cursor)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			b.storageFailed("storing a shared group's cursor", m.g.key, err)
			continue
		}
		// ErrNotFound: no stored session holds the group (its members' records
		// were refused for room), so the store keeps no cursor for it - and is
		// not asked again at every commit.
		b.shares.mu.Lock()
		m.g.saved = m.cursor
		b.shares.mu.Unlock()
	}
}

// restoredGroup is what a start reads back for one group: its cursor and
// the deliveries members gave back, owed ahead of it.
type restoredGroup struct {
	cursor   uint64
	returned map[uint64]bool
}

// restoreBacklogs gives every restored group with a durable member its stored
// cursor and returned deliveries; restoreOwed then makes its stand-in owe
// what lies after the cursor, and those returned, ahead of it.
func (b *Broker) restoreBacklogs() (map[*shareGroup]*restoredGroup, error) {
	out := map[*shareGroup]*restoredGroup{}
	b.shares.mu.Lock()
	defer b.shares.mu.Unlock()
	for key, g := range b.shares.groups {
		if !g.durable() {
			continue
		}
		c, ok, err := b.sessions.GroupCursor(key)
		if err != nil {
			return nil, err
		}
		ret, err := b.sessions.Returned(key)
		if err != nil {
			return nil, err
		}
		if !ok && len(ret) == 0 {
			continue
		}
		rg := &restoredGroup{cursor: c, returned: make(map[uint64]bool, len(ret))}
		if !ok {
			rg.cursor = ^uint64(0) // none stored: only what was given back
		}
		for _, r := range ret {
			rg.returned[r.Offset] = true
		}
		out[g] = rg
		g.saved = c
	}
	return out, nil
}

// readCheck is the acl_file's question for one publish's deliveries: may a
// session read topic t. A nil one is no acl_file.
type readCheck struct {
	rules *acl.ACL
	t     string
	// ch is t's channel ("" broadcast), looked up at the first delivery
	// the subscription's remembered grant does not answer: a fan-out whose
	// every subscription is covered costs no lookup.
	ch     string
	chRead bool
	memo   acl.Memo
}

func (r *readCheck) allows(s *session) bool {
	return r == nil || r.topicAllows(grantsIn(r.rules, s.who.Load(), s.id))
}

// topicAllows asks g about the topic itself.
func (r *readCheck) topicAllows(g *acl.Grants) bool {
	if !r.chRead {
		r.ch, r.chRead = r.rules.Channel(r.t), true
	}
	return g.AllowsMemo(&r.memo, r.ch, r.t, acl.Read)
}

// allowsMatch is allows for a session's merged delivery, after its
// subscription's remembered grant did not answer yes (readGrant.covered):
// that grant is asked for this identity and rules, then the topic itself.
func (r *readCheck) allowsMatch(x *match, who *identity) bool {
	g := grantsIn(r.rules, who, x.s.id)
	return x.read.remember(who, r.rules, g) || r.topicAllows(g)
}

// anyMember reports whether some member of g, connected or not, may read
// the publish. shares lock held.
func (r *readCheck) anyMember(g *shareGroup) bool {
	for _, s := range g.members {
		if r.allows(s) {
			return true
		}
	}
	return false
}
