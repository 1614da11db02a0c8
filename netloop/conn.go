package netloop

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// Connection states. Only the connection's loop moves them; the timers read.
const (
	stateAwaitConnect int32 = iota // accepted, holding a slot, no CONNECT yet
	stateConnected                 // CONNACK 0x00 written
	stateEnding                    // end decided: nothing more is read
	stateConnecting                // CONNECT read, the handler deciding off the loop: no timer runs
)

// Actions the timers or another goroutine ask the loop to take.
const (
	actNone       uint32 = iota
	actClose             // close with nothing written
	actAbort             // write_timeout: drop what waits and close
	actLingerEnd         // the drain after a refusal is over: close
	actKeepalive         // keepalive expired: DISCONNECT 0x8D to MQTT 5, then close
	actKickOffset        // actKickOffset+reason: DISCONNECT reason, then close
)

// drainGrace is how long a connection refused or ended over a bad packet
// keeps discarding what its client still sends after the last packet was
// written and the write side shut: closing with unread bytes would answer
// with a reset, which can destroy that last packet before the client reads
// it. Nothing is read into memory meanwhile, and the slot is already back.
const drainGrace = time.Second

// outboundCap bounds the bytes handed to the transport and not yet taken by
// the kernel, per connection; the rest waits in the connection's own queue.
const outboundCap = 256 << 10

// Conn is the state machine of one MQTT connection, whatever door it came
// through. Methods named On* run on the connection's loop; Deliver, Kick and
// the Client accessors are safe from any goroutine.
type Conn struct {
	srv *Server
	t   Transport
	// door is the name of the door it came through: the listener's own
	// string, pointed at rather than copied (8 bytes where a string header
	// took 16).
	door      *string
	arrivedAt int64

	// Shared with other goroutines. The fields are grouped by size so that
	// nothing is padded: 10,000 idle connections pay for every byte here.
	// The whole Conn and its gnet transport fit the allocator's 352-byte
	// class (TestAConnectionKeepsItsSizeClass); 32 bytes more is the next.
	state      atomic.Int32
	action     atomic.Uint32
	onWire     atomic.Int32 // QoS 1/2 deliveries in flight: len(inflight), for other goroutines
	version    atomic.Uint32
	timerIdx   int32       // its place in the server's timers heap; under timers.mu
	woken      atomic.Bool // a Wake is on its way to the loop
	outPending atomic.Bool // bytes wait in the transport or writable entries in the queue
	slotGiven  atomic.Bool
	// keepaliveMS is 1.5 x the keepalive in force in milliseconds (at most
	// 98,302,500 for 65,535 s, so 32 bits hold it); 0 is none.
	keepaliveMS atomic.Int32
	// clientMaxPkt is the client's Maximum Packet Size, 0 for none; loop
	// only, placed here to fill the word keepaliveMS begins.
	clientMaxPkt uint32
	lastRead     atomic.Int64 // unix ns of the last bytes read
	progressAt   atomic.Int64 // unix ns the kernel last took bytes, or bytes began to wait; read only while they wait
	lingerUntil  atomic.Int64 // unix ns a draining connection closes at; 0 none
	timerAt      atomic.Int64 // unix ns its timers are next looked at; 0 none (written under timers.mu)
	id           atomic.Pointer[string]
	out          outQueue

	// Loop only - or, once the loop has let a closed connection go with a
	// call out, that call's goroutine (async.go).
	sessionExpiry uint32
	clientRecvMax int32               // the client's Receive Maximum: our outbound window (beside sessionExpiry: one word for both)
	inflight      map[uint16]inflight // our QoS 1/2 deliveries awaiting the client
	inflightBytes int
	rare          *connRare // what most connections never have: made at first need
	handed        int64     // bytes ever handed to the transport
	lastTaken     int64
	flushedTaken  int64        // bytes the kernel had taken at the end of the last flush
	call          *pendingCall // a handler call out off the loop (async.go); nil for none
	// run collects the QoS 1 publishes of one read that follow one which
	// waits on storage, started as one call once the read's packets stop
	// joining it (async.go, "publish runs"); nil for none. It lives only
	// inside OnData.
	run *pendingCall
	// claimedID and user are the client id the CONNECT named (empty for
	// one the broker assigns) and the user name it goes by (the door's
	// name where one vouched), set once it is read: what a refusal is
	// recorded under (Options.OnConnectRefused). Written on the loop
	// before the connection is handed to anyone.
	claimedID, user string
	nextPID         uint16
	attached        bool // the handler knows this connection
	aborting        bool // the end discards what waits (write_timeout)
	lingering       bool // the end drains the client's input (a refusal, a bad packet)
	noProblemInfo   bool // the client sent Request Problem Information 0
	closed          bool
	endGraceful     bool // the end is a client's own DISCONNECT 0x00, for the handler
}

// connRare is what most connections never have, made at its first need: one
// pointer in every Conn where three fields were.
type connRare struct {
	aliases  *[TopicAliasMaximum + 1][]byte // the client's topic aliases, made at the first
	heldQoS2 map[uint16]struct{}            // the client's QoS 2 publishes not yet released
	// principal is the name the door vouched for - a client certificate it
	// verified, or one a proxy verified and named in its PROXY header - set
	// before the first byte is read; nil for none.
	principal *string
}

// rareState is the connection's connRare, made on first need.
func (c *Conn) rareState() *connRare {
	if c.rare == nil {
		c.rare = &connRare{}
	}
	return c.rare
}

// principal is the name the door vouched for, nil for none.
func (c *Conn) principal() *string {
	if c.rare == nil {
		return nil
	}
	return c.rare.principal
}

// heldQoS2 reports how many of the client's QoS 2 publishes are held here,
// and whether packetID is one of them.
func (c *Conn) heldQoS2(packetID uint16) (n int, held bool) {
	if c.rare == nil {
		return 0, false
	}
	_, held = c.rare.heldQoS2[packetID]
	return len(c.rare.heldQoS2), held
}

// inflight is one delivery on the wire waiting for the client's answer: the
// delivery whole - under the packet identifier it went with, Released once
// its PUBREC is in - which is also what a resumed session needs to send it
// again (Handler.Unfinished).
type inflight struct {
	msg *delivery.Message
	delivery.Delivery
	size int
	seq  uint64 // the order it was sent in
}

// scratch is the per-call working memory of a loop: packet structs reused for
// every decode and one write buffer, so the hot path allocates nothing.
type scratch struct {
	connect  codec.Connect
	connack  codec.Connack
	publish  codec.Publish
	ack      codec.Ack
	sub      codec.Subscribe
	suback   codec.Suback
	unsub    codec.Unsubscribe
	unsuback codec.Unsuback
	disc     codec.Disconnect
	out      []byte
	batch    []outEntry
}

var scratchPool = sync.Pool{New: func() any {
	return &scratch{out: make([]byte, 0, 4096), batch: make([]outEntry, 0, flushBatch)}
}}

func newConn(s *Server, t Transport, door string, arrivedAt time.Time) *Conn {
	c := &Conn{}
	c.init(s, t, &door, arrivedAt)
	return c
}

// init readies a zero Conn (one made together with its transport, say).
func (c *Conn) init(s *Server, t Transport, door *string, arrivedAt time.Time) {
	c.srv, c.t, c.door, c.arrivedAt = s, t, door, arrivedAt.UnixNano()
	c.out.limit = s.opts.SessionQueueBytes
	c.lastRead.Store(arrivedAt.UnixNano())
	c.progressAt.Store(arrivedAt.UnixNano())
	s.timers.schedule(c, c.arrivedAt+int64(s.opts.ConnectTimeout))
}

// now is the moment by Options.Clock, unix nanoseconds.
func (c *Conn) now() int64 { return c.srv.opts.Clock.Now().UnixNano() }

// armSoon has the timers look at c within pollInterval.
func (c *Conn) armSoon() { c.srv.timers.schedule(c, c.now()+int64(pollInterval)) }

// ClientID is the client identifier the connection runs under ("" before CONNECT).
func (c *Conn) ClientID() string {
	if p := c.id.Load(); p != nil {
		return *p
	}
	return ""
}

// Version is the protocol level: 4 (3.1.1) or 5.
func (c *Conn) Version() byte { return byte(c.version.Load()) }

// Deliver queues a delivery and wakes the loop to write it. It never blocks.
func (c *Conn) Deliver(m *delivery.Message, d delivery.Delivery) bool {
	if !c.out.push(outEntry{msg: m, Delivery: d}, &c.srv.counters) {
		return false
	}
	c.wake()
	return true
}

// CanTake implements delivery.Client. The client's Maximum Packet Size and Receive
// Maximum are set at CONNECT, before the connection is attached, so any
// goroutine may read them; the window's fill is an atomic copy.
func (c *Conn) CanTake(m *delivery.Message, d delivery.Delivery) bool {
	queued, room := c.out.room(entrySize(m))
	if !room || (d.QoS > 0 && int(c.onWire.Load())+queued >= int(c.clientRecvMax)) {
		return false
	}
	return c.Fits(m, d)
}

// Fits implements delivery.Client: the PUBLISH d makes of m, sized as it
// would be written (a packet identifier at QoS 1 or 2).
func (c *Conn) Fits(m *delivery.Message, d delivery.Delivery) bool {
	if c.clientMaxPkt == 0 {
		return true
	}
	p := codec.Publish{QoS: d.QoS, Retain: d.Retain, Topic: m.Topic, Payload: m.Payload, PacketID: 1}
	if m.Props != nil {
		p.Properties = *m.Props
	}
	if len(d.SubscriptionIDs) > 0 {
		p.Properties.SubscriptionIDs = d.SubscriptionIDs
		p.Properties.Present.Set(codec.PropSubscriptionID)
	}
	return p.Size(c.Version()) <= int(c.clientMaxPkt)
}

// Kick asks the loop to end the connection with reason (see Client).
func (c *Conn) Kick(reason codec.ReasonCode) {
	c.request(actKickOffset + uint32(reason))
}

func (c *Conn) request(a uint32) {
	c.action.CompareAndSwap(actNone, a)
	c.wake()
}

func (c *Conn) wake() {
	if c.woken.CompareAndSwap(false, true) {
		c.t.Wake()
	}
}

// tick runs the connection's timers when the server's timers find it due
// (timers.go): what has expired is asked of the loop, and otherwise the next
// moment anything could expire is armed. Deadlines are re-read here rather
// than re-armed by every read, so the read path never touches the timers.
func (c *Conn) tick(now int64) {
	o := &c.srv.opts
	var next int64 // 0: nothing to wait for
	if c.out.grown.Load() {
		c.out.trimIdle()
		if c.out.grown.Load() {
			next = now + int64(pollInterval)
		}
	}
	switch c.state.Load() {
	case stateAwaitConnect:
		at := c.arrivedAt + int64(o.ConnectTimeout)
		if now >= at {
			c.request(actClose)
			return
		}
		next = earliest(next, at)
	case stateConnected:
		if ka := int64(c.keepaliveMS.Load()) * int64(time.Millisecond); ka > 0 {
			at := c.lastRead.Load() + ka
			if now >= at {
				c.request(actKeepalive)
				return
			}
			next = earliest(next, at)
		}
	default:
		if lu := c.lingerUntil.Load(); lu != 0 {
			if now < lu {
				next = earliest(next, lu)
			} else if c.lingerUntil.CompareAndSwap(lu, 0) {
				c.action.Store(actLingerEnd)
				c.wake()
			}
		}
		c.rearm(next)
		return
	}
	if c.outPending.Load() {
		if o.WriteTimeout > 0 {
			at := c.progressAt.Load() + int64(o.WriteTimeout)
			if now >= at {
				c.request(actAbort)
				return
			}
			next = earliest(next, at)
		}
		c.wake() // refill what the transport cap held back
		next = earliest(next, now+int64(pollInterval))
	}
	c.rearm(next)
}

// rearm schedules the connection's next look at, unless there is none.
func (c *Conn) rearm(at int64) {
	if at != 0 {
		c.srv.timers.schedule(c, at)
	}
}

// earliest is the sooner of two moments, 0 being none.
func earliest(a, b int64) int64 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// OnWake runs what other goroutines asked for, then writes what waits.
func (c *Conn) OnWake() {
	c.woken.Store(false)
	if c.call != nil {
		c.Waiting(0)
		if c.call == nil {
			c.wake() // answered: the input the call held back is read at the next turn
		} else if c.state.Load() != stateEnding {
			// What others asked waits for the call, so that the end never
			// runs beside it; deliveries queued before the call flow, the
			// rest follow its answer (pendingCall.flushLimit).
			if c.state.Load() == stateConnected {
				c.flushThrough(c.call.flushLimit)
			}
			return
		}
	}
	a := c.action.Swap(actNone)
	if a == actLingerEnd {
		if !c.closed {
			c.t.Close()
		}
		return
	}
	if a != actNone && c.state.Load() != stateEnding {
		switch {
		case a == actClose:
			c.logWarn("closed: no CONNECT within connect_timeout")
			c.end(0, false, false)
			return
		case a == actAbort:
			c.logWarn("closed: the client took no bytes for limits.write_timeout")
			c.aborting = true
			c.end(0, false, false)
			return
		case a == actKeepalive:
			c.logInfo("disconnected: keepalive expired")
			c.end(codec.KeepAliveTimeout, true, false)
			return
		default:
			reason := codec.ReasonCode(a - actKickOffset)
			c.logInfo("disconnected by the broker", "reason", reason.String())
			c.end(reason, true, false)
			return
		}
	}
	if c.state.Load() == stateConnected {
		c.flush()
	}
}

// OnData consumes whole packets from buf and returns how many bytes it used.
// A partial packet is left for the next call; its declared length has been
// checked against the limit before anything waits for its body. A packet
// whose call goes off the loop is the last consumed until it is answered
// (async.go).
func (c *Conn) OnData(buf []byte) int {
	if c.Waiting(len(buf)) {
		return 0
	}
	if c.state.Load() == stateEnding {
		return len(buf) // nothing more is read from an ending connection
	}
	if c.woken.Load() && c.state.Load() == stateConnected {
		// Deliveries queued before these bytes were read go out before
		// what answers them: the wake that would write them may be served
		// after this read, and a PINGRESP would then overtake them.
		c.flush()
	}
	c.lastRead.Store(c.now())
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	// A run collected from this read goes out once its packets are parsed,
	// whichever way the parse ends.
	defer c.startRun()
	off := 0
	for off < len(buf) && c.call == nil {
		if c.state.Load() == stateEnding {
			return len(buf) // nothing more is read from an ending connection
		}
		awaiting := c.state.Load() == stateAwaitConnect
		limit := c.srv.opts.MaxMessageSize
		if awaiting {
			limit = c.srv.opts.MaxConnectSize
		}
		h, err := codec.ReadHeader(buf[off:], limit)
		if err == codec.ErrNeedMore {
			break
		}
		if err != nil {
			if awaiting {
				if !c.refuseHeader(buf[off:], h, err, sc) {
					break // need the protocol level to answer in its vocabulary
				}
				return len(buf)
			}
			c.protocolFault(err, sc)
			return len(buf)
		}
		if awaiting && h.Type != codec.TypeConnect {
			c.logWarn("closed: the first packet is not a CONNECT", "type", h.Type.String())
			c.end(0, false, false)
			return len(buf)
		}
		if len(buf)-off < h.Total() {
			break
		}
		if c.run != nil && !c.joinsRun(h) {
			break // read on once the run has been answered
		}
		body := buf[off+h.HeaderLen : off+h.Total()]
		off += h.Total()
		if awaiting {
			c.onConnect(h, body, sc)
		} else {
			c.onPacket(h, body, sc)
		}
	}
	c.flushScratch(sc)
	return off
}

// OnClosed runs once the transport has closed, whoever closed it.
func (c *Conn) OnClosed(err error) {
	if c.closed {
		return
	}
	c.closed = true
	if c.state.Load() != stateEnding {
		// The client hung up (or the socket failed) without a DISCONNECT.
		// Logged once the handler has taken the end: the line means the
		// session's state for it is decided (and stored).
		connected := c.state.Load() == stateConnected
		if pc := c.call; pc != nil && pc.kind == delivery.CallDisconnect {
			// It hung up behind its DISCONNECT, whose state is still being
			// stored: the end is the DISCONNECT's (a 0x00 withdraws the Will).
			c.end(0, false, pc.graceful)
			c.logInfo("disconnected by the client", "reason", pc.reason.String())
		} else {
			c.end(0, false, false)
			if connected {
				c.logInfo("disconnected: connection closed by the client")
			}
		}
	}
	if c.orphanCall() {
		return // the call's goroutine tells the end and forgets the connection
	}
	c.tellEnd()
	c.srv.forget(c)
}

// end decides the connection's end: the slot goes back first, nothing more is
// read, an MQTT 5 client is sent DISCONNECT reason when send is set, the
// handler is told, and the transport closes. With a call out the handler is
// told only once it has returned (tellEnd), never beside it.
func (c *Conn) end(reason codec.ReasonCode, send, graceful bool) {
	c.endWith(reason, "", send, graceful)
}

// endWith is end whose DISCONNECT says why (its Reason String).
func (c *Conn) endWith(reason codec.ReasonCode, why string, send, graceful bool) {
	prev := c.state.Swap(stateEnding)
	if prev == stateEnding {
		return
	}
	if prev == stateConnected {
		c.srv.counters.Connections.Add(-1)
	}
	if refusal(reason) {
		c.refused(delivery.ReasonOf(reason), c.ClientID())
	}
	c.slotRelease()
	c.outPending.Store(false)
	c.endGraceful = graceful
	if send && c.Version() == codec.Version5 {
		sc := scratchPool.Get().(*scratch)
		sc.disc.ReasonCode = reason
		sc.disc.Properties.Reset()
		c.reasonString(&sc.disc.Properties, reason, why, true)
		sc.out = sc.disc.Append(sc.out, codec.Version5)
		sc.disc.Properties.Reset()
		c.flushScratch(sc)
		scratchPool.Put(sc)
	}
	// A run collected so far goes out as any call out does at an end: the
	// handler is told of the end once it has returned.
	c.startRun()
	if c.call == nil {
		c.tellEnd()
	}
	switch {
	case c.closed:
	case c.aborting:
		c.t.Abort()
	case c.lingering:
		c.finish()
	default:
		c.t.Close()
	}
}

// tellEnd is the handler's half of the end: what the connection leaves
// unfinished is handed back, its queue closed, and the handler told. It runs
// once, after any call out has returned.
func (c *Conn) tellEnd() {
	if c.attached {
		c.handBackUnfinished()
	}
	c.out.close()
	for _, f := range c.inflight {
		f.msg.Release() // the handler took its own reference to what it keeps
	}
	c.giveInflight()
	if c.attached {
		c.attached = false
		c.srv.opts.Handler.Disconnected(c, c.sessionExpiry, c.endGraceful)
	}
}

// finish closes a connection whose client may still be sending: the write
// side is shut after the last packet and input is discarded until the client
// closes or drainGrace passes.
func (c *Conn) finish() {
	if c.t.Buffered() > 0 || !c.t.Finish() {
		c.t.Close()
		return
	}
	lu := c.now() + int64(drainGrace)
	c.lingerUntil.Store(lu)
	c.srv.timers.schedule(c, lu)
}

// slotRelease gives the max_connections slot back, once.
func (c *Conn) slotRelease() {
	if c.slotGiven.CompareAndSwap(false, true) {
		c.srv.adm.release()
	}
}

// flushScratch hands what the loop encoded into sc.out to the transport.
func (c *Conn) flushScratch(sc *scratch) {
	if len(sc.out) == 0 {
		return
	}
	c.t.Write(sc.out)
	c.handed += int64(len(sc.out))
	c.srv.counters.BytesSent.Add(uint64(len(sc.out)))
	sc.out = sc.out[:0]
	c.noteProgress()
}

// noteProgress records whether the kernel took bytes since the last look, for
// limits.write_timeout: a connection stalls only while bytes wait and none
// are taken.
//
// The moment is read only while something waits - the only time the timers
// compare it - so a flush that leaves nothing (every PUBACK of a QoS 1 round
// trip) reads no clock; the next flush that leaves bytes waiting stamps its
// own moment, since lastTaken is reset to none meanwhile.
func (c *Conn) noteProgress() {
	buffered := c.t.Buffered()
	pending := buffered > 0 || c.writable()
	if taken := c.handed - int64(buffered); !pending {
		c.lastTaken = -1
	} else if buffered == 0 || taken != c.lastTaken {
		c.lastTaken = taken
		c.progressAt.Store(c.now())
	}
	// The timers poll a connection only while its bytes wait, so it is
	// armed as they begin to; a queue ring a burst grew is trimmed by them too.
	if was := c.outPending.Swap(pending); (pending && !was) || c.out.grown.Load() {
		c.armSoon()
	}
}

// writable reports whether the oldest queued delivery may be written now.
func (c *Conn) writable() bool {
	e, ok := c.out.peek()
	return ok && (e.QoS == 0 || c.windowOpen())
}

// windowOpen reports whether one more QoS 1 or 2 delivery may go on the wire:
// within the client's Receive Maximum, and with no more than half of
// limits.session_queue_bytes written and unacknowledged - one always may
// when nothing is in flight, however large (RFC 0002).
func (c *Conn) windowOpen() bool {
	if len(c.inflight) == 0 {
		return true
	}
	return len(c.inflight) < int(c.clientRecvMax) && c.inflightBytes < c.srv.opts.SessionQueueBytes/2
}

// flushBatch is how many queued deliveries flush takes per lock.
const flushBatch = 64

// flushChunk is how many encoded bytes flush gathers before handing them to
// the transport.
const flushChunk = 64 << 10

// flush moves deliveries from the queue to the transport, in order, while the
// transport holds less than outboundCap and the window allows.
func (c *Conn) flush() { c.flushThrough(math.MaxUint64) }

// flushThrough is flush stopping before the first delivery queued after
// position through.
func (c *Conn) flushThrough(through uint64) {
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	version := c.Version()
	for c.t.Buffered()+len(sc.out) < outboundCap {
		batch := c.out.snapshot(sc.batch[:0])
		if len(batch) == 0 {
			break
		}
		var written uint64
		blocked := false
		for _, e := range batch {
			if e.seq > through || c.t.Buffered()+len(sc.out) >= outboundCap || (e.QoS > 0 && !c.windowOpen()) {
				blocked = true
				break
			}
			written = e.seq
			c.encode(sc, e, version)
		}
		c.out.popThrough(written, batch)
		clear(batch) // the pool must not keep messages alive
		if blocked {
			break
		}
		if len(sc.out) >= flushChunk {
			// Hand it over now: what the kernel takes at once leaves the
			// transport, so the cap counts what is really held back.
			c.flushScratch(sc)
		}
	}
	c.flushScratch(sc)
	c.noteProgress()
	// Held back by the transport cap while the kernel is taking bytes: come
	// back once the loop has served its other events (the transport drains
	// on its own write events, which tell us nothing). A client that took
	// nothing since the last flush is left to the timers' poll, so a stalled one
	// costs no spinning.
	taken := c.handed - int64(c.t.Buffered())
	if taken > c.flushedTaken && c.t.Buffered() >= outboundCap/2 && c.writable() {
		c.wake()
	}
	c.flushedTaken = taken
}

// encode appends one delivery's PUBLISH to sc.out, taking a packet
// identifier and a place in the window for QoS 1 and 2.
func (c *Conn) encode(sc *scratch, e outEntry, version byte) {
	if e.Released {
		// A resumed QoS 2 exchange the client already has: only its PUBREL.
		id := c.takePacketID(e.PacketID)
		size := entrySize(e.msg)
		f := inflight{msg: e.msg, Delivery: e.Delivery, size: size, seq: e.seq}
		f.QoS, f.PacketID = 2, id
		c.inflight[id] = f
		e.msg.Retain() // the window's reference, given back at settle or end
		c.onWire.Store(int32(len(c.inflight)))
		c.inflightBytes += size
		c.appendAck(sc, codec.TypePubrel, id, codec.Success)
		return
	}
	p := &sc.publish
	p.Dup, p.QoS, p.Retain = e.Dup, e.QoS, e.Retain
	p.Topic, p.Payload, p.PacketID = e.msg.Topic, e.msg.Payload, 0
	if version == codec.Version5 && e.msg.Props != nil {
		p.Properties = *e.msg.Props
	} else {
		p.Properties.Reset()
	}
	if at := e.msg.ExpiresAt(); at != 0 {
		left := at - c.srv.opts.Clock.Now().UnixNano()
		if left <= 0 {
			p.Properties = codec.Properties{}
			c.srv.counters.DeliveriesExpired.Add(1)
			return // expired while it waited: not sent
		}
		p.Properties.MessageExpiry = uint32((left + int64(time.Second) - 1) / int64(time.Second))
	}
	if version == codec.Version5 && len(e.SubscriptionIDs) > 0 {
		// The identifiers belong to this delivery, never to the message.
		p.Properties.SubscriptionIDs = e.SubscriptionIDs
		p.Properties.Present.Set(codec.PropSubscriptionID)
	}
	// MQTT-3.1.2-25: never send a packet above the client's Maximum Packet
	// Size; such a delivery is discarded as if delivered.
	if fits := c.clientMaxPkt == 0 || p.Size(version) <= int(c.clientMaxPkt); fits {
		if e.QoS > 0 {
			p.PacketID = c.takePacketID(e.PacketID)
			size := entrySize(e.msg)
			f := inflight{msg: e.msg, Delivery: e.Delivery, size: size, seq: e.seq}
			f.PacketID = p.PacketID
			c.inflight[p.PacketID] = f
			e.msg.Retain() // the window's reference, given back at settle or end
			c.onWire.Store(int32(len(c.inflight)))
			c.inflightBytes += size
		}
		sc.out = p.Append(sc.out, version)
		c.srv.counters.DeliveriesSent.Add(1)
	} else {
		c.srv.counters.DeliveriesTooLarge.Add(1)
	}
	if e.msg.Props != nil || len(e.SubscriptionIDs) > 0 {
		// Never keep the message's slices, or the identifier's, in scratch:
		// a later decode would append into memory a delivery shares.
		p.Properties = codec.Properties{}
	}
}

// takePacketID is id when no delivery in flight holds it (a resumed
// session's re-send), else a new one.
func (c *Conn) takePacketID(id uint16) uint16 {
	if c.inflight == nil {
		c.inflight = inflightFromPool()
	}
	if _, used := c.inflight[id]; id != 0 && !used {
		return id
	}
	return c.nextPacketID()
}

// handBackUnfinished gives the handler (Handler.Unfinished) the QoS 1 and 2
// deliveries this ending connection leaves unfinished: those on the wire in the order they
// were sent, under their identifiers, then those still queued.
func (c *Conn) handBackUnfinished() {
	var u []delivery.Unfinished
	for id, f := range c.inflight {
		if f.msg == nil {
			continue
		}
		d := f.Delivery
		d.PacketID, d.Dup = id, true
		u = append(u, delivery.Unfinished{Msg: f.msg, Delivery: d})
	}
	sort.Slice(u, func(i, j int) bool {
		return c.inflight[u[i].Delivery.PacketID].seq < c.inflight[u[j].Delivery.PacketID].seq
	})
	queued := c.out.held() // another goroutine's push may shed them meanwhile
	for _, e := range queued {
		if e.QoS > 0 {
			u = append(u, delivery.Unfinished{Msg: e.msg, Delivery: e.Delivery})
		}
	}
	if len(u) > 0 {
		c.srv.opts.Handler.Unfinished(c, u)
	}
	for _, e := range queued {
		e.msg.Release()
	}
}

// inflightPool holds the in-flight windows connections gave back once their
// last delivery was acknowledged. A Go map never shrinks: a connection kept
// the window its busiest moment grew (a map of 8 slots of 88-byte entries
// is about 800 bytes) for the rest of its life, idle or not. Taken from the
// pool, a QoS 1 stream with one delivery in flight allocates none.
var inflightPool sync.Pool

// inflightFromPool is an empty window, from the pool when one waits there.
func inflightFromPool() map[uint16]inflight {
	if m, ok := inflightPool.Get().(map[uint16]inflight); ok {
		return m
	}
	return make(map[uint16]inflight)
}

// giveInflight gives the connection's window back to the pool once nothing
// is in flight; the next delivery takes one again. On the loop.
func (c *Conn) giveInflight() {
	if c.inflight == nil {
		return
	}
	clear(c.inflight)
	inflightPool.Put(c.inflight)
	c.inflight = nil
}

// nextPacketID returns an identifier no delivery in flight holds.
func (c *Conn) nextPacketID() uint16 {
	if c.inflight == nil {
		c.inflight = inflightFromPool()
	}
	for {
		c.nextPID++
		if c.nextPID == 0 {
			c.nextPID = 1
		}
		if _, used := c.inflight[c.nextPID]; !used {
			return c.nextPID
		}
	}
}

func (c *Conn) logInfo(msg string, args ...any) {
	if c.srv.infoOn() {
		c.srv.log.Info(msg, c.logArgs(args)...)
	}
}

func (c *Conn) logWarn(msg string, args ...any) {
	if c.srv.log.Enabled(context.Background(), slog.LevelWarn) {
		c.srv.log.Warn(msg, c.logArgs(args)...)
	}
}

func (c *Conn) logArgs(args []any) []any {
	base := []any{"listener", *c.door, "remote", c.t.RemoteAddr()}
	if id := c.ClientID(); id != "" {
		base = append(base, "client_id", id)
	}
	return append(base, args...)
}

// assignedID makes a client identifier for a client that sent none. The
// wall clock, not Options.Clock: it keeps identifiers apart across restarts,
// it measures no time.
var assignedSeq atomic.Uint64

func assignClientID() string {
	return "saguin-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.FormatUint(assignedSeq.Add(1), 36)
}

// hasUnreadSubscribeProperty reports a saguin- User Property on a SUBSCRIBE
// other than the two Sagüin reads there, saguin-filter and saguin-deletions
// (RFC 0003 "The reserved prefix on a client's own packets"); what those two
// hold is the broker's to judge (broker/channel.ReadSubscribe).
func hasUnreadSubscribeProperty(p *codec.Properties) bool {
	for _, u := range p.User {
		if k := string(u.Key); bytes.HasPrefix(u.Key, []byte("saguin-")) && k != "saguin-filter" && k != "saguin-deletions" {
			return true
		}
	}
	return false
}

// hasReservedUserProperty reports a saguin- User Property on a CONNECT,
// which RFC 0002 refuses 0x83: Sagüin reads none there.
func hasReservedUserProperty(p *codec.Properties) bool {
	for _, u := range p.User {
		if bytes.HasPrefix(u.Key, []byte("saguin-")) {
			return true
		}
	}
	return false
}
