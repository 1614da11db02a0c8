package latest

import (
	"time"

	"github.com/saguin-edge/saguin/broker/acl"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// pageSize is how many values a state pass reads from the store at once: a
// pass over 100,000 values holds a page, never the whole state.
const pageSize = 256

// pollEvery is how soon a routine whose connection had no room looks again
// when nothing of this channel's frees a place (the window shared with
// broadcast and other channels, the outbound queue written out).
const pollEvery = 5 * time.Millisecond

// run is the reader's delivery routine for one era: the only writer of this
// channel's values to the session's connection (invariant 16). It sends what
// waits, within the client's Receive Maximum (CanTake) and half of
// session_queue_bytes, and returns when nothing is left, the session goes
// away, or another era begins.
func (r *reader) run(era uint64) {
	e := r.e
	out := e.cfg.NewBuilder()
	for {
		r.mu.Lock()
		if r.era != era {
			r.mu.Unlock()
			return
		}
		if r.c == nil {
			// A session subscribing on a new connection: the host knows it.
			// Asked with no lock of ours held (LOCKS.md).
			r.mu.Unlock()
			c := e.host.Client(r.id)
			r.mu.Lock()
			if r.era != era {
				r.mu.Unlock()
				return
			}
			if c == nil {
				r.runEra = 0
				r.mu.Unlock()
				return
			}
			if r.c == nil {
				r.c = c
			}
		}
		now := e.clk.Now()
		it, p := r.nextLocked(now)
		switch {
		case it == nil && p == nil:
			r.runEra = 0
			r.mu.Unlock()
			return
		case it == nil:
			from, deletions, match, page := p.from, p.deletions, p.match, p.buf[:0]
			r.mu.Unlock()
			// The page read before is all handed out: its slice is reused.
			vs, err := e.st.Changes(from, deletions, match, pageSize, page)
			r.mu.Lock()
			if r.era != era {
				r.mu.Unlock()
				return
			}
			if err != nil {
				e.counters.StorageError.Add(1)
				e.log.Error("latest channel: reading the state for a subscriber", "client_id", r.id, "error", err)
				r.mu.Unlock()
				r.sleep()
				continue
			}
			p.fill(vs)
			r.mu.Unlock()
			continue
		}
		// The acl_file is asked with no lock of ours held: Host.Allows takes
		// the session's shard lock, and a broker call holding that lock
		// takes reader.mu (LOCKS.md). The value is looked at again after.
		key, off, t := it.key, it.v.Offset, it.v.Topic
		r.mu.Unlock()
		allowed := e.host.Allows(r.id, t, acl.Read)
		r.mu.Lock()
		if r.era != era {
			r.mu.Unlock()
			return
		}
		if it, p = r.nextLocked(now); it == nil || it.key != key || it.v.Offset != off {
			r.mu.Unlock() // superseded or taken meanwhile: choose again
			continue
		}
		switch r.sendLocked(out, it, p, now, allowed) {
		case sent:
			r.mu.Unlock()
		case full:
			r.mu.Unlock()
			r.sleep()
		case tooLarge:
			c := r.c
			r.runEra = 0
			r.mu.Unlock()
			c.Kick(codec.PacketTooLarge)
			return
		}
	}
}

// sleep waits for a poke (an acknowledgement, a new value, the session's
// end) or pollEvery on the host's clock.
func (r *reader) sleep() {
	t := r.e.clk.AfterFunc(pollEvery, r.poke)
	<-r.wake
	t.Stop()
}

type outcome uint8

const (
	sent outcome = iota
	full
	tooLarge
)

// nextLocked is the next value to send: the oldest waiting change first,
// then the state passes in order. it nil with p set: p needs its next page
// read. Values past their period are let go here, unsent (B3.9). r.mu held.
func (r *reader) nextLocked(now time.Time) (*item, *pass) {
	for len(r.order) > 0 {
		it := r.pending[r.order[0]]
		if it == nil {
			r.order = r.order[1:]
			continue
		}
		if r.e.expired(&it.v, now) {
			r.e.counters.Expired.Add(1)
			r.popLocked(it, nil)
			continue
		}
		return it, nil
	}
	for len(r.passes) > 0 {
		p := r.passes[0]
		for p.at < len(p.buf) {
			v := &p.buf[p.at]
			if r.e.expired(v, now) {
				p.at++
				continue
			}
			s := r.sent[v.Topic]
			if s.off > v.Offset || (s.off == v.Offset && s.gen == p.gen) {
				p.at++ // handed out already in this pass's time, or newer (B4.3)
				continue
			}
			if w := r.pending[v.Topic]; w != nil && w.v.Offset >= v.Offset {
				p.at++ // a change as new waits to go
				continue
			}
			r.passItem = item{key: v.Topic, v: *v, pass: true}
			return &r.passItem, p
		}
		if !p.done {
			return nil, p
		}
		r.passes = r.passes[1:]
	}
	return nil, nil
}

// fill takes the page read at p.from, keeping the values below upto.
func (p *pass) fill(vs []store.Value) {
	if len(vs) < pageSize {
		p.done = true
	}
	if len(vs) > 0 {
		p.from = vs[len(vs)-1].Offset + 1
	}
	p.at = 0
	for i := range vs {
		if vs[i].Offset >= p.upto {
			p.done = true
			vs = vs[:i]
			break
		}
	}
	p.buf = vs
}

// popLocked takes a sent (or let go) item off its list.
func (r *reader) popLocked(it *item, p *pass) {
	if p != nil {
		p.at++
		return
	}
	delete(r.pending, it.key)
	r.order = r.order[1:]
}

// optionsLocked are the QoS, Retain As Published and Subscription
// Identifiers of the plain subscriptions matching t: delivered once, at the
// highest QoS granted, with every identifier (A2.8, E2). ok false: none
// matches any more (unsubscribed while it waited).
func (r *reader) optionsLocked(t string) (qos uint8, rap, label bool, ids []uint32, ok bool) {
	for _, s := range r.subs {
		if !s.matches(t) {
			continue
		}
		ok = true
		label = label || s.label
		qos = max(qos, s.opts.QoS)
		rap = rap || s.opts.RetainAsPublished
		if s.opts.SubscriptionID != 0 {
			ids = append(ids, s.opts.SubscriptionID)
		}
	}
	return qos, rap, label, ids, ok
}

// missLocked records a value the subscriber could not be sent (B5.4): the
// lowest such offset holds every resume below it until a new SUBSCRIBE.
func (r *reader) missLocked(it *item, why string) {
	if r.missed == 0 || it.v.Offset < r.missed {
		r.missed = it.v.Offset
	}
	r.e.counters.Undelivered.Add(1)
	r.e.log.Warn("latest value not delivered", "client_id", r.id, "topic", it.v.Topic, "offset", it.v.Offset, "why", why)
}

// sendLocked writes one value to the connection, if it has room. r.mu held.
func (r *reader) sendLocked(out Builder, it *item, p *pass, now time.Time, allowed bool) outcome {
	e, c := r.e, r.c
	var qos uint8
	var rap, label bool
	var ids []uint32
	if it.group != nil {
		qos, rap = it.gopts.QoS, it.gopts.RetainAsPublished
		if it.gopts.SubscriptionID != 0 {
			ids = []uint32{it.gopts.SubscriptionID}
		}
	} else {
		var ok bool
		if qos, rap, label, ids, ok = r.optionsLocked(it.v.Topic); !ok {
			r.popLocked(it, p)
			return sent
		}
	}
	if !allowed {
		// Not a delivery (invariant 16): held below the mark, so a resume
		// sends it again once the grant is back (B5.4), and logged.
		r.missLocked(it, "the acl_file grants this client no read on the topic")
		r.popLocked(it, p)
		return sent
	}
	name := ""
	if label {
		name = e.cfg.Name
	}
	pub := out.Build(&it.v.Record, c.Version(), qos, rap && !it.pass, name, now)
	if it.pass {
		pub.Retain = true // catch-up is always flagged, Retain As Published or not (B3.2)
	}
	// The labels are the broker's own: kept (NewLabelledMessage).
	m := delivery.NewLabelledMessage(pub, func() time.Time { return now })
	d := delivery.Delivery{QoS: qos, Retain: pub.Retain, SubscriptionIDs: ids,
		Ref: delivery.Ref{Kind: delivery.KindLatest, N: it.v.Offset, Name: e.cfg.Name}}
	size := int64(m.Bytes())
	if qos > 0 && len(r.inflight) > 0 && r.inflightBytes+size > e.cfg.SessionQueueBytes/2 && e.cfg.SessionQueueBytes > 0 {
		return full
	}
	if !c.Fits(m, d) {
		// Sized at the QoS it goes at, packet identifier counted: a value
		// 1 or 2 bytes over the bound that would fit at QoS 0 is still too
		// large, never left waiting for a window that cannot help. Never
		// skipped: recorded undelivered, holding the mark below it, and the
		// subscriber disconnected (notes-0003 "When a record is too large
		// for a subscriber"; B4.7).
		r.missLocked(it, "larger than the subscriber's Maximum Packet Size")
		r.popLocked(it, p)
		return tooLarge
	}
	if !c.CanTake(m, d) || !c.Deliver(m, d) {
		return full
	}
	e.counters.Delivered.Add(1)
	gen := r.gen
	if p != nil {
		gen = p.gen
	}
	r.sent[it.key] = sentAt{off: it.v.Offset, gen: gen}
	if qos > 0 {
		if _, dup := r.inflight[it.v.Offset]; !dup {
			r.inflight[it.v.Offset] = size
			r.inflightBytes += size
		}
	}
	r.popLocked(it, p)
	return sent
}
