package latest

import (
	"time"

	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// group is a shared subscription over the channel: served changes only,
// each to one connected member in turn, never a state pass (B9.1). A change
// no member is connected to take is held while a member's session outlives
// its connection (A13.4; RFC 0002 "What a shared group is owed:
// broker.share"): one value per topic, the newest (a latest change is
// superseded by the next), at most limits.session_queue_bytes of them (the
// oldest goes), each for at most broker.share.expires_after; the first member
// back is offered them. Guarded by Engine.mu.
type group struct {
	e       *Engine
	filter  string // $share/<g>/<inner>, the key of its members' waiting values
	inner   string
	members []member
	next    int // the member the next change is offered to first

	held      map[string]heldChange // by topic
	heldOrder []string              // topics of held, oldest first
	heldBytes int64
}

// heldChange is a change held for a group with nobody to take it.
type heldChange struct {
	v  store.Value
	at time.Time // when it was held, for broker.share.expires_after
}

type member struct {
	r      *reader
	opts   delivery.SubscribeOptions
	accept func(topic string) bool
}

func (g *group) join(r *reader, opts delivery.SubscribeOptions, accept func(string) bool) {
	for i := range g.members {
		if g.members[i].r == r {
			g.members[i].opts, g.members[i].accept = opts, accept
			return
		}
	}
	g.members = append(g.members, member{r: r, opts: opts, accept: accept})
}

// has reports whether r is a member.
func (g *group) has(r *reader) bool {
	for i := range g.members {
		if g.members[i].r == r {
			return true
		}
	}
	return false
}

// leave drops r from the group, reporting whether the group is now empty.
func (g *group) leave(r *reader) bool {
	for i := range g.members {
		if g.members[i].r == r {
			g.members = append(g.members[:i], g.members[i+1:]...)
			break
		}
	}
	return len(g.members) == 0
}

// offer hands v to the next connected member whose declaration takes it. A
// change no member can take now is held when the group holds anything
// (holds), else dropped and counted (the state is in the store).
func (g *group) offer(v store.Value) {
	if !topic.Match(g.inner, v.Topic) {
		return
	}
	if g.hand(v) {
		return
	}
	if g.holds() {
		g.hold(v)
		return
	}
	g.e.counters.SharedDropped.Add(1)
}

// hand offers v to the connected members in turn, reporting whether one
// took it.
func (g *group) hand(v store.Value) bool {
	n := len(g.members)
	for k := 0; k < n; k++ {
		m := &g.members[(g.next+k)%n]
		if m.accept != nil && !m.accept(v.Topic) {
			continue
		}
		m.r.mu.Lock()
		away := m.r.away
		if !away {
			m.r.offerLocked(g.filter+"\x00"+v.Topic, v, g, m.opts)
		}
		m.r.mu.Unlock()
		if !away {
			g.next = (g.next + k + 1) % n
			return true
		}
	}
	return false
}

// holds: a member's session outlives its connection and takes QoS 1 or 2 -
// a QoS 0 change is owed to nobody, and a backlog for a group of sessions
// that all end with their connections is memory nothing would collect.
func (g *group) holds() bool {
	for i := range g.members {
		if g.members[i].r.kept && g.members[i].opts.QoS > 0 {
			return true
		}
	}
	return false
}

// hold keeps v for the group's next member: a newer change of a topic
// replaces a held one (superseded), and past session_queue_bytes the oldest
// goes (counted as the group's backlog full).
func (g *group) hold(v store.Value) {
	if g.held == nil {
		g.held = map[string]heldChange{}
	}
	size := store.RecordSize(&v.Record)
	if old, ok := g.held[v.Topic]; ok {
		g.heldBytes -= store.RecordSize(&old.v.Record)
		g.e.counters.Superseded.Add(1)
	} else {
		g.heldOrder = append(g.heldOrder, v.Topic)
	}
	g.held[v.Topic] = heldChange{v: v, at: g.e.clk.Now()}
	g.heldBytes += size
	for bound := g.e.cfg.SessionQueueBytes; bound > 0 && g.heldBytes > bound && len(g.heldOrder) > 1; {
		t := g.heldOrder[0]
		g.heldOrder = g.heldOrder[1:]
		if old, ok := g.held[t]; ok {
			g.heldBytes -= store.RecordSize(&old.v.Record)
			delete(g.held, t)
			g.e.counters.SharedBacklogFull.Add(1)
		}
	}
}

// drain offers what the group holds, oldest first, now that a member may
// take it; a change held past broker.share.expires_after is let go
// (counted), one no member can take yet stays held.
func (g *group) drain() {
	if len(g.heldOrder) == 0 {
		return
	}
	now := g.e.clk.Now()
	order := g.heldOrder
	g.heldOrder = nil
	for i, t := range order {
		h, ok := g.held[t]
		if !ok {
			continue
		}
		if exp := g.e.cfg.ShareExpiresAfter; exp > 0 && now.Sub(h.at) >= exp {
			delete(g.held, t)
			g.heldBytes -= store.RecordSize(&h.v.Record)
			g.e.counters.SharedExpired.Add(1)
			continue
		}
		if !g.hand(h.v) {
			// Nobody took it: it and everything after it stay held, in order.
			g.heldOrder = append(g.heldOrder, order[i:]...)
			return
		}
		delete(g.held, t)
		g.heldBytes -= store.RecordSize(&h.v.Record)
	}
}
