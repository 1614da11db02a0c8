package netloop

import (
	"sync/atomic"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// A call whose answer waits on storage (Handler.Waits) runs off the loop: the
// connection stops reading at the packet that made it - the rest of its input
// stays where its door buffered it, unparsed and in order - and every other
// connection on the loop goes on being served. When the call returns, the
// loop writes its answer and reads on; deliveries to the connection flow
// meanwhile. The connection's end waits for the call: what another goroutine
// asks (a kick, a timer) is acted on once it has returned, and an end the
// loop cannot put off (the client hung up, its input overflowed) closes the
// socket at once and tells the handler only after the call has returned.

// Where a call stands. Only these cross goroutines; everything else in a
// pendingCall is written before the goroutine starts or before the state
// moves, and read after.
const (
	callOut      int32 = iota // the handler is deciding
	callDone                  // it returned: the loop answers it
	callOrphaned              // the connection closed meanwhile: the call's goroutine ends it
)

// waitingInputFloor is the least a connection whose packet waits on storage
// may send meanwhile, in bytes; the bound is the larger of this and
// max_message_size, so one whole packet of any allowed size always fits
// behind the one that waits. gnet cannot stop reading a socket, and keeps
// what the loop does not consume in the connection's own buffer: the bound is
// checked on every read, against what is already buffered plus the read just
// made, before gnet keeps that read. Past it the connection ends (DISCONNECT
// 0x97 to an MQTT 5 client): pipelining a megabyte behind a store write is not
// what a client of a constrained broker does, and the alternative is memory
// without a bound (notes-0001 invariant 13).
const waitingInputFloor = 1 << 20

// Publish runs. A client with a window of QoS 1 publishes in flight sends
// them back to back, and one read often holds many. Sent off the loop one at
// a time, each would wait for its own commit before the next is even parsed,
// so one connection's records could never share a group commit. Instead the
// QoS 1 publishes that follow one which waits, in the same read, join it
// (Conn.run) until a packet that is not a QoS 1 PUBLISH, the end of what was
// read, or maxPublishRun; the run goes out as one call (RunPublisher), which
// stores its records together and answers each publish, and the PUBACKs are
// written in the order the publishes came, each only after the call - and so
// its commit - has returned. A packet that does not join waits, unparsed, for
// the run's answer, as any packet behind a call out does.

// maxPublishRun bounds one run: as many records as one sqlite group commit
// takes (store.MaxCollectBatch). What a run holds is already bounded by the
// read it came from.
const maxPublishRun = 256

// RunPublisher is a Handler that answers a run of one connection's QoS 1
// publishes in one call: codes[i] and whys[i] answer ps[i] as Publish would,
// the publishes routed in order, none answered before it is as durable as
// Publish's answer says. Called off the loop, as a publish that waits is.
type RunPublisher interface {
	PublishRun(c delivery.Client, ps []*codec.Publish, codes []codec.ReasonCode, whys []string)
}

// joinsRun reports whether a packet with header h joins the run being
// collected: a QoS 1 PUBLISH while the run has room.
func (c *Conn) joinsRun(h codec.Header) bool {
	return h.Type == codec.TypePublish && (h.Flags>>1)&3 == 1 && len(c.run.pubs) < maxPublishRun
}

// startRun sends the run collected so far off the loop; one publish alone
// goes as the ordinary call it would have been.
func (c *Conn) startRun() {
	pc := c.run
	if pc == nil {
		return
	}
	c.run = nil
	if len(pc.pubs) == 1 {
		pc.pubs = nil
	}
	c.goWait(pc)
}

// pendingCall is one handler call out, with everything it needs copied out
// of the read buffer and room for its answer.
type pendingCall struct {
	c     *Conn
	state atomic.Int32
	kind  delivery.Call
	// flushLimit: deliveries queued after this position in the
	// connection's queue wait for the answer; those queued before flow while
	// the call is out. What the call itself queues - a SUBSCRIBE's retained
	// values, a publish reaching its own publisher - must follow its answer,
	// as it does when the call runs on the loop, and a delivery cannot say
	// which goroutine queued it, so every later one waits the same one call.
	flushLimit uint64

	// What the call is given: owned copies, never the read buffer.
	pub *codec.Publish
	// pubs is a publish run's QoS 1 publishes in the order read, pub first
	// (RunPublisher); nil for one publish.
	pubs     []*codec.Publish
	runWhys  []string
	req      ConnectRequest
	plan     connackPlan
	packetID uint16
	ref      delivery.Ref
	filters  [][]byte
	opts     []delivery.SubscribeOptions
	unread   [][]byte // an UNSUBSCRIBE's saguin- property names, named back
	graceful bool     // a DISCONNECT's: its reason was 0x00
	reason   codec.ReasonCode

	// What it answered.
	code    codec.ReasonCode
	why     string
	present bool
	ok      bool
	codes   []codec.ReasonCode
	refused []string // a SUBSCRIBE's refusals, "filter: why"
}

// waits reports whether the handler says call may wait on storage
// (Handler.Waits).
func (c *Conn) waits(call delivery.Call, p *codec.Publish, ref delivery.Ref) bool {
	return c.srv.opts.Handler.Waits(c, call, p, ref)
}

// goWait starts pc off the loop; the connection reads nothing more until it
// has been answered. A goroutine per call rather than a pool: a connection
// has at most one call out, so their number is bounded by max_connections
// already, each lasts about one commit, and a pool smaller than that would
// make one client's write wait behind another's - the very delay this path
// removes. Starting a goroutine costs about a microsecond beside a commit's
// fsync, and the calls waiting together are what fills a group commit.
func (c *Conn) goWait(pc *pendingCall) {
	pc.c = c
	pc.flushLimit = c.out.last()
	c.call = pc
	c.srv.counters.CallsOffLoop.Add(1)
	go pc.run()
}

// run makes the call, then hands the answer to the loop - or, when the
// connection closed while it ran, ends the connection here: its loop will
// not call it again.
func (pc *pendingCall) run() {
	pc.call()
	c := pc.c
	if pc.state.CompareAndSwap(callOut, callDone) {
		c.wake()
		return
	}
	c.call = nil
	pc.apply()
	c.tellEnd()
	c.srv.forget(c)
}

// call is the handler call itself, on the call's own goroutine.
func (pc *pendingCall) call() {
	c, h := pc.c, pc.c.srv.opts.Handler
	switch pc.kind {
	case delivery.CallConnect:
		pc.present, pc.code = h.Connect(c, &pc.req)
	case delivery.CallPublish:
		if pc.pubs != nil {
			pc.codes = make([]codec.ReasonCode, len(pc.pubs))
			pc.runWhys = make([]string, len(pc.pubs))
			h.(RunPublisher).PublishRun(c, pc.pubs, pc.codes, pc.runWhys)
			return
		}
		pc.code, pc.why = h.Publish(c, pc.pub)
	case delivery.CallRelease:
		pc.code, pc.why = h.Release(c, pc.packetID)
	case delivery.CallReceived:
		pc.ok = h.Received(c, pc.ref, pc.packetID)
	case delivery.CallSubscribe:
		for i, f := range pc.filters {
			code, why := h.Subscribe(c, f, pc.opts[i])
			pc.codes = append(pc.codes, code)
			if code.IsError() && why != "" {
				pc.refused = append(pc.refused, string(f)+": "+why)
			}
		}
	case delivery.CallUnsubscribe:
		for _, f := range pc.filters {
			pc.codes = append(pc.codes, h.Unsubscribe(c, f))
		}
	case delivery.CallDisconnect:
		h.Leaving(c, c.sessionExpiry, pc.graceful)
	}
}

// apply is what a returned call changed whether or not its answer is ever
// written: a session the handler attached must be told of the end.
func (pc *pendingCall) apply() {
	if pc.kind == delivery.CallConnect && pc.code == codec.Success {
		pc.c.attachConnected(&pc.req, &pc.plan)
	}
}

// answer writes a returned call's answer and whatever follows from it, as the
// same packet handled on the loop would have.
func (pc *pendingCall) answer(sc *scratch) {
	c := pc.c
	switch pc.kind {
	case delivery.CallConnect:
		c.connectAnswered(sc, &pc.req, &pc.plan, pc.present, pc.code)
	case delivery.CallPublish:
		if pc.pubs != nil {
			for i, p := range pc.pubs {
				c.publishAnswered(sc, p.QoS, p.PacketID, p.Topic, pc.codes[i], pc.runWhys[i])
			}
			return
		}
		c.publishAnswered(sc, pc.pub.QoS, pc.pub.PacketID, pc.pub.Topic, pc.code, pc.why)
	case delivery.CallRelease:
		c.releaseAnswered(sc, pc.packetID, pc.code, pc.why)
	case delivery.CallReceived:
		c.receivedAnswered(sc, pc.packetID, pc.ok)
	case delivery.CallSubscribe:
		sa := &sc.suback
		sa.ReasonCodes = append(sa.ReasonCodes[:0], pc.codes...)
		c.subscribeAnswered(sc, pc.packetID, pc.refused)
	case delivery.CallUnsubscribe:
		ua := &sc.unsuback
		ua.ReasonCodes = append(ua.ReasonCodes[:0], pc.codes...)
		c.unsubscribeAnswered(sc, pc.packetID, pc.unread)
	case delivery.CallDisconnect:
		c.disconnected(pc.reason, pc.graceful)
	}
}

// Waiting reports whether the connection reads nothing now because a call is
// out; a door calls it before OnData, with what it holds unread, and feeds
// OnData only when it answers false. A call that has returned is answered
// here first. Past the bound on what a waiting connection may send
// (waitingInputFloor) the connection ends; an ending connection is never
// waiting, so that what its client still sends is discarded.
func (c *Conn) Waiting(buffered int) bool {
	if c.call == nil {
		return false
	}
	sc := scratchPool.Get().(*scratch)
	answered := c.answerCall(sc)
	c.flushScratch(sc)
	scratchPool.Put(sc)
	if answered || c.state.Load() == stateEnding {
		return false
	}
	if buffered > 0 {
		c.lastRead.Store(c.now())
	}
	if limit := max(waitingInputFloor, c.srv.opts.MaxMessageSize); buffered > limit {
		c.logWarn("disconnected: sent more than the bound while a packet waited on storage", "buffered", buffered, "limit", limit)
		// The client is still sending: drain its input rather than answer
		// it with a reset that could destroy the DISCONNECT.
		c.lingering = true
		c.endWith(codec.QuotaExceeded, "more input than the broker holds while a packet waits on storage", c.state.Load() == stateConnected, false)
		return false
	}
	return true
}

// answerCall answers a call that has returned and reports whether the
// connection may read again: false while the call is still out. On a
// connection whose end was decided meanwhile nothing is written; the end the
// call held back is told to the handler instead.
func (c *Conn) answerCall(sc *scratch) bool {
	pc := c.call
	if pc == nil {
		return true
	}
	if pc.state.Load() != callDone {
		return false
	}
	c.call = nil
	pc.apply()
	if c.state.Load() == stateEnding {
		c.tellEnd()
		return true
	}
	pc.answer(sc)
	return true
}

// orphanCall is the loop's last word on a connection that closed: a call
// still out is left to end it (true), one that returned is applied here.
func (c *Conn) orphanCall() bool {
	pc := c.call
	if pc == nil {
		return false
	}
	if pc.state.CompareAndSwap(callOut, callOrphaned) {
		return true
	}
	c.call = nil
	pc.apply()
	return false
}
