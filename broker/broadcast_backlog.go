package broker

import (
	"errors"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// backlog is the broker's side of the broadcast log: a QoS 1 or 2 broadcast
// owed to a session that is away is written to the log once, however many
// sessions are owed it; each session holds the offsets it is owed (owedList)
// and its cursor - the lowest offset it has not acknowledged - is stored with
// it. A message leaves the log once no session owes it any more.
type backlog struct {
	b   *Broker
	log store.BroadcastLog

	mu sync.Mutex
	// refs is how many sessions owe each offset held.
	refs map[uint64]int
	// unowed are offsets nobody owes any more, released at the next commit.
	unowed []uint64
	// dirty are the sessions whose cursor moved since the last commit.
	dirty map[*session]struct{}
	// full gathers what a full provider cost until its warning is due.
	full fullWarning
	// roomMu lets one makeRoom at a time walk the sessions.
	roomMu sync.Mutex

	sets sync.Pool // *awaySet
}

// awaySet collects the away sessions one publish reaches.
type awaySet struct{ sessions []*session }

// owedList is what one session is owed from the log, oldest first.
type owedList struct {
	entries []owedEntry
	bytes   int64
	// sentBytes is what of it the session's connection has been handed and
	// has not acknowledged: at most half of limits.session_queue_bytes
	// (RFC 0002 "How much a session may hold"), the rest waits in the log.
	sentBytes int64
}

type owedEntry struct {
	offset uint64
	size   int64
	sent   bool // handed to the current connection, not yet acknowledged
	// maybeSent: an earlier connection may have had it, so a re-send says
	// DUP.
	maybeSent bool
	// share is the shared group that handed it to this member, "" for none:
	// it is sent under the member's shared subscription.
	share string
	// released: the client's PUBREC for this QoS 2 delivery is stored, under
	// pid; only its PUBREL is owed.
	released bool
	pid      uint16
	// returned: in a shared group's backlog, a delivery an ending member
	// gave back, stored as such (Sessions.Returned) until a member is
	// handed it (TakeReturned).
	returned bool
	// live is the message as it was published, kept while the entry waits
	// for room on the connection that was connected when it was written, on
	// a provider that commits to disk: the acknowledgement that makes the
	// room hands it over from memory instead of reading the log (pump).
	// Bounded by limits.session_queue_bytes like the list; nil otherwise.
	live *liveMessage
}

// liveMessage is one published log message shared by the entries of every
// connected session waiting for room to be handed it: the message (one
// reference per entry holding it) and what deliveryFor reads of its record.
type liveMessage struct {
	m   *delivery.Message
	rec store.Record // Topic, ClientID, QoS and Retain: no payload
}

// letGo gives back the entry's reference to its live message, if it holds
// one: it was handed over, left the list, or its connection went.
func (e *owedEntry) letGo() {
	if e.live != nil {
		e.live.m.Release()
		e.live = nil
	}
}

// markSent records that entry j was handed to the connection.
func (o *owedList) markSent(j int) {
	if !o.entries[j].sent {
		o.entries[j].sent = true
		o.sentBytes += o.entries[j].size
	}
}

// firstUnsent is the index of the oldest entry not handed over, -1 for none.
func (o *owedList) firstUnsent() int {
	for i := range o.entries {
		if !o.entries[i].sent {
			return i
		}
	}
	return -1
}

// packetIDFor is the packet identifier a log message is always sent to a
// session under: derived from its offset, so a resumed session - after a
// link cut or a restart - is re-sent it under the identifier it was first
// sent with (MQTT-4.4.0-1) without a write per delivery to remember it. Two
// messages a session has in flight at once share one only when their offsets
// are a multiple of 65,535 apart; the connection then gives the later a new
// one (delivery.Delivery.PacketID).
func packetIDFor(offset uint64) uint16 {
	return uint16((offset-1)%65535 + 1)
}

func (l *backlog) init(b *Broker) {
	l.b = b
	l.full.b = b
	l.log = b.sessions.Log()
	l.refs = make(map[uint64]int)
	l.dirty = make(map[*session]struct{})
	l.sets.New = func() any { return &awaySet{sessions: make([]*session, 0, 8)} }
}

// scratch is an empty set for one publish; release gives it back.
func (l *backlog) scratch() *awaySet {
	a := l.sets.Get().(*awaySet)
	a.sessions = a.sessions[:0]
	return a
}

func (l *backlog) release(a *awaySet) {
	clear(a.sessions)
	a.sessions = a.sessions[:0]
	l.sets.Put(a)
}

// add puts s in the set once, however many of its filters matched.
func (a *awaySet) add(s *session) {
	for _, x := range a.sessions {
		if x == s {
			return
		}
	}
	a.sessions = append(a.sessions, s)
}

// keep writes p to the log once and makes each session in set - every
// session that outlives its connection the publish reaches at QoS 1 or 2,
// connected or away - owe it; the connected ones are sent it now. It returns
// once the write is stored, so the publisher's acknowledgement follows it
// (notes-0003 "When the publisher is answered"). A provider with no room
// keeps nothing: the loss is the away sessions', counted for each, and the
// connected ones are sent it from memory. A write that failed otherwise is
// that too, and returned: the publisher is refused rather than told a
// message the away sessions will never see was kept (RFC 0002 0x83).
func (l *backlog) keep(publisher string, p *codec.Publish, set *awaySet, m *delivery.Message) error {
	e, err := l.log.Append(store.BroadcastEntry{Record: recordOf(p, publisher, l.b.now())})
	for tries := 0; tries < roomTries && store.IsFull(err) && l.makeRoom(nil, "a message owed to sessions", store.Shortfall(err), 1<<tries); tries++ {
		e, err = l.log.Append(store.BroadcastEntry{Record: recordOf(p, publisher, l.b.now())})
	}
	if err != nil {
		var away, groups uint64
		var lostBy []string
		for _, s := range set.sessions {
			if ref := s.client.Load(); ref != nil {
				if m == nil {
					m = delivery.NewMessage(p, l.b.now)
				}
				r := store.Record{Topic: string(p.Topic), ClientID: publisher, QoS: p.QoS, Retain: p.Retain}
				sh := l.b.shard(s.id)
				sh.mu.Lock()
				d, ok := s.deliveryFor(&r)
				sh.mu.Unlock()
				if ok {
					ref.c.Deliver(m, d)
				}
				continue
			}
			if s.group != nil {
				groups++ // a shared group's loss, not a session's
				continue
			}
			away++
			lostBy = append(lostBy, s.id)
		}
		if store.IsFull(err) {
			l.b.counters.DeliveriesDroppedStorageFull.Add(away)
			l.b.counters.SharesDroppedStorageFull.Add(groups)
			l.full.add(fullLoss{what: "a message owed to sessions", notKept: 1, deliveries: away, shared: groups, sessions: lostBy})
		} else {
			l.b.storageFailed("writing the broadcast log", publisher, err)
			return err
		}
		return nil
	}
	size := store.RecordSize(&e.Record)
	l.b.counters.LogMessages.Add(1)
	l.b.counters.LogBytes.Add(size)
	l.owedBy(&e, size, set, m)
	return nil
}

// roomTries is how many times a write refused for room lets the log give
// way before it is refused. A provider that says how many bytes the write
// missed (store.Shortfall, a memory provider) has the fewest oldest messages
// that cover them go (RFC 0002); one that cannot say (sqlite, whose room
// comes back by the page) has makeRoom's n double each time, finding its
// page within a few tries (up to 255 messages).
const roomTries = 8

// makeRoom lets the log's oldest messages go to make room in a full
// provider, for its own next message or for any other write on the provider
// (RFC 0002 "Every session's state": the log gives way to everything else
// there): the oldest that nobody has on the wire - the fewest whose bytes
// cover need, or the n oldest when need is 0 (the provider cannot say) -
// each session
// that owed one counted once for it (storage_full), and what shared groups
// were owed from them counted as the groups' (shares storage_full). It
// reports whether anything went; what names what the room is for in the
// warning.
//
// held is the shard whose lock the caller holds, nil for none. A caller
// holding one may wait here for the others only while no other such caller
// is inside (roomMu taken without waiting): two of them, each holding its own
// shard and waiting for the other's, would never finish. A caller turned away
// finds no room, as though nothing could go.
func (l *backlog) makeRoom(held *shard, what string, need int64, n int) bool {
	if held == nil {
		l.roomMu.Lock()
	} else if !l.roomMu.TryLock() {
		return false
	}
	defer l.roomMu.Unlock()
	// Some of the oldest may be on the wire and stay: look past them. A
	// shortfall in bytes may take many small messages: list more.
	listed := n + 16
	if need > 0 {
		listed = 256*n + 16
	}
	oldest, err := l.log.Oldest(listed)
	if err != nil || len(oldest) == 0 {
		return false
	}
	want := make(map[uint64]bool, len(oldest)) // offset -> may go
	for _, o := range oldest {
		want[o] = true
	}
	size := make(map[uint64]int64, len(oldest)) // offset -> its bytes, from whoever owes it
	note := func(s *session) {
		for _, e := range s.owed.entries {
			if _, listed := want[e.offset]; listed {
				size[e.offset] = e.size
				if e.sent {
					want[e.offset] = false // it is that session's to finish
				}
			}
		}
	}
	l.eachSession(held, note)
	if need > 0 {
		l.b.shares.mu.Lock()
		for _, g := range l.b.shares.groups {
			for _, e := range g.standIn.owed.entries {
				if _, listed := want[e.offset]; listed {
					size[e.offset] = e.size
				}
			}
		}
		l.b.shares.mu.Unlock()
	}
	var gone []uint64
	var covered int64
	for _, o := range oldest {
		enough := len(gone) >= n
		if need > 0 {
			enough = covered >= need
		}
		if want[o] && !enough {
			gone = append(gone, o)
			covered += size[o]
		} else {
			delete(want, o)
		}
	}
	if len(gone) == 0 {
		return false
	}
	var lost uint64
	var lostBy []string
	l.eachSession(held, func(s *session) {
		if n := l.forget(s, want); n > 0 {
			lost += n
			lostBy = append(lostBy, s.id)
			l.markDirty(s)
		}
	})
	var shared uint64
	l.b.shares.mu.Lock()
	for _, g := range l.b.shares.groups {
		shared += l.forget(g.standIn, want)
	}
	l.b.shares.mu.Unlock()
	l.mu.Lock()
	for _, o := range gone {
		delete(l.refs, o)
	}
	l.mu.Unlock()
	freed, err := l.log.Release(gone)
	if err != nil {
		l.b.storageFailed("releasing the broadcast log's oldest messages for room", "", err)
		return false
	}
	l.b.counters.LogMessages.Add(-int64(len(gone)))
	l.b.counters.LogBytes.Add(-freed)
	l.b.counters.DeliveriesDroppedStorageFull.Add(lost)
	l.b.counters.SharesDroppedStorageFull.Add(shared)
	l.full.add(fullLoss{what: what, gone: uint64(len(gone)), deliveries: lost, shared: shared, sessions: lostBy})
	return true
}

// forget takes the offsets gone says may go out of s's list and reports how
// many it held. The lock guarding s is held.
func (l *backlog) forget(s *session, gone map[uint64]bool) uint64 {
	o := &s.owed
	kept := o.entries[:0]
	var n uint64
	for _, e := range o.entries {
		if gone[e.offset] {
			e.letGo()
			o.bytes -= e.size
			s.forgetWindow(e)
			n++
			continue
		}
		kept = append(kept, e)
	}
	clear(o.entries[len(kept):])
	o.entries = kept
	return n
}

// withRoom runs a write on the session store's provider and, while the
// provider is full, lets the log's oldest messages go for it and tries again
// (RFC 0002: only when the log has nothing left to give is the write refused,
// answered as its own store answers a full provider). held is the shard
// whose lock the caller holds, nil for none.
func (b *Broker) withRoom(held *shard, what string, write func() error) error {
	err := write()
	for tries := 0; tries < roomTries && store.IsFull(err) && b.bcast.makeRoom(held, what, store.Shortfall(err), 1<<tries); tries++ {
		err = write()
	}
	return err
}

// eachSession calls fn for every session, under its shard's lock; held is
// a shard whose lock the caller already holds, nil for none.
func (l *backlog) eachSession(held *shard, fn func(*session)) {
	for i := range l.b.shards {
		sh := &l.b.shards[i]
		if sh != held {
			sh.mu.Lock()
		}
		for _, s := range sh.sessions {
			fn(s)
		}
		if sh != held {
			sh.mu.Unlock()
		}
	}
}

// keepFor writes a retained value sent at SUBSCRIBE to the log for s alone
// (BroadcastEntry.OwedTo) and sends it as d under the identifier its offset
// gives. false when the log did not take it: the caller sends it from memory.
// Called with no shard lock held.
func (l *backlog) keepFor(s *session, c delivery.Client, r *store.Record, m *delivery.Message, d delivery.Delivery) bool {
	e, err := l.log.Append(store.BroadcastEntry{Record: *r, OwedTo: s.id})
	if err != nil {
		if !store.IsFull(err) {
			l.b.storageFailed("keeping a retained value for a session", s.id, err)
		}
		return false
	}
	size := store.RecordSize(&e.Record)
	l.b.counters.LogMessages.Add(1)
	l.b.counters.LogBytes.Add(size)
	l.mu.Lock()
	l.refs[e.Offset] = 1
	l.mu.Unlock()
	sh := l.b.shard(s.id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if s.ended || !s.ownedBy(c) {
		l.unown(e.Offset)
		return true // its connection is gone; nothing is owed to a session that ended
	}
	j := l.owe(s, e.Offset, size)
	if j < 0 {
		return true // the session's bound let it go at once
	}
	if j != s.owed.firstUnsent() || !l.hasRoom(s, size) {
		return true // it waits its turn in the log (pump)
	}
	s.owed.markSent(j)
	d.Ref, d.PacketID = logRef(e.Offset, ""), packetIDFor(e.Offset)
	c.Deliver(m, d)
	return true
}

// keepLogged makes the sessions in away owe a message already in the log at
// offset; one nobody is owed is released at the next commit.
func (l *backlog) keepLogged(offset uint64, size int64, away *awaySet, m *delivery.Message) {
	if len(away.sessions) == 0 {
		l.unownAll(offset)
		return
	}
	got, err := l.log.ReadFrom(offset, 1, nil)
	if err != nil || len(got) == 0 || got[0].Offset != offset {
		l.b.storageFailed("reading a released message back from the broadcast log", "", err)
		l.unownAll(offset)
		return
	}
	l.owedBy(&got[0], size, away, m)
}

// unownAll marks a logged message as owed by nobody.
func (l *backlog) unownAll(offset uint64) {
	l.mu.Lock()
	delete(l.refs, offset)
	l.unowed = append(l.unowed, offset)
	l.mu.Unlock()
}

// owedBy makes each session in set owe e and sends it to those connected -
// including one that came back between the match and the write, whose
// resume has passed. m is the message built from e, or nil. Called with no
// shard lock held.
func (l *backlog) owedBy(e *store.BroadcastEntry, size int64, set *awaySet, m *delivery.Message) {
	l.mu.Lock()
	l.refs[e.Offset] = len(set.sessions)
	l.mu.Unlock()
	var live *liveMessage // made for the first connected session that waits for room
	for _, s := range set.sessions {
		if s.group != nil {
			// A shared group's backlog: kept under the groups' lock.
			l.b.shares.mu.Lock()
			if s.ended {
				l.unown(e.Offset)
			} else {
				was := len(s.owed.entries)
				if l.owe(s, e.Offset, size) >= 0 && was == 0 {
					// A member whose window opened between the match and
					// now found nothing to drain: it is looked at again.
					l.b.queueDrain(s.group)
				}
			}
			l.b.shares.mu.Unlock()
			continue
		}
		sh := l.b.shard(s.id)
		sh.mu.Lock()
		if s.ended {
			l.unown(e.Offset)
		} else {
			j := l.owe(s, e.Offset, size)
			if ref := s.client.Load(); ref != nil && j >= 0 {
				if m == nil {
					m = messageOf(&e.Record, l.b.now())
				}
				if j == s.owed.firstUnsent() && l.hasRoom(s, size) {
					l.sendOne(s, ref.c, e, m, j)
				} else if m != nil && l.b.opts.SessionsWaitOnDisk {
					if live == nil {
						live = &liveMessage{m: m, rec: store.Record{Topic: e.Topic, ClientID: e.ClientID, QoS: e.QoS, Retain: e.Retain}}
					}
					m.Retain()
					s.owed.entries[j].live = live
				}
			}
		}
		sh.mu.Unlock()
	}
}

// owe adds an offset to s's list, then keeps the list inside
// limits.session_queue_bytes by letting the oldest not on the wire go,
// counted. It returns the entry's index, -1 when the bound let it go at once.
// Shard lock held.
func (l *backlog) owe(s *session, offset uint64, size int64) int {
	o := &s.owed
	// Kept in offset order: two publishers' writes can reach here in either
	// order, and acknowledgements find their entry by binary search.
	i := len(o.entries)
	for i > 0 && o.entries[i-1].offset > offset {
		i--
	}
	o.entries = append(o.entries, owedEntry{})
	copy(o.entries[i+1:], o.entries[i:])
	o.entries[i] = owedEntry{offset: offset, size: size}
	o.bytes += size
	for o.bytes > l.b.opts.SessionQueueBytes && len(o.entries) > 1 {
		i := 0
		for i < len(o.entries)-1 && o.entries[i].sent {
			i++
		}
		if o.entries[i].sent || i == len(o.entries)-1 {
			break
		}
		l.drop(s, i)
		if s.group != nil {
			l.b.counters.SharesDroppedBacklogFull.Add(1)
		} else {
			l.b.counters.DeliveriesDroppedQueue.Add(1)
		}
	}
	return s.owed.find(offset)
}

// find is the index of offset in the list, -1 when it is not owed.
func (o *owedList) find(offset uint64) int {
	i := sort.Search(len(o.entries), func(i int) bool { return o.entries[i].offset >= offset })
	if i < len(o.entries) && o.entries[i].offset == offset {
		return i
	}
	return -1
}

// drop removes entry i of s's list, releasing its offset. Shard lock held.
func (l *backlog) drop(s *session, i int) {
	o := &s.owed
	o.entries[i].letGo()
	e := o.entries[i]
	o.entries = append(o.entries[:i], o.entries[i+1:]...)
	o.bytes -= e.size
	if e.sent {
		o.sentBytes -= e.size
	}
	s.forgetWindow(e)
	l.unown(e.offset)
	l.markDirty(s)
}

// forgetWindow queues the stored window entry of e, if it has one - a QoS 2
// delivery whose PUBREC was stored, or one a shared group handed s - to be
// deleted with the cursor's next write. Shard lock held.
func (s *session) forgetWindow(e owedEntry) {
	switch {
	case s.group != nil:
	case e.released:
		r := s.rarely()
		r.done = append(r.done, store.InFlightKey{PacketID: e.pid, Offset: e.offset})
	case e.share != "":
		r := s.rarely()
		r.done = append(r.done, store.InFlightKey{PacketID: packetIDFor(e.offset), Offset: e.offset})
	}
}

// unown records that one session no longer owes offset.
func (l *backlog) unown(offset uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n, ok := l.refs[offset]; ok {
		if n <= 1 {
			delete(l.refs, offset)
			l.unowed = append(l.unowed, offset)
		} else {
			l.refs[offset] = n - 1
		}
	}
}

func (l *backlog) markDirty(s *session) {
	if s.group != nil {
		return // a group's backlog has no cursor of its own here
	}
	l.mu.Lock()
	l.dirty[s] = struct{}{}
	l.mu.Unlock()
}

// hasRoom reports whether s's connection may be handed size more bytes from
// the log: what it holds unacknowledged stays within half of
// limits.session_queue_bytes, and one message always may when it holds none.
// Shard lock held.
func (l *backlog) hasRoom(s *session, size int64) bool {
	return s.owed.sentBytes == 0 || s.owed.sentBytes+size <= l.b.opts.SessionQueueBytes/2
}

// pump hands s's connection the entries it is owed and has not been handed,
// in log order, while it has room: at a resume (after what its last
// connection left unfinished) and as acknowledgements make room. What the log
// no longer holds is not owed. Shard lock held.
//
// On a provider that commits to disk the read is made by pumpOff, on the
// client id's queue of writes with no shard lock held, so neither the loop
// that read the PUBACK nor any call of the shard waits for the disk; on a
// memory provider it is made here, as a lock costs less than the hand-over.
func (l *backlog) pump(s *session, c delivery.Client) {
	if l.b.opts.SessionsWaitOnDisk {
		l.handLive(s, c)
		if !s.pumping && l.mayPump(s) {
			s.pumping = true
			l.b.later.add(s.id, func() { l.pumpOff(s) })
		}
		return
	}
	for l.mayPump(s) {
		from := s.owed.entries[s.owed.firstUnsent()].offset
		got, err := l.log.ReadFrom(from, pumpRead, nil)
		if err != nil {
			l.b.storageFailed("reading the broadcast log", s.id, err)
			return
		}
		// Under the lock throughout: every entry owed was written before
		// the read, so one it did not find is released.
		l.handOver(s, c, from, math.MaxUint64, got)
	}
}

// handLive hands c, in log order while it has room, the entries waiting
// with their message in memory (owedEntry.live): what a connected session
// waits for needs no read of the log. It stops at the first entry that has
// none, which is the log's to serve. Shard lock held.
func (l *backlog) handLive(s *session, c delivery.Client) {
	for l.mayPump(s) {
		j := s.owed.firstUnsent()
		live := s.owed.entries[j].live
		if live == nil {
			return
		}
		e := store.BroadcastEntry{Record: live.rec}
		e.Offset = s.owed.entries[j].offset
		m := live.m
		if m.Expired(l.b.now()) {
			m = nil // counted and dropped by sendOne, as one read back expired
		}
		l.sendOne(s, c, &e, m, j)
	}
}

// pumpRead is how many log messages one pump read fetches.
const pumpRead = 256

// mayPump reports whether s has an entry not handed over that its
// connection has room for. Shard lock held.
func (l *backlog) mayPump(s *session) bool {
	j := s.owed.firstUnsent()
	return j >= 0 && l.hasRoom(s, s.owed.entries[j].size)
}

// pumpOff is pump on a provider that commits to disk: the shard lock is let
// go across each read of the log, and what was read is handed to whichever
// connection holds the session once it is taken again. One runs per session
// at a time (session.pumping); an acknowledgement arriving meanwhile finds
// its room used by the next round.
func (l *backlog) pumpOff(s *session) {
	sh := l.b.shard(s.id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	defer func() { s.pumping = false }()
	for !s.ended && s.client.Load() != nil && l.mayPump(s) {
		if ref := s.client.Load(); s.owed.entries[s.owed.firstUnsent()].live != nil {
			l.handLive(s, ref.c)
			continue
		}
		from, next := s.owed.entries[s.owed.firstUnsent()].offset, l.log.Next()
		sh.mu.Unlock()
		got, err := l.log.ReadFrom(from, pumpRead, nil)
		sh.mu.Lock()
		if err != nil {
			l.b.storageFailed("reading the broadcast log", s.id, err)
			return
		}
		if ref := s.client.Load(); ref != nil && !s.ended {
			l.handOver(s, ref.c, from, next, got)
		}
	}
}

// handOver sends s's connection c the entries not handed over that got - a
// read of the log from offset from, made when the log's next offset was next
// - holds, in log order, while it has room. An entry of [from, next) the read
// did not find was released meanwhile: nothing is owed. An entry below from
// (handed back meanwhile) or that the read could not reach waits for the
// next read. Shard lock held; it may have been let go across the read.
func (l *backlog) handOver(s *session, c delivery.Client, from, next uint64, got []store.BroadcastEntry) {
	o := &s.owed
	now := l.b.now()
	// What the read covered: everything below next when it came back short,
	// else up to its last message.
	last := next - 1
	if len(got) == pumpRead {
		last = got[len(got)-1].Offset
	}
	j := sort.Search(len(o.entries), func(i int) bool { return o.entries[i].offset >= from })
	k := 0
	for j < len(o.entries) && o.entries[j].offset <= last {
		if o.entries[j].sent {
			j++
			continue
		}
		for k < len(got) && got[k].Offset < o.entries[j].offset {
			k++
		}
		if k == len(got) || got[k].Offset != o.entries[j].offset {
			l.drop(s, j) // released meanwhile: nothing to send
			continue
		}
		if !l.hasRoom(s, o.entries[j].size) {
			return
		}
		if o.entries[j].share != "" {
			if !l.b.sendShared(s, c, o.entries[j].share, &got[k], j) {
				continue
			}
		} else if !l.sendOne(s, c, &got[k], messageOf(&got[k].Record, now), j) {
			continue // dropped: j is now the next entry
		}
		j++
	}
}

// sendOne sends s's owed entry j, the log message e (m built from it, nil
// when its Message Expiry ran out), from s's current subscriptions: the
// highest QoS among the filters that match, every Subscription Identifier,
// RETAIN when the publisher set it and a matching filter asked for Retain As
// Published, under the packet identifier its offset gives. An entry no filter
// matches any more, or that expired, is released as though acknowledged and
// false returned. Shard lock held.
func (l *backlog) sendOne(s *session, c delivery.Client, e *store.BroadcastEntry, m *delivery.Message, j int) bool {
	d, ok := s.deliveryFor(&e.Record)
	if ok && m == nil {
		l.b.counters.DeliveriesExpired.Add(1)
	}
	if !ok || m == nil {
		l.drop(s, j)
		return false
	}
	d.Ref, d.PacketID, d.Dup = logRef(e.Offset, ""), packetIDFor(e.Offset), s.owed.entries[j].maybeSent
	if e.OwedTo != "" {
		d.Retain = true // a retained value sent at SUBSCRIBE, sent again
	}
	if o := &s.owed.entries[j]; o.released {
		d.QoS, d.PacketID, d.Released = 2, o.pid, true
	}
	s.owed.markSent(j)
	c.Deliver(m, d)           // takes its own reference,
	s.owed.entries[j].letGo() // so the entry's may go after
	return true
}

// Received implements netloop.Handler: the PUBREC goes to the engine that
// made the delivery (engine.Ack), from the connection that owns the session
// only; the PUBREL is sent once it answers true.
func (b *Broker) Received(c delivery.Client, r delivery.Ref, packetID uint16) bool {
	return b.ack(c, b.routes.byRef(r), r, engine.AckReceived, packetID)
}

// storeReceipt stores the PUBREC of s's QoS 2 delivery from the log at
// offset in its window (released, under its packet identifier) before the
// PUBREL goes, so a restart resumes the exchange with the PUBREL and never
// sends the message again; false when the store failed. Offset 0, a shared
// group's hand-off from memory, is owed by nobody. Shard lock held, let go
// across the write (storeNow).
func (b *Broker) storeReceipt(s *session, offset uint64, packetID uint16) bool {
	i := s.owed.find(offset)
	if i < 0 || s.owed.entries[i].released {
		return true
	}
	entry := []store.InFlight{{Offset: offset, PacketID: packetID, QoS: 2, Released: true, ShareGroup: s.owed.entries[i].share}}
	if err := b.storeNow(b.shard(s.id), s.id, func(*shard) error { return b.sessions.AddInFlight(s.id, entry) }); err != nil {
		if !errors.Is(err, store.ErrNotFound) { // not the session ended meanwhile
			b.storageFailed("storing a QoS 2 delivery's PUBREC", s.id, err)
		}
		return false
	}
	// What is stored holds whoever owns the session now: a connection that
	// took it over meanwhile is owed only the PUBREL.
	if i := s.owed.find(offset); i >= 0 && !s.ended {
		s.owed.entries[i].released, s.owed.entries[i].pid = true, packetID
	}
	return true
}

// deliveryFor is how a stored message goes to s now, from its current
// subscriptions; ok is false when none matches. Shard lock held.
func (s *session) deliveryFor(r *store.Record) (d delivery.Delivery, ok bool) {
	for f, sub := range s.filters {
		if sub.noLocal && r.ClientID == s.id || strings.HasPrefix(f, topic.SharePrefix) || !topic.Match(f, r.Topic) {
			continue
		}
		if !ok || sub.qos > d.QoS {
			d.QoS = sub.qos
		}
		if sub.id != 0 {
			d.SubscriptionIDs = append(d.SubscriptionIDs, sub.id)
		}
		d.Retain = d.Retain || (r.Retain && sub.retainAsPublished)
		ok = true
	}
	d.QoS = min(d.QoS, r.QoS)
	return d, ok && d.QoS > 0
}

// Acked implements netloop.Handler: the end of a delivery's exchange goes
// to the engine that made it (engine.Ack) - for broadcast the session no
// longer owes it, and its cursor is taken for writing at the next commit
// (broker.session.ack_commit_interval), off the connection's loop.
func (b *Broker) Acked(c delivery.Client, r delivery.Ref) {
	b.ack(c, b.routes.byRef(r), r, engine.AckFinished, 0)
}

// Room implements netloop.Handler: c's full window has a place again, told
// to every engine watching for it (a queue offers its worker the next job
// at once). With none plugged it is one atomic load.
func (b *Broker) Room(c delivery.Client) {
	if ws := b.routes.watchers.Load(); ws != nil {
		for _, w := range *ws {
			w.Room(c.ClientID())
		}
	}
}

// resend makes s's entry at offset one not handed over, and pumps: it was
// on a connection that no longer owns the session, which will not finish it.
// A re-send says DUP. Shard lock held.
func (l *backlog) resend(s *session, c delivery.Client, offset uint64) {
	o := &s.owed
	i := o.find(offset)
	if i < 0 || !o.entries[i].sent {
		return
	}
	o.entries[i].sent, o.entries[i].maybeSent = false, true
	o.sentBytes -= o.entries[i].size
	l.pump(s, c)
}

// cursor is s's lowest unacknowledged offset. With nothing owed it is the
// log's next: a connected session got what was written meanwhile live, and
// an away one is owed nothing before it. Shard lock held.
func (l *backlog) cursor(s *session) uint64 {
	if len(s.owed.entries) > 0 {
		return s.owed.entries[0].offset
	}
	return l.log.Next()
}

// detach forgets the window of a session whose connection ended and says
// what to store for it - the completed QoS 2 entries and the cursor - so a
// clean DISCONNECT or a stop leaves every acknowledgement stored
// (Broker.storeCursor, made by the caller). Shard lock held.
func (l *backlog) detach(s *session) (done []store.InFlightKey, cursor uint64) {
	// The connection's window is gone with it: what it held comes back
	// through the session's carry, the rest is sent again from the log.
	for i := range s.owed.entries {
		s.owed.entries[i].letGo() // an away session's wait is served from the log
		if s.owed.entries[i].sent {
			s.owed.entries[i].sent, s.owed.entries[i].maybeSent = false, true
		}
	}
	s.owed.sentBytes = 0
	if s.rare != nil {
		done = s.rare.done
		s.rare.done = nil
	}
	l.mu.Lock()
	delete(l.dirty, s)
	l.mu.Unlock()
	return done, l.cursor(s)
}

// end forgets what an ending session was owed. Shard lock held.
func (l *backlog) end(s *session) {
	for _, e := range s.owed.entries {
		e.letGo()
		l.unown(e.offset)
	}
	s.owed = owedList{}
	l.mu.Lock()
	delete(l.dirty, s)
	l.mu.Unlock()
}

// commitLoop stores moved cursors and releases unowed messages every
// ack_commit_interval until the broker closes.
func (b *Broker) commitLoop() {
	defer b.wg.Done()
	t := b.opts.Clock.NewTicker(b.opts.AckCommitInterval)
	defer t.Stop()
	var expire <-chan time.Time // nil, never ready, without expires_after
	if ea := b.opts.ShareExpiresAfter; ea > 0 {
		e := b.opts.Clock.NewTicker(shareExpiryPeriod(ea))
		defer e.Stop()
		expire = e.C()
	}
	for {
		select {
		case <-b.done:
			return
		case <-t.C():
			b.bcast.commit()
		case <-expire:
			b.expireBacklogs(b.now())
		}
	}
}

// commit is one pass of the writer: every dirty session's cursor, then the
// messages no session owes. A refused write is retried at the next pass.
func (l *backlog) commit() {
	l.mu.Lock()
	dirty := l.dirty
	l.dirty = make(map[*session]struct{})
	unowed := l.unowed
	l.unowed = nil
	l.mu.Unlock()
	l.b.saveGroupCursors()
	for s := range dirty {
		sh := l.b.shard(s.id)
		sh.mu.Lock()
		if s.ended {
			sh.mu.Unlock()
			continue
		}
		cursor := l.cursor(s)
		var done []store.InFlightKey
		if s.rare != nil {
			done = s.rare.done
			s.rare.done = nil
		}
		sh.mu.Unlock()
		if err := l.b.sessions.Ack(s.id, done, cursor); err != nil && !errors.Is(err, store.ErrNotFound) {
			l.b.storageFailed("storing a session's cursor", s.id, err)
			sh.mu.Lock()
			r := s.rarely()
			r.done = append(r.done, done...)
			sh.mu.Unlock()
			l.markDirty(s)
		}
	}
	if len(unowed) == 0 {
		return
	}
	freed, err := l.log.Release(unowed)
	if err != nil {
		l.b.storageFailed("releasing broadcast log messages", "", err)
		l.mu.Lock()
		l.unowed = append(l.unowed, unowed...)
		l.mu.Unlock()
		return
	}
	l.b.counters.LogMessages.Add(-int64(len(unowed)))
	l.b.counters.LogBytes.Add(-freed)
}

// owedRoom reports whether s is owed less than half of session_queue_bytes
// from the log, size included (or nothing): a retained pass keeps a value
// for s only then, and waits for acknowledgements otherwise.
func (l *backlog) owedRoom(s *session, size int64) bool {
	sh := l.b.shard(s.id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return s.owed.bytes == 0 || s.owed.bytes+size <= l.b.opts.SessionQueueBytes/2
}
