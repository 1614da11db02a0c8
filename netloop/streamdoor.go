package netloop

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/certs"
)

// A stream door serves a connection with goroutines over a net.Conn rather
// than on a gnet loop: the TLS doors (crypto/tls wants a blocking net.Conn)
// and the WebSocket doors (an HTTP upgrade, then frames). It is the same
// Conn state machine as tcp's - every MQTT rule written once - fed through
// the Transport seam:
//
//   - the reader goroutine runs the TLS handshake and the WebSocket upgrade,
//     then reads, and feeds what it read to Conn.OnData under mu;
//   - a writer goroutine, started when Write hands it bytes and ending once
//     they are written, writes them in order, so that a client slow to read
//     never blocks the goroutine that wrote to it;
//   - a wake runs Conn.OnWake under mu on a goroutine started for it (one at
//     a time), so an idle connection costs one parked goroutine, the
//     reader, holding no buffer (idleread.go).
//
// mu is the connection's loop: every On* call and every Transport method but
// Wake runs under it.
type streamConn struct {
	c   Conn
	srv *Server
	l   *listener
	nc  net.Conn

	mu sync.Mutex
	in []byte // read and not yet consumed by OnData
	// rd is the reader goroutine's own: where it parks and what it reads.
	rd idleRead

	wmu     sync.Mutex
	writing bool      // a writer goroutine runs
	ended   bool      // the writer has ended the connection: no other starts
	w       io.Writer // the socket, or the TLS connection over it; set once open
	out     []byte    // handed and not yet with the writer, framed for ws
	spare   []byte    // the writer's last buffer, reused
	pending int       // bytes Write was handed that the writer has not written
	wrote   bool      // anything at all went to the peer
	ws      *wsState  // set once a WebSocket upgrade succeeded: Write frames
	wsClose bool      // a close frame is queued: finishClose sends no other
	closing bool      // Close: write what waits, then end
	stopped bool      // the writer is to end at once (Abort, or the socket failed)
	done    chan struct{}

	// writer, wakes and park are writeLoop, serveWakes and parked as
	// values made once: starting any of them then allocates nothing.
	writer, wakes, park func()
	serving             atomic.Bool // a goroutine is running wakes
	again               atomic.Bool // a wake arrived while it ran
	remote              string
}

// streamReadSize is a stream door's first read buffer; it grows to hold the
// largest packet not yet whole.
const streamReadSize = 4 << 10

// closeGrace bounds what a closing stream connection still writes (the last
// packet, a TLS close_notify, a WebSocket close frame) and how long it then
// reads its client's last bytes so that closing does not answer them with a
// reset that could destroy that packet.
const closeGrace = time.Second

// enrollStream starts serving an admitted socket on a TLS or WebSocket door.
// Its Conn exists from accept, so connect_timeout runs from there over the
// TLS handshake, the HTTP upgrade and the CONNECT together (RFC 0002 "How
// long a socket may wait to send CONNECT").
func (s *Server) enrollStream(l *listener, nc net.Conn, arrivedAt time.Time) {
	t := &streamConn{srv: s, l: l, nc: nc, remote: nc.RemoteAddr().String(), done: make(chan struct{})}
	t.writer, t.wakes, t.park = t.writeLoop, t.serveWakes, t.parked
	t.c.init(s, t, &l.door.Name, arrivedAt)
	s.mu.Lock()
	s.conns[&t.c] = struct{}{}
	s.mu.Unlock()
	select {
	case <-s.stop:
		t.c.Kick(codec.ServerShuttingDown)
	default:
	}
	go t.readLoop()
}

// errPark is what a read loop returns to park: the goroutine reading ends
// and a new one waits for the socket (parked).
var errPark = errors.New("park")

// readLoop opens the connection (TLS, WebSocket) and reads until it parks
// or the connection ends.
func (t *streamConn) readLoop() {
	err := t.open()
	if err == nil {
		err = t.read(false)
	}
	t.after(err)
}

// read serves the input until the connection parks or ends; woken says
// the socket was just found readable, so it reads before it parks again.
func (t *streamConn) read(woken bool) error {
	if t.ws != nil {
		return t.readFrames(woken)
	}
	return t.readStream(woken)
}

// parked waits for the socket on a goroutine of its own, then reads. A
// goroutine that has run a handshake or served a packet keeps a stack of 4
// KiB or more, which the collector never shrinks to 2 KiB once parked (the
// frames of a parked read are more than a quarter of it): an idle
// connection's goroutine is a new one, parked at the 2 KiB it started
// with, and it is the one that reads once bytes come.
func (t *streamConn) parked() {
	err := t.rd.parkUntilReadable()
	if err == nil {
		err = t.read(true)
	}
	t.after(err)
}

// after ends a reading goroutine: with errPark, once everything it held is
// given back, by starting the parked one; otherwise by ending the
// connection - the reading goroutine is the one that tells the Conn the
// transport closed.
func (t *streamConn) after(err error) {
	if err == errPark {
		go t.park()
		return
	}
	t.mu.Lock()
	t.c.OnClosed(err)
	t.mu.Unlock()
	// An end this side decided (Close) finishes writing within closeGrace;
	// otherwise the peer is gone or the socket failed, and what waits is
	// dropped.
	t.wmu.Lock()
	if !t.closing {
		t.stopped = true
	}
	t.startWriterLocked()
	t.wmu.Unlock()
	<-t.done
	t.nc.Close()
}

// open runs the TLS handshake and the WebSocket upgrade the door asks for.
func (t *streamConn) open() error {
	var rw io.ReadWriter = t.nc
	t.rd.setSocket(t.nc)
	if cfg := t.l.door.TLS; cfg != nil {
		t.rd.rr = &recordReader{Conn: t.nc}
		tc := tls.Server(t.rd.rr, cfg)
		err := tc.Handshake()
		t.srv.tidy.handshake()
		if err != nil {
			if t.c.state.Load() != stateEnding {
				t.c.logWarn("closed: TLS handshake failed", "error", err)
			}
			return err
		}
		t.identify(tc.ConnectionState())
		rw = tc
	}
	t.rd.fill = &fillReader{r: rw}
	t.wmu.Lock()
	t.w = rw
	t.wmu.Unlock()
	if t.l.door.Kind == KindWS {
		return t.upgrade(rw)
	}
	return nil
}

// identify takes the name of a client certificate the handshake verified:
// it becomes the client's user name (RFC 0002 "Client certificates"). A
// client without one falls through to the password file; so does one whose
// verified certificate has neither a Common Name nor a DNS name, which is
// logged, since its holder may well think it named somebody.
func (t *streamConn) identify(cs tls.ConnectionState) {
	if len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
		return
	}
	name := certs.Name(cs.PeerCertificates[0])
	if name == "" {
		t.c.logInfo("a verified client certificate names nobody (no Common Name, no DNS name): the client is authenticated as one without a certificate")
		return
	}
	t.mu.Lock()
	t.c.rareState().principal = &name
	t.mu.Unlock()
}

// readStream reads a TLS connection's bytes and feeds them to the Conn,
// and parks with no buffer (errPark) whenever everything read has been fed.
func (t *streamConn) readStream(woken bool) error {
	defer t.rd.giveBack()
	for ; ; woken = false {
		if !woken && !t.rd.buffered() {
			return errPark
		}
		buf := t.rd.take()
		n, err := t.rd.fill.Read(buf)
		if n > 0 {
			t.feed(buf[:n])
		}
		if err != nil {
			return err
		}
	}
}

// feed hands what was read to the Conn, as gnet's OnTraffic does. b is the
// reader's buffer, used again once feed returns.
func (t *streamConn) feed(b []byte) {
	t.mu.Lock()
	t.serveLocked(b)
	t.mu.Unlock()
}

// serveLocked is one turn of the connection's loop: the input it holds and
// b, unless a call is out, then what others asked for. Under mu. What
// OnData leaves - a packet not yet whole, or everything while a call is out
// - is kept in t.in; most reads leave nothing, and are handed over uncopied.
func (t *streamConn) serveLocked(b []byte) {
	c := &t.c
	if c.closed {
		t.in = nil
		return
	}
	buf := b
	if len(t.in) > 0 {
		t.in = append(t.in, b...)
		buf = t.in
	}
	n := 0
	if !c.Waiting(len(buf)) && len(buf) > 0 {
		if n = c.OnData(buf); n > 0 {
			c.srv.counters.BytesReceived.Add(uint64(n))
		}
	}
	switch rest := buf[n:]; {
	case len(rest) == 0:
		t.in = t.in[:0]
		if cap(t.in) > streamReadSize {
			t.in = nil // a large packet has gone: an idle connection keeps no large buffer
		}
	case len(t.in) > 0:
		t.in = t.in[:copy(t.in, rest)]
	default:
		t.in = append(t.in[:0], rest...)
	}
	c.OnWake()
}

// Wake runs the connection's loop soon, on a goroutine of its own: the
// reader may be blocked in a read and the writer in a write.
func (t *streamConn) Wake() {
	t.again.Store(true)
	if t.serving.CompareAndSwap(false, true) {
		go t.wakes()
	}
}

func (t *streamConn) serveWakes() {
	for {
		t.again.Store(false)
		t.mu.Lock()
		t.serveLocked(nil)
		t.mu.Unlock()
		t.serving.Store(false)
		if !t.again.Load() || !t.serving.CompareAndSwap(false, true) {
			return
		}
	}
}

// Write hands b to the writer goroutine; it never blocks on the peer.
func (t *streamConn) Write(b []byte) {
	if len(b) == 0 {
		return
	}
	t.wmu.Lock()
	if !t.closing && !t.stopped {
		if t.ws != nil {
			t.out = appendFrameHeader(t.out, opBinary, len(b))
		}
		t.out = append(t.out, b...)
		t.pending += len(b)
		t.startWriterLocked()
	}
	t.wmu.Unlock()
}

// writeControl queues a WebSocket control frame; it is not counted as
// handed bytes, which are the MQTT bytes the Conn wrote.
func (t *streamConn) writeControl(op byte, payload []byte) {
	t.wmu.Lock()
	if !t.closing && !t.stopped && !t.wsClose {
		t.wsClose = op == opClose
		t.out = appendFrameHeader(t.out, op, len(payload))
		t.out = append(t.out, payload...)
		t.startWriterLocked()
	}
	t.wmu.Unlock()
}

func (t *streamConn) Buffered() int {
	t.wmu.Lock()
	n := t.pending
	t.wmu.Unlock()
	return n
}

// Close writes what waits, then ends the connection (writeLoop).
func (t *streamConn) Close() {
	t.nc.SetWriteDeadline(time.Now().Add(closeGrace))
	t.wmu.Lock()
	t.closing = true
	t.startWriterLocked()
	t.wmu.Unlock()
}

// Abort drops what waits, the kernel's send queue included.
func (t *streamConn) Abort() {
	t.wmu.Lock()
	t.stopped = true
	t.startWriterLocked()
	t.wmu.Unlock()
	if tc, ok := t.nc.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	t.nc.Close()
}

// Finish is not offered: Close already shuts the write side after the last
// packet and reads the client's last bytes (finishClose).
func (t *streamConn) Finish() bool { return false }

func (t *streamConn) RemoteAddr() string { return t.remote }

// startWriterLocked starts writeLoop unless one runs or the connection has
// ended; wmu held. The writer runs only while there is something to write
// or an end to make, so an idle connection parks one goroutine, not two.
func (t *streamConn) startWriterLocked() {
	if !t.writing && !t.ended {
		t.writing = true
		go t.writer()
	}
}

// writeLoop writes what Write handed over, in order, and returns once it has
// written everything; at Close (what waits written first) or Abort it ends
// the connection.
func (t *streamConn) writeLoop() {
	t.wmu.Lock()
	for {
		if t.stopped || t.closing && len(t.out) == 0 || len(t.out) > 0 && t.w == nil {
			break
		}
		if len(t.out) == 0 {
			t.writing = false
			t.wmu.Unlock()
			return
		}
		buf, n, w := t.out, t.pending, t.w
		t.out, t.spare = t.spare[:0], nil
		high := n >= outboundCap/2
		t.wrote = true
		t.wmu.Unlock()
		_, err := w.Write(buf)
		t.wmu.Lock()
		t.pending -= n
		if cap(buf) <= flushChunk {
			t.spare = buf[:0]
		}
		if err != nil {
			t.stopped = true
			break
		}
		if high {
			// The Conn stopped at the transport cap; it refills now rather
			// than at the timers' next 25 ms poll.
			t.wmu.Unlock()
			t.c.wake()
			t.wmu.Lock()
		}
	}
	t.ended = true
	graceful := t.closing && !t.stopped && t.wrote
	sendClose := t.ws != nil && !t.wsClose
	t.out, t.spare = nil, nil
	t.wmu.Unlock()
	defer close(t.done)
	if graceful {
		t.finishClose(sendClose)
		return
	}
	t.nc.Close()
}

// finishClose ends a connection that wrote something: a WebSocket close
// frame and a TLS close_notify after the last packet, then a FIN, and the
// reader discards what the client still sends until it closes or
// closeGrace passes.
func (t *streamConn) finishClose(sendClose bool) {
	if sendClose {
		t.w.Write(appendFrameHeader(nil, opClose, 2))
		t.w.Write([]byte{0x03, 0xE8}) // 1000, normal closure
	}
	if tc, ok := t.w.(*tls.Conn); ok {
		tc.CloseWrite()
	}
	tcp, ok := t.nc.(*net.TCPConn)
	if !ok || tcp.CloseWrite() != nil {
		t.nc.Close()
		return
	}
	t.nc.SetReadDeadline(time.Now().Add(closeGrace))
}
