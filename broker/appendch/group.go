package appendch

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/saguin-edge/saguin/broker/channel"
	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// group is a shared subscription over the channel (RFC 0002 "Shared
// subscriptions", A13): served only records written after it began, each to
// one member that can take it now, members taking turns in client-id order.
// It holds no position and never moves one.
type group struct {
	inner string
	mu    sync.Mutex
	// members sorted by client id.
	members []member
	turn    int
}

type member struct {
	id     string
	opts   delivery.SubscribeOptions
	client delivery.Client
}

// joinGroup adds s to the group of f.Filter. The connection is the one
// Resume recorded for s.
func (e *Engine) joinGroup(s engine.Session, f engine.Filter) {
	e.mu.Lock()
	defer e.mu.Unlock()
	g := e.groups[f.Filter]
	if g == nil {
		g = &group{inner: f.Inner}
		e.groups[f.Filter] = g
	}
	cl := e.clients[s.ClientID()]
	if c := e.consumers[s.ClientID()]; c != nil {
		c.mu.Lock()
		cl = c.client
		c.mu.Unlock()
	}
	opts := f.Options
	opts.User = nil // aliases the SUBSCRIBE's read buffer
	g.mu.Lock()
	defer g.mu.Unlock()
	i, found := slices.BinarySearchFunc(g.members, s.ClientID(), func(m member, id string) int { return strings.Compare(m.id, id) })
	if found {
		g.members[i].opts = opts
		return
	}
	g.members = slices.Insert(g.members, i, member{id: s.ClientID(), opts: opts, client: cl})
}

func (g *group) attach(id string, cl delivery.Client) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := range g.members {
		if g.members[i].id == id {
			g.members[i].client = cl
		}
	}
}

func (g *group) leave(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.members = slices.DeleteFunc(g.members, func(m member) bool { return m.id == id })
}

func (g *group) empty() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.members) == 0
}

// offer hands a new record to the next member that can take it: connected,
// room in its window, within its Maximum Packet Size (one it does not fit is
// passed over, A13.3). None can: it is dropped for this group, counted.
func (g *group) offer(e *Engine, r *store.Record) {
	if !topic.Match(g.inner, r.Topic) {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(g.members)
	now := e.clk.Now()
	var out channel.Out
	for k := 0; k < n; k++ {
		i := (g.turn + k) % n
		mb := g.members[i]
		if mb.client == nil {
			continue
		}
		qos := min(mb.opts.QoS, 2)
		p := out.Build(r, channel.Label{Version: mb.client.Version(), QoS: qos}, now)
		m := delivery.NewLabelledMessage(p, func() time.Time { return now })
		d := delivery.Delivery{QoS: qos}
		if mb.opts.SubscriptionID != 0 {
			d.SubscriptionIDs = []uint32{mb.opts.SubscriptionID}
		}
		if !mb.client.CanTake(m, d) || !mb.client.Deliver(m, d) {
			continue
		}
		e.Counters.Delivered.Add(1)
		g.turn = i + 1
		return
	}
	e.Counters.SharedDropped.Add(1)
}
