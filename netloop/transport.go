package netloop

import (
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/panjf2000/gnet/v2"
)

// Transport is what a Conn reads from and writes to. It is the seam a TLS or
// WebSocket door plugs into: such a door feeds Conn.OnData from its reader,
// and implements Write, Buffered and Close on its own bounded writer, and the
// state machine - every MQTT rule - is written once.
//
// Write, Buffered and Close are called only on the connection's own loop
// (for a door of goroutines, under the lock that serialises OnData). Wake may
// be called from any goroutine and must not block.
type Transport interface {
	// Write hands bytes to the peer without blocking; what the kernel does not
	// take at once stays buffered in the transport, in order.
	Write(b []byte)
	// Buffered is how many handed bytes the kernel has not taken yet.
	Buffered() int
	// Close ends the connection after a best-effort write of what is buffered.
	Close()
	// Abort ends the connection discarding what is buffered, the kernel's
	// send queue included, so that a half-written packet is undone rather
	// than trickled out behind the close (limits.write_timeout).
	Abort()
	// Finish shuts the write side after what was written (a FIN) and leaves
	// the connection open to be read until the peer closes; false when it
	// cannot, and the caller closes instead.
	Finish() bool
	// Wake asks the loop to call Conn.OnWake soon.
	Wake()
	RemoteAddr() string
}

// gnetTransport is the gnet side of a gnetConn: with the Conn beside it
// (Wake needs both) it is a Transport over a gnet connection.
type gnetTransport struct {
	// gc is set once, in OnOpen, before waker: a goroutine that sees a
	// waker sees gc, and one that sees none is looking at a transport not
	// yet open. A plain field beside the pointer rather than an atomic
	// pointer to the interface, which cost every connection a 16-byte
	// allocation.
	gc     gnet.Conn
	waker  atomic.Pointer[loopWaker] // the connection's event loop's
	remote string
}

// gnetConn is a Conn and its gnet transport in one allocation (fields grouped
// so nothing is padded); it is the gnet connection's context, and the
// Conn's Transport.
type gnetConn struct {
	c Conn
	gnetTransport
}

func (t *gnetTransport) Write(b []byte) {
	if t.waker.Load() == nil || len(b) == 0 {
		return
	}
	if t.gc.OutboundBuffered() == 0 {
		// What gnet's Write does first when nothing waits - one write(2) -
		// made without the scheduler's syscall bookkeeping: a write to a
		// non-blocking socket does not block, and a fan-out makes one per
		// subscriber per message. What the kernel does not take, and any
		// error, go to gnet's Write, which buffers the rest (waiting for
		// the socket to be writable) or closes the connection.
		n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(t.gc.Fd()), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		if errno == 0 {
			if b = b[n:]; len(b) == 0 {
				return
			}
		}
	}
	t.gc.Write(b)
}

func (t *gnetTransport) Buffered() int {
	if t.waker.Load() != nil {
		return t.gc.OutboundBuffered()
	}
	return 0
}

func (t *gnetTransport) Close() {
	if t.waker.Load() != nil {
		t.gc.Close()
	}
}

func (t *gnetTransport) Abort() {
	if t.waker.Load() != nil {
		t.gc.SetLinger(0) // close sends RST and drops the send queue
		t.gc.Close()
	}
}

func (t *gnetTransport) Finish() bool {
	if t.waker.Load() == nil {
		return false
	}
	return syscall.Shutdown(t.gc.Fd(), syscall.SHUT_WR) == nil
}

// Wake queues the connection on its loop's waker, which runs its OnWake on
// the loop with every other wake that arrived meanwhile (loopwake.go).
func (g *gnetConn) Wake() {
	if w := g.waker.Load(); w != nil {
		w.wake(g)
	}
}

func (t *gnetTransport) RemoteAddr() string { return t.remote }

// events is the gnet event handler: it feeds bytes to the Conn and lets it
// flush. A Wake runs through the loop's waker (loopwake.go), not gnet's.
type events struct {
	gnet.BuiltinEventEngine
	s *Server
}

func (e *events) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	g, ok := c.Context().(*gnetConn)
	if !ok {
		return nil, gnet.Close
	}
	g.gc = c
	w := e.s.wakerOf(c.EventLoop())
	g.waker.Store(w)
	if g.c.woken.Load() {
		// Somebody asked for a wake before the transport could carry it.
		w.wake(g)
	}
	return nil, gnet.None
}

func (e *events) OnTraffic(c gnet.Conn) gnet.Action {
	g, ok := c.Context().(*gnetConn)
	if !ok {
		return gnet.Close
	}
	// Wakes of this loop's connections that arrive while it runs - a
	// publish read here delivered to its neighbours - are run before it
	// returns, with no task queued for them (loopwake.go).
	w := g.waker.Load()
	w.enter()
	g.serve()
	w.leave()
	return gnet.None
}

// serve reads what gnet holds for the connection and lets it write: for
// OnTraffic, and for a wake (loopwake.go) - after a call is answered the
// input it held back is read at the next wake. Loop only.
func (g *gnetConn) serve() {
	if g.c.closed {
		return // a wake queued before gnet closed it: gnet has let go of its buffers
	}
	c := g.gc
	// While a call is out the input stays in gnet's buffer, unpeeked:
	// Waiting checks its size against the bound before gnet keeps this read.
	if g.c.Waiting(c.InboundBuffered()) {
		// nothing is read until the call is answered
	} else if buf, _ := c.Peek(-1); len(buf) > 0 {
		// Discard(0) would drop everything buffered: gnet reads n <= 0 as
		// "all". A partial packet must stay for the next call.
		if n := g.c.OnData(buf); n > 0 {
			c.Discard(n)
			g.c.srv.counters.BytesReceived.Add(uint64(n))
		}
	}
	g.c.OnWake()
}

func (e *events) OnClose(c gnet.Conn, err error) gnet.Action {
	if g, ok := c.Context().(*gnetConn); ok {
		g.c.OnClosed(err)
	}
	return gnet.None
}
