package latest

import (
	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// group is a shared subscription over the channel: served changes only,
// each to one connected member in turn, never a state pass (B9.1). Guarded
// by Engine.mu.
type group struct {
	e       *Engine
	filter  string // $share/<g>/<inner>, the key of its members' waiting values
	inner   string
	members []member
	next    int // the member the next change is offered to first
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

// offer hands v to the next connected member whose declaration takes it; a
// change no member can take now is dropped and counted (a latest change is
// superseded by the next one anyway; the state is in the store).
func (g *group) offer(v store.Value) {
	if !topic.Match(g.inner, v.Topic) {
		return
	}
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
			return
		}
	}
	g.e.counters.SharedDropped.Add(1)
}
