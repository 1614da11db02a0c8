package appendch

import (
	"sync"
	"time"

	"github.com/saguin-edge/saguin/broker/channel"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// builds makes the messages one sender delivers a record as: one pooled
// message per label, shared by every consumer the sender hands the record to
// under that label (each connection takes its own reference to what it
// queues), given back when the sender moves to another record or is done.
// A consumer's goroutine builds for itself alone; a live hand-over builds
// once for every consumer at the record, as a broadcast fan-out does.
type builds struct {
	out    channel.Out
	now    time.Time
	nowf   func() time.Time // b.now, bound once so a build allocates nothing
	offset uint64
	made   []built
}

type built struct {
	l channel.Label
	m *delivery.Message
}

// message is r labelled l; b keeps the reference until release.
func (b *builds) message(r *store.Record, l channel.Label) *delivery.Message {
	if len(b.made) > 0 && b.offset != r.Offset {
		b.release()
	}
	b.offset = r.Offset
	for i := range b.made {
		if b.made[i].l == l {
			return b.made[i].m
		}
	}
	if b.nowf == nil {
		b.nowf = func() time.Time { return b.now }
	}
	m := delivery.AcquireLabelledMessage(b.out.Build(r, l, b.now), b.nowf)
	b.made = append(b.made, built{l: l, m: m})
	return m
}

// release gives back every message b holds.
func (b *builds) release() {
	for i := range b.made {
		b.made[i].m.Release()
		b.made[i] = built{}
	}
	b.made = b.made[:0]
}

// handOver is a live hand-over: records just stored, in offset order, are
// handed by the storing call itself to every consumer that is at them and
// whose connection has room - a consumer caught up with the channel, the
// common case of a live fan-out - as a broadcast publish hands its message to
// its subscribers. Deliver only queues on the consumer's connection and
// never blocks, and its own loop writes the socket under write_timeout, so
// the publisher still waits on nothing another client does (invariant 16).
// Every other consumer - behind, its window full, refused, moved - is woken
// and its own goroutine serves it from its position as before. Waking a
// hundred goroutines per record for what each then built alone cost a live
// fan-out about a third more CPU than broadcast's and tens of milliseconds
// of delivery latency on a loaded machine (docs/performance.md).
func (e *Engine) handOver(rs []store.Record) {
	cs := e.readers()
	if len(cs) == 0 {
		return
	}
	h := handOvers.Get().(*handOverState)
	h.b.now = e.clk.Now()
	h.behind = h.behind[:0]
	for i := range rs {
		for _, c := range cs {
			switch e.offer(c, &rs[i], nil, &h.b, &h.ids) {
			case handedOver, handedAlready, handedIdle:
				// Idle: a Resume, a SUBSCRIBE or a seek's reply
				// wakes it when it is served again.
			default:
				h.behind = append(h.behind, c)
			}
		}
	}
	h.b.release()
	// Woken after the messages are given back: the goroutine reads from
	// its position, which may be below what was handed over here.
	for _, c := range h.behind {
		c.poke()
	}
	clear(h.behind)
	handOvers.Put(h)
}

// handOverState is one hand-over's working memory, pooled: publishers on
// several loops hand over at once.
type handOverState struct {
	b      builds
	ids    []uint32
	behind []*consumer
}

var handOvers = sync.Pool{New: func() any { return new(handOverState) }}

// readers is every consumer, a copy made again only after one was added or
// removed: a hand-over walks it with no lock of the engine's held, so an
// acknowledgement's lookup (e.mu) never waits for a fan-out. A consumer made
// while a hand-over runs is missed by it and served by its own goroutine,
// which its SUBSCRIBE or seek wakes.
func (e *Engine) readers() []*consumer {
	if p := e.live.Load(); p != nil && !e.liveStale.Load() {
		return *p
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	cs := make([]*consumer, 0, len(e.consumers))
	for _, c := range e.consumers {
		cs = append(cs, c)
	}
	e.liveStale.Store(false)
	e.live.Store(&cs)
	return cs
}
