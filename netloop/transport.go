package netloop

import (
	"sync/atomic"
	"syscall"

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

// gnetTransport is a Transport over a gnet connection.
type gnetTransport struct {
	conn   *Conn
	gc     atomic.Pointer[gnet.Conn]
	remote string
}

func (t *gnetTransport) Write(b []byte) {
	if gc := t.gc.Load(); gc != nil {
		(*gc).Write(b)
	}
}

func (t *gnetTransport) Buffered() int {
	if gc := t.gc.Load(); gc != nil {
		return (*gc).OutboundBuffered()
	}
	return 0
}

func (t *gnetTransport) Close() {
	if gc := t.gc.Load(); gc != nil {
		(*gc).Close()
	}
}

func (t *gnetTransport) Abort() {
	if gc := t.gc.Load(); gc != nil {
		(*gc).SetLinger(0) // close sends RST and drops the send queue
		(*gc).Close()
	}
}

func (t *gnetTransport) Finish() bool {
	gc := t.gc.Load()
	if gc == nil {
		return false
	}
	return syscall.Shutdown((*gc).Fd(), syscall.SHUT_WR) == nil
}

func (t *gnetTransport) Wake() {
	if gc := t.gc.Load(); gc != nil {
		(*gc).Wake(nil)
	}
}

func (t *gnetTransport) RemoteAddr() string { return t.remote }

// events is the gnet event handler: it feeds bytes to the Conn and lets it
// flush. A Wake arrives as OnTraffic with no new bytes.
type events struct {
	gnet.BuiltinEventEngine
	s *Server
}

func (e *events) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	t, ok := c.Context().(*gnetTransport)
	if !ok {
		return nil, gnet.Close
	}
	t.gc.Store(&c)
	if t.conn.woken.Load() {
		// Somebody asked for a wake before the transport could carry it.
		c.Wake(nil)
	}
	return nil, gnet.None
}

func (e *events) OnTraffic(c gnet.Conn) gnet.Action {
	t, ok := c.Context().(*gnetTransport)
	if !ok {
		return gnet.Close
	}
	// A Wake arrives here too, usually with nothing new to read.
	if buf, _ := c.Peek(-1); len(buf) > 0 {
		// Discard(0) would drop everything buffered: gnet reads n <= 0 as
		// "all". A partial packet must stay for the next call.
		if n := t.conn.OnData(buf); n > 0 {
			c.Discard(n)
		}
	}
	t.conn.OnWake()
	return gnet.None
}

func (e *events) OnClose(c gnet.Conn, err error) gnet.Action {
	if t, ok := c.Context().(*gnetTransport); ok {
		t.conn.OnClosed(err)
	}
	return gnet.None
}
