package appendch

import (
	"errors"
	"sync"
	"time"

	"github.com/saguin-edge/saguin/broker/acl"
	"github.com/saguin-edge/saguin/broker/channel"
	"github.com/saguin-edge/saguin/broker/ledger"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// consumer is one client id reading this channel: its subscriptions here,
// the connection serving it, and its two numbers (RFC 0003 "What a
// reconnecting consumer receives"): next, the lowest offset not yet
// delivered, and the position, the lowest not yet acknowledged.
type consumer struct {
	id string

	// wake is poked (never blocking) when something may be sent: a record
	// published, an acknowledgement, a resume. quit ends the goroutine.
	wake chan struct{}
	quit chan struct{}

	// mu guards what follows; taken inside Engine.mu, never around it.
	mu      sync.Mutex
	running bool // the delivery goroutine was started
	stopped bool // quit is closed
	paused  bool // a seek's reply is not written yet
	// arriving: a SUBSCRIBE's filters are being recorded; none is served
	// until the last is (A4.6), so a record of a later filter is never
	// stepped over as matching nothing.
	arriving bool
	kept     bool
	subs     map[string]sub
	client   delivery.Client
	started  bool // holds a place on the channel (a position or a start)
	ended    bool
	era      uint32
	next     uint64
	// inflight are the QoS 1/2 deliveries of this era not yet finished, in
	// offset order; their bytes are bounded by Options.InFlightBytes.
	inflight      []flight
	inflightBytes int64
	// dirty: the position moved since it was last taken for writing.
	dirty bool
}

type flight struct {
	offset uint64
	bytes  int64
}

func newConsumer(id string) *consumer {
	return &consumer{id: id, wake: make(chan struct{}, 1), quit: make(chan struct{}), subs: map[string]sub{}}
}

// position is the lowest offset not yet acknowledged: what is stored.
func (c *consumer) position() uint64 {
	if len(c.inflight) > 0 {
		return c.inflight[0].offset
	}
	return c.next
}

func (c *consumer) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *consumer) stop() {
	c.mu.Lock()
	if !c.stopped {
		c.stopped = true
		close(c.quit)
	}
	c.mu.Unlock()
}

// start places a consumer that had no place on the channel (A4): its stored
// position when its session is kept and holds one - below the floor it
// restarts at the floor, counted and logged (A5.6) - otherwise the floor, or
// the next offset on start: tail or with Retain Handling 2 (A4.10). Retain
// Handling 2 over a stored position commits the head (A4.11). c.mu held.
func (c *consumer) start(e *Engine, retainHandling byte, restoring bool) {
	head := retainHandling == 2 && !restoring
	if c.kept {
		pos, ok, err := e.store.Position(store.ReaderMQTT(c.id))
		switch {
		case err != nil:
			e.Counters.StorageErrors.Add(1)
			e.log.Error("reading a consumer's position; serving from its start", "client_id", c.id, "error", err)
		case ok && head:
			c.moveTo(e.store.Next())
			return
		case ok:
			// A position below the floor is kept as it is while a broker
			// start restores it: the session's next CONNECT is what finds it
			// passed (Passed) and answers Session Present 0 (A5.2). Read
			// by a session already connected, it restarts at the floor.
			if floor := e.store.Floor(); pos.Offset < floor && !restoring {
				e.positionLost(c.id, pos.Offset, floor)
				c.moveTo(floor)
				return
			}
			c.next = pos.Offset
			return
		}
	}
	switch {
	case head || e.o.Tail:
		c.next = e.store.Next()
	default:
		c.next = e.store.Floor()
	}
	c.dirty = c.kept
}

// moveTo puts the consumer at offset under a new era: everything outstanding
// is forgotten, and an acknowledgement of it changes nothing. c.mu held.
func (c *consumer) moveTo(offset uint64) {
	c.era++
	c.next = offset
	c.inflight, c.inflightBytes = c.inflight[:0], 0
	c.dirty = true
}

// acked finishes the in-flight delivery of offset. c.mu held.
func (c *consumer) acked(offset uint64) {
	for i, f := range c.inflight {
		if f.offset == offset {
			c.inflightBytes -= f.bytes
			c.inflight = append(c.inflight[:i], c.inflight[i+1:]...)
			c.dirty = true
			return
		}
	}
}

// positionLost reports a reader the floor overtook while it was connected
// and reading (A5.6, A5.7): MQTT has no way to tell it, so its row on
// /v1/operations/position-lost is a consumer's, unreported.
func (e *Engine) positionLost(clientID string, position, floor uint64) {
	e.Counters.PositionLost.Add(1)
	if f := e.o.OnPositionLost; f != nil {
		f(store.ReaderMQTT(clientID), ledger.KindConsumer, false, position, floor)
	}
	e.log.Warn("a consumer's position was passed by retention; it restarts at the floor",
		"client_id", clientID, "position", position, "floor", floor, "records_missed", floor-position)
}

// positionLostAtConnect reports a session discarded at its CONNECT because
// retention passed its position here (A5.2, A5.7: told the client as
// Session Present 0).
func (e *Engine) positionLostAtConnect(clientID string, position, floor uint64) {
	e.Counters.PositionLost.Add(1)
	if f := e.o.OnPositionLost; f != nil {
		f(store.ReaderMQTT(clientID), ledger.KindSession, true, position, floor)
	}
	e.log.Warn("a session's position was passed by retention; its CONNECT is answered Session Present 0 and it starts where a reader with no position does",
		"client_id", clientID, "position", position, "floor", floor, "records_missed", floor-position)
}

// readBatch is how many records a consumer's goroutine reads at once.
const readBatch = 64

// retryAfter is how soon a consumer blocked by something that sends it no
// wake (its outbound queue full, another engine's deliveries filling its
// window, a failed read) looks again.
const retryAfter = 20 * time.Millisecond

// serve is c's delivery goroutine: the only writer of c's records, in offset
// order, each only when the connection can take it (Receive Maximum, the
// in-flight byte bound, its outbound queue) - a record waits at its position,
// never dropped (A2.16).
func (e *Engine) serve(c *consumer) {
	defer func() {
		c.mu.Lock()
		c.running = false
		c.mu.Unlock()
	}()
	var b builds
	var ids []uint32
	buf := make([]store.Record, 0, readBatch)
	for {
		select {
		case <-c.quit:
			return
		case <-c.wake:
		}
		for {
			more, blocked := e.serveOnce(c, &b, &ids, &buf)
			if blocked {
				e.clk.AfterFunc(retryAfter, c.poke)
			}
			if !more {
				break
			}
		}
	}
}

// serveOnce reads one batch from c's next offset and sends what can go now.
// more: a full batch went, read again; blocked: stopped short with nothing
// sure to wake it.
func (e *Engine) serveOnce(c *consumer, b *builds, ids *[]uint32, buf *[]store.Record) (more, blocked bool) {
	c.mu.Lock()
	cl, from, era := c.client, c.next, c.era
	idle := cl == nil || len(c.subs) == 0 || c.ended || c.paused || c.arriving || (e.o.InFlightBytes > 0 && c.inflightBytes >= e.o.InFlightBytes)
	c.mu.Unlock()
	if idle {
		return false, false
	}
	// What the last read left unsent - the window was full, and an
	// acknowledgement woke the consumer for one more - is sent from there
	// while the consumer is still where it stops and retention has not
	// passed it: reading the batch again for every acknowledgement cost a
	// replaying consumer a read (on sqlite a query) per record.
	if rest, ok := unsent(*buf, from); ok && from >= e.store.Floor() {
		sent, more, blocked := e.sendFrom(c, rest, cl, era, b, ids)
		return more || sent == len(rest), blocked
	}
	w, err := e.store.ReadFrom(from, readBatch, (*buf)[:0])
	var below *store.BelowFloorError
	switch {
	case errors.As(err, &below):
		c.mu.Lock()
		if c.era == era && c.next == from {
			e.positionLost(c.id, from, below.Floor)
			c.moveTo(below.Floor)
		}
		c.mu.Unlock()
		return true, false
	case err != nil:
		e.Counters.StorageErrors.Add(1)
		e.log.Error("reading the channel for a consumer; retried", "client_id", c.id, "error", err)
		return false, true
	}
	*buf = w.Records
	sent, more, blocked := e.sendFrom(c, w.Records, cl, era, b, ids)
	return more || (sent == len(w.Records) && len(w.Records) == readBatch), blocked
}

// unsent is the part of the last batch read, buf, from offset from on; ok is
// false when from is not in it.
func unsent(buf []store.Record, from uint64) ([]store.Record, bool) {
	if len(buf) == 0 || from < buf[0].Offset || from-buf[0].Offset >= uint64(len(buf)) {
		return nil, false
	}
	rest := buf[from-buf[0].Offset:]
	return rest, rest[0].Offset == from
}

// sendFrom sends records, which start at c's next offset, while the
// connection can take them, and says how many went. more: c moved meanwhile
// (a seek, a resume, a floor passed, a live hand-over sent some), read
// again from its next; blocked: stopped short with nothing sure to wake it.
func (e *Engine) sendFrom(c *consumer, records []store.Record, cl delivery.Client, era uint32, b *builds, ids *[]uint32) (sent int, more, blocked bool) {
	b.now = e.clk.Now()
	defer b.release()
	at := place{client: cl, era: era}
	for i := range records {
		switch e.offer(c, &records[i], &at, b, ids) {
		case handedOver:
		case handedMoved, handedAlready, handedIdle:
			return i, true, false // start again from next
		case handedRefused, handedTooLarge, handedWait:
			return i, false, false // a re-read, a new connection or an ack of ours wakes c
		case handedRetry:
			return i, false, true
		}
	}
	return len(records), false, false
}

// standing says whether c is served and at offset; otherwise what an offer
// of the record there comes to. c.mu held.
func (c *consumer) standing(offset uint64) (handed, bool) {
	switch {
	case c.client == nil || len(c.subs) == 0 || c.ended || c.paused:
		return handedIdle, false
	case c.next > offset:
		return handedAlready, false
	case c.next < offset:
		return handedMoved, false
	}
	return handedOver, true
}

// handed is what offering one record to a consumer came to.
type handed int

const (
	handedOver     handed = iota // delivered, or stepped over: no subscription of c's takes it
	handedIdle                   // c is not being served (no connection or subscription, ended, a seek's reply pending)
	handedMoved                  // c is not at the record: behind it, or under another era or connection
	handedAlready                // c is past the record: the other sender sent it
	handedRefused                // the acl_file refuses it: c stalls at its position until a re-read wakes it
	handedWait                   // no room now; an acknowledgement of c's wakes it
	handedRetry                  // no room now, or the connection turned it away; nothing sure to wake c
	handedTooLarge               // larger than the client's Maximum Packet Size: c is disconnected (0x95)
)

// place pins an offer to the connection and era a sender read c at; nil
// takes whatever c has when the offer is made (a live hand-over).
type place struct {
	client delivery.Client
	era    uint32
}

// offer hands record r to c's connection if c is at r and the connection can
// take it now, under c.mu: whoever offers - c's goroutine or a publisher's
// live hand-over - finds c.next at r, so records go out once each and in
// offset order whichever sends them.
func (e *Engine) offer(c *consumer, r *store.Record, at *place, b *builds, ids *[]uint32) handed {
	if at == nil {
		// A hand-over passes a consumer that is not at r without asking
		// the acl_file: most of a channel's consumers may be away or
		// replaying.
		c.mu.Lock()
		h, here := c.standing(r.Offset)
		c.mu.Unlock()
		if !here {
			return h
		}
	}
	// The acl_file is asked at every delivery (A2.18), before c's lock
	// is taken: the Host takes the session's shard lock, which the
	// broker holds when it calls in and takes c's. A refused record
	// stalls the consumer at its position until a re-read wakes it.
	if !e.o.Host.Allows(c.id, r.Topic, acl.Read) {
		return handedRefused
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, era := c.client, c.era
	if at != nil && (at.era != era || at.client != cl) {
		return handedMoved
	}
	if h, here := c.standing(r.Offset); !here {
		return h
	}
	qos, rap, multi, got, ok := c.match(r, *ids)
	*ids = got
	if !ok {
		c.next = r.Offset + 1
		c.dirty = true
		return handedOver
	}
	l := channel.Label{Version: cl.Version(), QoS: qos, RetainAsPublished: rap}
	if multi {
		l.Channel = e.o.Name
	}
	m := b.message(r, l)
	d := delivery.Delivery{QoS: qos, Retain: rap && r.Retain, SubscriptionIDs: append([]uint32(nil), got...),
		Ref: delivery.Ref{Kind: delivery.KindAppend, Attempt: era, N: r.Offset, Name: e.o.Name}}
	if qos == 0 {
		d.Ref = delivery.Ref{}
	}
	if !cl.Fits(m, d) {
		// Larger than the client's Maximum Packet Size at the QoS it
		// goes at: never skipped, the position stays below it (A7.1).
		e.log.Warn("a record is larger than the consumer's Maximum Packet Size; disconnecting it (0x95)", "client_id", c.id, "offset", r.Offset)
		cl.Kick(codec.PacketTooLarge)
		return handedTooLarge
	}
	size := int64(len(m.Topic) + len(m.Payload))
	if qos > 0 && (!cl.CanTake(m, d) || (e.o.InFlightBytes > 0 && len(c.inflight) > 0 && c.inflightBytes+size > e.o.InFlightBytes)) {
		if len(c.inflight) > 0 {
			return handedWait
		}
		return handedRetry
	}
	if !cl.Deliver(m, d) {
		return handedRetry
	}
	e.Counters.Delivered.Add(1)
	if qos > 0 {
		c.inflight = append(c.inflight, flight{offset: r.Offset, bytes: size})
		c.inflightBytes += size
	} else {
		c.dirty = true
	}
	c.next = r.Offset + 1
	return handedOver
}
