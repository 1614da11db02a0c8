package netloop_test

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// leavingHandler holds a DISCONNECT's Leaving off the loop until open is
// closed, and reports each Disconnected's graceful flag.
type leavingHandler struct {
	netloop.NopHandler
	entered chan struct{}
	open    chan struct{}
	ended   chan bool
}

func newLeavingHandler() *leavingHandler {
	return &leavingHandler{entered: make(chan struct{}), open: make(chan struct{}), ended: make(chan bool, 1)}
}

func (h *leavingHandler) Waits(_ delivery.Client, call delivery.Call, _ *codec.Publish, _ delivery.Ref) bool {
	return call == delivery.CallDisconnect
}
func (h *leavingHandler) Leaving(delivery.Client, uint32, bool) { close(h.entered); <-h.open }
func (h *leavingHandler) Disconnected(_ delivery.Client, _ uint32, graceful bool) {
	h.ended <- graceful
}

func (h *leavingHandler) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-h.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("Leaving was never called")
	}
}

func (h *leavingHandler) graceful(t *testing.T) bool {
	t.Helper()
	select {
	case g := <-h.ended:
		return g
	case <-time.After(5 * time.Second):
		t.Fatal("Disconnected was never called")
	}
	return false
}

// A client's DISCONNECT closes its connection only once the handler has
// stored what it must (Handler.Leaving, off the loop when it waits on a
// disk), and Disconnected follows it (RFC 0003 "Durable consumers": stored
// before the connection is closed).
func TestADisconnectClosesTheConnectionOnlyOnceLeavingReturns(t *testing.T) {
	h := newLeavingHandler()
	s := startServer(t, netloop.Options{Handler: h, EventLoops: 1})
	c := dial(t, s, codec.Version5)
	c.connect("leaver", nil)
	c.send((&codec.Disconnect{}).Append(nil, codec.Version5))
	h.waitEntered(t)
	_, _, err := c.next(100 * time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("while Leaving stores: %v, want the connection still open", err)
	}
	select {
	case <-h.ended:
		t.Fatal("Disconnected before Leaving returned")
	default:
	}
	close(h.open)
	c.expectClosed()
	if !h.graceful(t) {
		t.Fatal("a DISCONNECT 0x00 ended as not graceful")
	}
}

// A client that hangs up right behind its DISCONNECT, while Leaving is
// still out, ends as its DISCONNECT said: graceful (a 0x00 withdraws the
// Will), not as a dropped link.
func TestAHangUpBehindADisconnectEndsAsTheDisconnectSaid(t *testing.T) {
	h := newLeavingHandler()
	s := startServer(t, netloop.Options{Handler: h, EventLoops: 1})
	c := dial(t, s, codec.Version5)
	c.connect("leaver", nil)
	c.send((&codec.Disconnect{}).Append(nil, codec.Version5))
	h.waitEntered(t)
	c.nc.Close()
	close(h.open)
	if !h.graceful(t) {
		t.Fatal("a DISCONNECT 0x00 followed by a hang-up ended as not graceful: its Will would be published")
	}
}
