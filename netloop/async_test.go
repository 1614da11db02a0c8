package netloop_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// gatedHandler is a handler whose every store-waiting call goes off the loop
// (Handler.Waits) and whose Publish to the topic "slow" blocks until the test
// opens the gate - a commit that takes as long as the test wants.
type gatedHandler struct {
	netloop.NopHandler
	entered chan delivery.Client // a slow Publish has started
	gate    chan struct{}        // one receive lets one slow Publish return

	mu      sync.Mutex
	events  []string
	clients map[string]delivery.Client
}

func newGatedHandler() *gatedHandler {
	return &gatedHandler{entered: make(chan delivery.Client, 8), gate: make(chan struct{}), clients: make(map[string]delivery.Client)}
}

func (h *gatedHandler) note(format string, args ...any) {
	h.mu.Lock()
	h.events = append(h.events, fmt.Sprintf(format, args...))
	h.mu.Unlock()
}

// seen is what the handler was called with so far, in order.
func (h *gatedHandler) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

func (h *gatedHandler) Connect(c delivery.Client, req *netloop.ConnectRequest) (bool, codec.ReasonCode) {
	h.note("%s connect", req.ClientID)
	h.mu.Lock()
	h.clients[req.ClientID] = c
	h.mu.Unlock()
	return false, codec.Success
}

// client is the connection the handler attached under id.
func (h *gatedHandler) client(id string) delivery.Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.clients[id]
}

func (h *gatedHandler) Publish(c delivery.Client, p *codec.Publish) (codec.ReasonCode, string) {
	if string(p.Topic) == "slow" {
		h.entered <- c
		<-h.gate
	}
	h.note("%s publish %s %d", c.ClientID(), p.Topic, p.PacketID)
	return codec.Success, ""
}

// Subscribe to "retained/slow" sends a retained value, as a broker does
// before its SUBSCRIBE call returns, and then blocks until the gate opens.
func (h *gatedHandler) Subscribe(c delivery.Client, f []byte, o delivery.SubscribeOptions) (codec.ReasonCode, string) {
	if string(f) == "retained/slow" {
		c.Deliver(delivery.NewMessage(&codec.Publish{Topic: []byte("retained/slow"), Payload: []byte("v"), Retain: true}, time.Now), delivery.Delivery{Retain: true})
		h.entered <- c
		<-h.gate
	}
	return codec.ReasonCode(o.QoS), ""
}

func (h *gatedHandler) Unsubscribe(c delivery.Client, f []byte) codec.ReasonCode {
	return codec.Success
}

func (h *gatedHandler) Disconnected(c delivery.Client, expiry uint32, graceful bool) {
	h.note("%s disconnected", c.ClientID())
}

func (h *gatedHandler) Waits(delivery.Client, delivery.Call, *codec.Publish, delivery.Ref) bool {
	return true
}

// startGated runs a server of one event loop, so that every connection of a
// test shares the loop a waiting call must not stall.
func startGated(t *testing.T, mutate func(*netloop.Options)) (*netloop.Server, *gatedHandler) {
	h := newGatedHandler()
	o := netloop.Options{Handler: h, EventLoops: 1}
	if mutate != nil {
		mutate(&o)
	}
	return startServer(t, o), h
}

// waitSlow waits until a slow Publish has started.
func (h *gatedHandler) waitSlow(t *testing.T) delivery.Client {
	t.Helper()
	select {
	case c := <-h.entered:
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("the slow publish never reached the handler")
		return nil
	}
}

// expectAck reads the next packet as an acknowledgement of type want.
func (c *rawClient) expectAck(want codec.Type, id uint16) {
	c.t.Helper()
	h, body := c.read()
	var a codec.Ack
	if h.Type == codec.TypePingresp {
		a.Type = h.Type
	} else if err := a.Decode(h, body, c.version); err != nil {
		c.t.Fatal(err)
	}
	if h.Type != want || a.PacketID != id {
		c.t.Fatalf("want %s %d, got %s %d", want, id, h.Type, a.PacketID)
	}
}

// eventually polls cond until it holds, failing after 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestOneClientsStoreWriteNeverDelaysAnother(t *testing.T) {
	s, h := startGated(t, nil)
	a := dial(t, s, codec.Version5)
	a.connect("a", nil)
	b := dial(t, s, codec.Version5)
	b.connect("b", nil)

	a.publish("slow", "x", 1, 1)
	h.waitSlow(t)
	for id := uint16(1); id <= 3; id++ {
		b.publish("fast", "y", 1, id)
		b.expectAck(codec.TypePuback, id)
	}
	close(h.gate)
	a.expectAck(codec.TypePuback, 1)
}

func TestPacketsBehindAWaitingCallAreAnsweredAfterItInOrder(t *testing.T) {
	s, h := startGated(t, nil)
	a := dial(t, s, codec.Version5)
	a.connect("a", nil)
	b := dial(t, s, codec.Version5)
	b.connect("b", nil)

	var burst []byte
	for _, p := range []*codec.Publish{
		{QoS: 1, Topic: []byte("slow"), PacketID: 1},
		{QoS: 1, Topic: []byte("t"), PacketID: 2},
	} {
		burst = p.Append(burst, codec.Version5)
	}
	burst = append(burst, 0xC0, 0x00) // PINGREQ
	burst = (&codec.Publish{QoS: 1, Topic: []byte("t"), PacketID: 3}).Append(burst, codec.Version5)
	a.send(burst)
	h.waitSlow(t)
	// The loop has served b since: a's packets behind the slow one were
	// read from the socket, and none of them may have reached the handler.
	b.publish("fast", "y", 1, 9)
	b.expectAck(codec.TypePuback, 9)
	if got := h.seen(); slices.Contains(got, "a publish t 2") || slices.Contains(got, "a publish t 3") {
		t.Fatalf("packets behind the waiting one were handled before it returned: %v", got)
	}

	h.gate <- struct{}{}
	a.expectAck(codec.TypePuback, 1)
	a.expectAck(codec.TypePuback, 2)
	a.expectAck(codec.TypePingresp, 0)
	a.expectAck(codec.TypePuback, 3)
	var order []string
	for _, e := range h.seen() {
		if len(e) > 2 && e[:2] == "a " {
			order = append(order, e)
		}
	}
	want := []string{"a connect", "a publish slow 1", "a publish t 2", "a publish t 3"}
	if !slices.Equal(order, want) {
		t.Fatalf("handler saw %v, want %v", order, want)
	}
}

func TestDeliveriesQueuedBeforeACallFlowWhileItIsOut(t *testing.T) {
	s, h := startGated(t, nil)
	a := dial(t, s, codec.Version5)
	a.connect("a", func(p *codec.Connect) {
		p.Properties.ReceiveMaximum = 1
		p.Properties.Present.Set(codec.PropReceiveMaximum)
	})
	c := h.client("a")
	for _, payload := range []string{"one", "two"} {
		c.Deliver(delivery.NewMessage(&codec.Publish{Topic: []byte("news"), Payload: []byte(payload)}, time.Now), delivery.Delivery{QoS: 1})
	}
	first := a.expectPublish() // "two" waits in the queue: the window is one
	// Its PUBACK opens the window, and the publish behind it waits on storage.
	burst := (&codec.Ack{Type: codec.TypePuback, PacketID: first.PacketID}).Append(nil, codec.Version5)
	burst = (&codec.Publish{QoS: 1, Topic: []byte("slow"), PacketID: 1}).Append(burst, codec.Version5)
	a.send(burst)
	h.waitSlow(t)
	if p := a.expectPublish(); string(p.Payload) != "two" {
		t.Fatalf("got %q, want the queued delivery while the call is out", p.Payload)
	}
	close(h.gate)
	a.expectAck(codec.TypePuback, 1)
}

func TestAConnectionClosedWhileItsCallIsOutEndsOnceAfterTheCallReturns(t *testing.T) {
	s, h := startGated(t, nil)
	a := dial(t, s, codec.Version5)
	a.connect("a", nil)
	a.publish("slow", "x", 1, 1)
	h.waitSlow(t)
	a.nc.Close()
	// The slot goes back as the close is seen; the handler hears of the end
	// only once the call is back.
	eventually(t, "the slot to be given back", func() bool { return s.Connections() == 0 })
	if got := h.seen(); slices.Contains(got, "a disconnected") {
		t.Fatalf("the handler was told of the end while the call was out: %v", got)
	}
	h.gate <- struct{}{}
	eventually(t, "the handler to be told of the end", func() bool { return slices.Contains(h.seen(), "a disconnected") })
	if err := s.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := h.seen()
	i := slices.Index(got, "a publish slow 1")
	j := slices.Index(got, "a disconnected")
	if i < 0 || j < i || slices.Index(got[j+1:], "a disconnected") >= 0 {
		t.Fatalf("want the publish to return, then one end: %v", got)
	}
}

func TestAKickWhileACallIsOutIsActedOnOnceItsAnswerIsWritten(t *testing.T) {
	s, h := startGated(t, nil)
	a := dial(t, s, codec.Version5)
	a.connect("a", nil)
	a.publish("slow", "x", 1, 1)
	c := h.waitSlow(t)
	c.Kick(codec.SessionTakenOver)
	// A barrier: the loop has run the kick's wake by the time b is answered.
	b := dial(t, s, codec.Version5)
	b.connect("b", nil)
	if got := h.seen(); slices.Contains(got, "a disconnected") {
		t.Fatalf("the kick ended the connection while its call was out: %v", got)
	}
	h.gate <- struct{}{}
	a.expectAck(codec.TypePuback, 1)
	hd, body := a.read()
	var d codec.Disconnect
	if err := d.Decode(hd, body, codec.Version5); err != nil || hd.Type != codec.TypeDisconnect || d.ReasonCode != codec.SessionTakenOver {
		t.Fatalf("want DISCONNECT 0x8E, got %s %v (%v)", hd.Type, d.ReasonCode, err)
	}
	a.expectClosed()
	eventually(t, "the handler to be told of the end", func() bool { return slices.Contains(h.seen(), "a disconnected") })
}

func TestAWaitingConnectionsInputIsBounded(t *testing.T) {
	s, h := startGated(t, func(o *netloop.Options) { o.MaxMessageSize = 64 << 10 })
	a := dial(t, s, codec.Version5)
	a.connect("a", nil)
	a.publish("slow", "x", 1, 1)
	h.waitSlow(t)
	// QoS 0 publishes behind the waiting one, past the 1 MiB bound: the
	// connection ends with 0x97 while the call is still out.
	// Without the bound nothing would ever answer: the input would pile up
	// behind the call for as long as it lasts.
	chunk := (&codec.Publish{Topic: []byte("t"), Payload: make([]byte, 60<<10)}).Append(nil, codec.Version5)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := 0; n < 64<<20; n += len(chunk) {
			a.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if _, err := a.nc.Write(chunk); err != nil {
				return
			}
		}
	}()
	hd, body := a.read()
	var d codec.Disconnect
	if err := d.Decode(hd, body, codec.Version5); err != nil || hd.Type != codec.TypeDisconnect || d.ReasonCode != codec.QuotaExceeded {
		t.Fatalf("want DISCONNECT 0x97, got %s %v (%v)", hd.Type, d.ReasonCode, err)
	}
	a.nc.Close()
	<-done
	if got := h.seen(); slices.Contains(got, "a disconnected") {
		t.Fatalf("the handler was told of the end while the call was out: %v", got)
	}
	h.gate <- struct{}{}
	eventually(t, "the handler to be told of the end", func() bool { return slices.Contains(h.seen(), "a disconnected") })
	if got := h.seen(); slices.Contains(got, "a publish t 0") {
		t.Fatalf("input behind the waiting packet was handled after the connection ended: %v", got)
	}
}

func TestRetainedValuesASubscribeSendsFollowItsSuback(t *testing.T) {
	s, h := startGated(t, nil)
	a := dial(t, s, codec.Version5)
	a.connect("a", nil)
	b := dial(t, s, codec.Version5)
	b.connect("b", nil)
	sub := &codec.Subscribe{PacketID: 5, Subscriptions: []codec.Subscription{{Filter: []byte("retained/slow")}}}
	a.send(sub.Append(nil, codec.Version5))
	h.waitSlow(t)
	// The loop has served b since, and with it the wake of a's delivery.
	b.publish("fast", "y", 1, 1)
	b.expectAck(codec.TypePuback, 1)
	close(h.gate)
	if hd, _ := a.read(); hd.Type != codec.TypeSuback {
		t.Fatalf("want the SUBACK first, got %s", hd.Type)
	}
	if p := a.expectPublish(); !p.Retain || string(p.Topic) != "retained/slow" {
		t.Fatalf("want the retained value after the SUBACK, got %q retain %v", p.Topic, p.Retain)
	}
}

// runHandler is gatedHandler taking publish runs (netloop.RunPublisher):
// each run is noted with its packet identifiers, and one holding "slow"
// waits for the gate like a slow Publish.
type runHandler struct{ *gatedHandler }

func (h runHandler) PublishRun(c delivery.Client, ps []*codec.Publish, codes []codec.ReasonCode, whys []string) {
	var ids []uint16
	for _, p := range ps {
		ids = append(ids, p.PacketID)
	}
	for _, p := range ps {
		if string(p.Topic) == "slow" {
			h.entered <- c
			<-h.gate
			break
		}
	}
	h.note("%s run %v", c.ClientID(), ids)
	for i := range codes {
		codes[i] = codec.Success
	}
}

// The QoS 1 publishes one read holds behind one that waits go to the handler
// in one call, so their records can share a commit; a packet of another kind
// ends the run and waits for its answer, and the PUBACKs come back in the
// order the publishes were sent, none before the run returned.
func TestQoS1PublishesReadTogetherGoAsOneRunAnsweredInOrder(t *testing.T) {
	h := runHandler{newGatedHandler()}
	s := startServer(t, netloop.Options{Handler: h, EventLoops: 1})
	a := dial(t, s, codec.Version5)
	a.connect("a", nil)

	var burst []byte
	for _, p := range []*codec.Publish{
		{QoS: 1, Topic: []byte("slow"), PacketID: 1},
		{QoS: 1, Topic: []byte("t"), PacketID: 2},
		{QoS: 1, Topic: []byte("t"), PacketID: 3},
		{QoS: 1, Topic: []byte("t"), PacketID: 4},
		{QoS: 0, Topic: []byte("q0")},
	} {
		burst = p.Append(burst, codec.Version5)
	}
	burst = append(burst, 0xC0, 0x00) // PINGREQ
	burst = (&codec.Publish{QoS: 1, Topic: []byte("t"), PacketID: 5}).Append(burst, codec.Version5)
	a.send(burst)
	h.waitSlow(t)
	if got := h.seen(); slices.Contains(got, "a publish q0 0") {
		t.Fatalf("the QoS 0 publish behind the run was handled before the run returned: %v", got)
	}
	h.gate <- struct{}{}
	for id := uint16(1); id <= 4; id++ {
		a.expectAck(codec.TypePuback, id)
	}
	a.expectAck(codec.TypePingresp, 0)
	a.expectAck(codec.TypePuback, 5)
	var order []string
	for _, e := range h.seen() {
		if len(e) > 2 && e[:2] == "a " {
			order = append(order, e)
		}
	}
	want := []string{"a connect", "a run [1 2 3 4]", "a publish q0 0", "a publish t 5"}
	if !slices.Equal(order, want) {
		t.Fatalf("handler saw %v, want %v", order, want)
	}
}
