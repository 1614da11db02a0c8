package broker

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// The retained values a SUBSCRIBE reaches are served the way a latest
// channel's state pass is (RFC 0002 "Retained messages on a broadcast
// topic"): read from the store a page at a time and handed to the
// connection only while it has room - within its Receive Maximum and its
// outbound queue's bound (delivery.Client.CanTake), and for a session that
// outlives its connection within half of session_queue_bytes of the
// broadcast log it is owed - so every value arrives, none is shed at the
// session's bound, and a subscriber holds one page of the store however
// many values its filter reaches. The publishers and other subscribers wait
// on none of it: the pass runs on a goroutine of its own.

// retainedPage is how many values a pass reads from the store at once.
const retainedPage = 256

// retainedInFlight bounds a pass's unacknowledged bytes below half of
// session_queue_bytes: what a pass keeps ahead of the socket is what the
// connection's loop writes in one batch, so keeping it short keeps other
// clients' packets from waiting behind a storm of wide subscriptions.
const retainedInFlight = 64 << 10

// retainedPoll is how soon a pass whose connection had no room looks again
// when nothing wakes it sooner (an acknowledgement from the session does).
const retainedPoll = 5 * time.Millisecond

// retainedPass is one SUBSCRIBE's walk of the retained store.
type retainedPass struct {
	filter string
	sub    subscription
	match  func(topic string) bool // the filter and its saguin-filter slice
	// since is where the next page is read from; values at or above upto
	// were set after the SUBSCRIBE and reach the subscriber live.
	since, upto uint64
	buf         []store.Record
	at          int
}

// retainedSender serves a session's passes for one connection, in SUBSCRIBE
// order, on one goroutine. It ends with the connection: a session taken
// over, resumed or ended is not sent the rest on that connection's behalf.
type retainedSender struct {
	b    *Broker
	s    *session
	c    delivery.Client
	wake chan struct{}

	// inflight is the bytes of the pass's QoS 1 and 2 deliveries from
	// memory not yet acknowledged: at most half of session_queue_bytes, as
	// a latest reader's, and at most retainedInFlight, so a client with a
	// wide Receive Maximum holds the pass's memory to that, not to 65,535
	// messages.
	inflight atomic.Int64

	mu      sync.Mutex
	passes  []*retainedPass
	running bool
}

// acked gives back the room of an acknowledged delivery of the pass's. One
// carried over from an earlier connection's pass may be acknowledged on this
// one: the count does not go below nothing.
func (rs *retainedSender) acked(size int64) {
	if rs.inflight.Add(-size) < 0 {
		rs.inflight.Store(0)
	}
}

// sendRetained starts the pass of filter's retained values for s on c,
// after the SUBACK; No Local, the subscription's QoS, identifier and
// saguin-filter slice apply as to a live message. Called with no lock held.
func (b *Broker) sendRetained(c delivery.Client, s *session, filter string, sub subscription) {
	p := &retainedPass{filter: filter, sub: sub, since: 1, upto: b.retained.Next()}
	p.match = func(t string) bool { return topic.Match(filter, t) && (sub.part == nil || sub.part.Accepts(t)) }
	rs := s.retained.Load()
	if rs == nil || rs.c != c {
		rs = &retainedSender{b: b, s: s, c: c, wake: make(chan struct{}, 1)}
		s.retained.Store(rs)
	}
	rs.mu.Lock()
	rs.passes = append(rs.passes, p)
	start := !rs.running
	rs.running = true
	rs.mu.Unlock()
	switch {
	case !start:
		rs.poke()
	case rs.serve(retainedPage, false):
		// The first page went out here, as a small retained set goes out
		// whole; the rest waits for room on the sender's own goroutine,
		// never on the caller's (the connection's loop).
		go rs.serve(0, true)
	}
}

// poke wakes the sender if it waits for room.
func (rs *retainedSender) poke() {
	select {
	case rs.wake <- struct{}{}:
	default:
	}
}

// sleep waits for a poke or retainedPoll on the broker's clock.
func (rs *retainedSender) sleep() {
	t := rs.b.opts.Clock.AfterFunc(retainedPoll, rs.poke)
	<-rs.wake
	t.Stop()
}

// next is the pass to serve, nil when none is left (the sender stops).
func (rs *retainedSender) next() *retainedPass {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.passes) == 0 || !rs.s.ownedBy(rs.c) {
		rs.passes, rs.running = nil, false
		return nil
	}
	return rs.passes[0]
}

func (rs *retainedSender) done() {
	rs.mu.Lock()
	rs.passes = rs.passes[1:]
	rs.mu.Unlock()
}

// serve sends until no pass is left (false), or - budget above 0 - until
// budget values were sent (true), or - wait false - until the connection
// has no room (true). Waiting, it sleeps until there may be room.
func (rs *retainedSender) serve(budget int, wait bool) bool {
	b := rs.b
	for n := 0; ; {
		p := rs.next()
		if p == nil {
			return false
		}
		if p.at == len(p.buf) {
			if p.since >= p.upto {
				rs.done()
				continue
			}
			page, next, err := b.retained.Page(p.since, p.match, retainedPage, p.buf[:0])
			if err != nil {
				b.counters.retainedStorageError()
				b.log.Error("retained store failed", "client_id", rs.c.ClientID(), "filter", p.filter, "error", err)
				rs.done()
				continue
			}
			p.buf, p.at, p.since = page, 0, next
			continue
		}
		r := &p.buf[p.at]
		if r.Offset >= p.upto {
			p.at, p.since = len(p.buf), p.upto // set after the SUBSCRIBE: it went live
			continue
		}
		switch {
		case rs.send(p, r):
			p.at++
			if n++; budget > 0 && n >= budget {
				return true
			}
		case !wait:
			return true
		default:
			rs.sleep()
		}
	}
}

// send hands r to the connection, or reports false when it has no room for
// it now. A value past its Message Expiry is deleted instead; one over the
// client's Maximum Packet Size is not sent to it (a broadcast is dropped
// for that subscriber only: notes-0003 "When a record is too large").
func (rs *retainedSender) send(p *retainedPass, r *store.Record) bool {
	b, c, s := rs.b, rs.c, rs.s
	if p.sub.noLocal && r.ClientID == c.ClientID() {
		return true // No Local holds for a retained value too (RFC 0003 "No Local")
	}
	m := messageOf(r, b.now())
	if m == nil {
		if _, err := b.retained.Delete(r.Topic); err != nil {
			b.counters.retainedStorageError()
		}
		return true
	}
	d := delivery.Delivery{QoS: min(r.QoS, p.sub.qos), Retain: true}
	if p.sub.id != 0 {
		d.SubscriptionIDs = []uint32{p.sub.id}
	}
	if !c.Fits(m, d) {
		b.log.Debug("retained value larger than the subscriber's Maximum Packet Size: not sent to it", "client_id", c.ClientID(), "topic", r.Topic)
		return true
	}
	if d.QoS > 0 && s.expiry > 0 {
		// Kept in the broadcast log for this session (keepFor) while it is
		// owed less than half its bound; beyond that the pass waits for
		// acknowledgements rather than have the bound shed what it owes.
		if !b.bcast.owedRoom(s, int64(m.Bytes())) {
			return false
		}
		if b.bcast.keepFor(s, c, r, m, d) {
			return true
		}
	}
	size := int64(m.Bytes())
	if d.QoS > 0 {
		if held := rs.inflight.Load(); held > 0 && held+size > min(b.opts.SessionQueueBytes/2, retainedInFlight) {
			return false
		}
		// Reported back so that its acknowledgement gives the room back
		// and wakes the pass (broadcastEngine.Ack).
		d.Ref = passRef(size)
	}
	if !c.CanTake(m, d) {
		return false
	}
	if d.QoS > 0 {
		rs.inflight.Add(size) // before Deliver: its acknowledgement may come first
	}
	if !c.Deliver(m, d) {
		if d.QoS > 0 {
			rs.acked(size)
		}
		return false
	}
	return true
}
