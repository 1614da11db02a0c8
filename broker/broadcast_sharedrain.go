package broker

import (
	"sync/atomic"

	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// A shared group's backlog forms while no member can take a message - every
// connected member's window full - as well as while all are away. It drains
// as soon as one can take again: a member's acknowledgement gives a window
// place back (Acked), and the backlog's head goes to the next member in the
// group's client-id rotation that can take it now, one message per turn,
// until it is empty or nobody can (RFC 0002 "Shared subscriptions").
//
// One goroutine, the drainer, does it for every group: it reads the log and
// takes each member's shard lock in turn, neither of which an
// acknowledgement may do on a connection's loop while holding its own
// session's lock. Broker.Close waits for it.
//
// A message published while the group holds a backlog joins its back
// (shareDeliver), and the head is popped and queued on the member's
// connection under the shares lock, which a publish handing a message to a
// member from memory holds too: nothing published later reaches a member
// ahead of the backlog (notes-0003 "Ordering", MQTT-4.6.0-6).

// memberMayTake queues for the drainer every group of s that holds a
// backlog: s acknowledged a delivery, so it may have room. Shard lock of s
// held.
func (b *Broker) memberMayTake(s *session) {
	b.shares.mu.Lock()
	defer b.shares.mu.Unlock()
	for _, g := range s.rareOrNone().groups {
		if len(g.standIn.owed.entries) > 0 {
			b.queueDrain(g)
		}
	}
}

// queueDrain puts g in the drainer's list once and wakes it, never waiting.
// Shares lock held.
func (b *Broker) queueDrain(g *shareGroup) {
	if !g.queued {
		g.queued = true
		b.shares.pending = append(b.shares.pending, g)
	}
	select {
	case b.shares.wake <- struct{}{}:
	default: // already woken: it takes the whole list
	}
}

// shareDrainLoop is the drainer: it drains each queued group until the
// broker closes.
func (b *Broker) shareDrainLoop() {
	defer b.wg.Done()
	for {
		select {
		case <-b.done:
			return
		case <-b.shares.wake:
		}
		b.shares.mu.Lock()
		groups := b.shares.pending
		b.shares.pending = nil
		for _, g := range groups {
			g.queued = false
		}
		b.shares.mu.Unlock()
		for _, g := range groups {
			b.drainGroup(g)
		}
	}
}

// closing reports whether Close has begun: the drainer stops between two
// messages, and what it has not handed stays in the backlog.
func (b *Broker) closing() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// drainGroup hands g's backlog, head first, to the members that can take it
// now, until it is empty or none can. No lock held.
func (b *Broker) drainGroup(g *shareGroup) {
	for !b.closing() {
		head, members, ok := b.backlogHead(g)
		if !ok {
			return
		}
		got, err := b.bcast.log.ReadFrom(head.offset, 1, nil)
		if err != nil {
			b.storageFailed("reading a shared group's backlog", g.key, err)
			return
		}
		if len(got) == 0 || got[0].Offset != head.offset {
			b.dropHead(g, head, nil) // released meanwhile: nothing to hand
			continue
		}
		now := b.now()
		if ea := b.opts.ShareExpiresAfter; ea > 0 && now.Sub(got[0].Time) >= ea {
			b.dropHead(g, head, &b.counters.SharesDroppedExpired) // held past broker.share.expires_after
			continue
		}
		m := messageOf(&got[0].Record, now)
		if m == nil {
			b.dropHead(g, head, &b.counters.DeliveriesExpired)
			continue
		}
		if !b.handHead(g, head, &got[0], m, members) {
			return
		}
	}
}

// backlogHead is g's oldest held delivery and its members in turn order,
// the one after the member served last first; ok is false when there is
// nothing to drain.
func (b *Broker) backlogHead(g *shareGroup) (head owedEntry, members []*session, ok bool) {
	b.shares.mu.Lock()
	defer b.shares.mu.Unlock()
	if g.standIn.ended || len(g.standIn.owed.entries) == 0 {
		return owedEntry{}, nil, false
	}
	n := len(g.members)
	start := 0
	for start < n && g.members[start].id <= g.last {
		start++
	}
	members = make([]*session, 0, n)
	for k := range n {
		members = append(members, g.members[(start+k)%n])
	}
	return g.standIn.owed.entries[0], members, true
}

// dropHead takes head out of g's backlog when it is still there, counted in
// n when not nil; a returned one's row goes with it.
func (b *Broker) dropHead(g *shareGroup, head owedEntry, n *atomic.Uint64) {
	b.shares.mu.Lock()
	j := g.standIn.owed.find(head.offset)
	if j >= 0 {
		b.bcast.drop(g.standIn, j)
		if n != nil {
			n.Add(1)
		}
	}
	b.shares.mu.Unlock()
	if j >= 0 && head.returned {
		b.takeReturned(g.key, head.offset)
	}
}

// handHead gives the backlog's head, the log's e built as m, to the first of
// members that can take it now; false when none can, or the head changed
// under it (another drain took it: the caller looks again).
func (b *Broker) handHead(g *shareGroup, head owedEntry, e *store.BroadcastEntry, m *delivery.Message, members []*session) bool {
	for _, s := range members {
		if s.client.Load() == nil {
			continue // away: not handed the group's share to hold
		}
		sh := b.shard(s.id)
		sh.mu.Lock()
		handed, stale := b.handHeadTo(g, s, head, e, m)
		sh.mu.Unlock()
		if handed || stale {
			return true
		}
	}
	return false
}

// handHeadTo moves the backlog's head into s's list and onto its
// connection, when s can take it now: connected, nothing of its own waiting
// to go before it, room in what it may hold on the wire (half of
// limits.session_queue_bytes) and in its Receive Maximum window, and within
// its Maximum Packet Size (delivery.Client.CanTake). It becomes s's to finish, as a
// resume's drain makes it. stale reports that the head is no longer head.
// Shard lock of s held.
func (b *Broker) handHeadTo(g *shareGroup, s *session, head owedEntry, e *store.BroadcastEntry, m *delivery.Message) (handed, stale bool) {
	ref := s.client.Load()
	if ref == nil || s.ended || s.owed.firstUnsent() >= 0 || !b.bcast.hasRoom(s, head.size) {
		return false, false
	}
	b.shares.mu.Lock()
	o := &g.standIn.owed
	if g.standIn.ended || len(o.entries) == 0 || o.entries[0].offset != head.offset {
		b.shares.mu.Unlock()
		return false, true
	}
	sub, in := g.subs[s]
	if !in {
		b.shares.mu.Unlock()
		return false, false
	}
	d := delivery.Delivery{QoS: min(e.QoS, sub.qos), Retain: e.Retain && sub.retainAsPublished, Ref: logRef(e.Offset, g.key),
		PacketID: packetIDFor(e.Offset), Dup: head.returned || head.maybeSent}
	if sub.id != 0 {
		d.SubscriptionIDs = []uint32{sub.id}
	}
	if !ref.c.CanTake(m, d) {
		b.shares.mu.Unlock()
		return false, false // passed over, not disconnected
	}
	// It changes hands: the log's hold on it stays, now s's.
	o.bytes -= o.entries[0].size
	copy(o.entries, o.entries[1:])
	o.entries[len(o.entries)-1] = owedEntry{}
	o.entries = o.entries[:len(o.entries)-1]
	g.last = s.id
	// Counted before it is handed: a member that has read it finds it
	// counted (saguin_shares_drained_total).
	b.counters.SharesDrained.Add(1)
	j := b.bcast.owe(s, head.offset, head.size)
	if j >= 0 {
		s.owed.entries[j].share = g.key
		s.owed.entries[j].maybeSent = d.Dup
		s.owed.markSent(j)
		ref.c.Deliver(m, d) // under the shares lock: no later publish goes first
	}
	b.shares.mu.Unlock()
	b.bcast.markDirty(s)
	var taken []uint64
	if head.returned {
		taken = []uint64{head.offset}
	}
	var window []store.InFlight
	if j >= 0 && s.expiry > 0 {
		// As a resume's drain: the member's window says the group handed it
		// this, so a restart owes it to the member rather than to nobody.
		window = []store.InFlight{{Offset: e.Offset, PacketID: d.PacketID, QoS: e.QoS, ShareGroup: g.key}}
	}
	b.storeHandOver(s, g, taken, window)
	return true, false
}
