package netloop_test

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker"
	"github.com/saguin-edge/saguin/broker/brokertest"
	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
)

// These tests run netloop on a clock.Fake: each deadline is reached by
// Advance, never waited for. The server's timers arm one Fake timer for the
// earliest connection deadline (timers.go) and the Fake runs it inside
// Advance, so a timer due by a moment has run by the time Advance to it
// returns.

var fakeStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fakeServer starts a server on a Fake. Nothing is armed until a socket
// arrives: a server holding no connection has no timer running.
func fakeServer(t *testing.T, opts netloop.Options) (*netloop.Server, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(fakeStart)
	opts.Clock = clk
	s := startServer(t, opts)
	if n := clk.Armed(); n != 0 {
		t.Fatalf("%d timers armed by a server holding no connection, want 0", n)
	}
	return s, clk
}

// ping sends PINGREQ and wants PINGRESP: the connection is still served.
func (c *rawClient) ping(what string) {
	c.t.Helper()
	c.send((&codec.Pingreq{}).Append(nil, c.version))
	h, _, err := c.next(5 * time.Second)
	if err != nil || h.Type != codec.TypePingresp {
		c.t.Fatalf("%s: want PINGRESP, got %s %v", what, h.Type, err)
	}
}

// waitFor polls cond, a condition on another goroutine's work, for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 5 s for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A client silent for one and a half times its keepalive is closed; one
// that speaks a millisecond before that is still served.
func TestKeepaliveOnAFakeClock(t *testing.T) {
	s, clk := fakeServer(t, netloop.Options{})
	silent, talker := dial(t, s, codec.Version311), dial(t, s, codec.Version311)
	keepalive := func(p *codec.Connect) { p.KeepAlive = 1 }
	silent.connect("silent", keepalive)
	talker.connect("talker", keepalive)
	clk.Advance(1500*time.Millisecond - time.Millisecond)
	talker.ping("a millisecond before 1.5 x keepalive")
	if n := s.Counters().Connections.Load(); n != 2 {
		t.Fatalf("%d connections a millisecond before 1.5 x keepalive, want 2", n)
	}
	clk.Advance(time.Millisecond)
	silent.expectClosed()
}

// A socket that sends no CONNECT is closed at connect_timeout; one whose
// CONNECT arrives a millisecond before it is answered.
func TestConnectTimeoutOnAFakeClock(t *testing.T) {
	s, clk := fakeServer(t, netloop.Options{ConnectTimeout: 2 * time.Second})
	silent, late := dial(t, s, codec.Version311), dial(t, s, codec.Version311)
	waitFor(t, "both sockets admitted", func() bool { return s.Connections() == 2 })
	clk.Advance(2*time.Second - time.Millisecond)
	if ack := late.connect("late", nil); ack.ReasonCode != codec.Success {
		t.Fatalf("a CONNECT a millisecond before connect_timeout was answered %v", ack.ReasonCode)
	}
	clk.Advance(time.Millisecond)
	silent.expectClosed()
}

// A subscriber that takes no bytes for write_timeout while its deliveries
// wait is closed; a millisecond before, it is still there.
func TestWriteTimeoutOnAFakeClock(t *testing.T) {
	s, clk := fakeServer(t, netloop.Options{WriteTimeout: time.Second})
	sub, pub := dial(t, s, codec.Version311), dial(t, s, codec.Version311)
	sub.connect("sub", nil)
	sub.subscribe(1, "big", 0)
	pub.connect("pub", nil)
	payload := strings.Repeat("x", 64<<10)
	// More than the kernel's buffers and the 1 MiB queue together: the
	// queue fills, QoS 0 deliveries are dropped, and the subscriber's
	// outbound waits with nothing taken - all before the clock moves, so the
	// last progress is the start.
	for range 256 {
		pub.publish("big", payload, 0, 0)
	}
	waitFor(t, "the subscriber's queue full", func() bool { return s.Counters().DeliveriesDropped.Load() > 0 })
	clk.Advance(time.Second - time.Millisecond)
	pub.ping("the publisher, a millisecond before the subscriber's write_timeout")
	if n := s.Counters().Connections.Load(); n != 2 {
		t.Fatalf("%d connections a millisecond before write_timeout, want 2", n)
	}
	clk.Advance(time.Millisecond)
	// Everything the kernel holds is read, then the close.
	buf := make([]byte, 1<<20)
	for {
		sub.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := sub.nc.Read(buf); err != nil {
			if !errors.Is(err, io.EOF) && !isReset(err) {
				t.Fatalf("want the subscriber closed at write_timeout, got %v", err)
			}
			break
		}
	}
	pub.ping("the publisher after the subscriber's write_timeout")
}

// max_connect_rate: a burst of twice the rate is accepted at once, the next
// socket waits in the accept queue for a token, the rate's interval later
// and not a millisecond sooner.
func TestMaxConnectRateOnAFakeClock(t *testing.T) {
	s, clk := fakeServer(t, netloop.Options{MaxConnectRate: 1})
	for _, id := range []string{"a", "b"} {
		if ack := dial(t, s, codec.Version311).connect(id, nil); ack.ReasonCode != codec.Success {
			t.Fatalf("%s in the burst: %v", id, ack.ReasonCode)
		}
	}
	clk.WaitArmed(2) // the connections' timers and the pacer waiting for its next token
	third := dial(t, s, codec.Version311)
	third.send((&codec.Connect{Version: codec.Version311, CleanStart: true, ClientID: []byte("c")}).Append(nil, codec.Version311))
	clk.Advance(time.Second - time.Millisecond)
	if n := s.Connections(); n != 2 {
		t.Fatalf("%d connections admitted a millisecond before the next token, want 2", n)
	}
	clk.Advance(time.Millisecond)
	h, body := third.read()
	var ack codec.Connack
	if h.Type != codec.TypeConnack || ack.Decode(h, body, codec.Version311) != nil || ack.ReasonCode != codec.Success {
		t.Fatalf("the socket past the burst: want CONNACK 0x00 once its token came, got %s", h.Type)
	}
}

// A Message Expiry Interval counts on the clock the broker and netloop are
// given: a retained value kept 10 s is sent with what is left of it, and
// not at all once the Fake has moved past it.
func TestMessageExpiryOnAFakeClock(t *testing.T) {
	clk := clock.NewFake(fakeStart)
	sessions, retained := brokertest.Stores(t, 0)
	b, err := broker.New(broker.Options{Sessions: sessions, Retained: retained, Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	s := startServer(t, netloop.Options{Handler: b, Clock: clk})
	clk.WaitArmed(1) // the broker's commit ticker (netloop arms nothing before a connection)
	pub := dial(t, s, codec.Version5)
	pub.connect("pub", nil)
	p := &codec.Publish{QoS: 1, PacketID: 1, Retain: true, Topic: []byte("t"), Payload: []byte("v")}
	p.Properties.MessageExpiry = 10
	p.Properties.Present.Set(codec.PropMessageExpiry)
	pub.send(p.Append(nil, codec.Version5))
	pub.expectAck(codec.TypePuback, 1)
	// sent reports the retained value a new subscriber is sent, nil for none:
	// the PINGRESP after the SUBACK says nothing more is coming.
	sent := func(id string) *codec.Publish {
		t.Helper()
		c := dial(t, s, codec.Version5)
		c.connect(id, nil)
		c.subscribe(1, "t", 1)
		c.send((&codec.Pingreq{}).Append(nil, codec.Version5))
		h, body := c.read()
		if h.Type == codec.TypePingresp {
			return nil
		}
		var got codec.Publish
		if h.Type != codec.TypePublish || got.Decode(h, body, codec.Version5) != nil {
			t.Fatalf("%s: want PUBLISH or PINGRESP, got %s", id, h.Type)
		}
		return &got
	}
	clk.Advance(4 * time.Second)
	if got := sent("at-4s"); got == nil || got.Properties.MessageExpiry != 6 {
		t.Fatalf("4 s into a 10 s expiry: sent %+v, want the value with 6 s left", got)
	}
	clk.Advance(6*time.Second - time.Millisecond)
	if got := sent("a-millisecond-before"); got == nil || got.Properties.MessageExpiry != 1 {
		t.Fatalf("a millisecond before expiry: sent %+v, want the value with 1 s left", got)
	}
	clk.Advance(time.Millisecond)
	if got := sent("at-10s"); got != nil {
		t.Fatalf("at expiry: sent %q, want nothing", got.Payload)
	}
}

// A delivery waiting in a connection's queue expires on the clock it was
// stamped with: sent with what is left of its expiry a millisecond before,
// dropped and counted at it.
func TestQueuedDeliveryExpiresOnAFakeClock(t *testing.T) {
	clk := clock.NewFake(fakeStart)
	sessions, retained := brokertest.Stores(t, 0)
	b, err := broker.New(broker.Options{Sessions: sessions, Retained: retained, Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	s := startServer(t, netloop.Options{Handler: b, Clock: clk})
	clk.WaitArmed(1) // the broker's commit ticker (netloop arms nothing before a connection)
	sub := dial(t, s, codec.Version5)
	sub.connect("sub", func(p *codec.Connect) { // one in flight: the rest wait in the queue
		p.Properties.ReceiveMaximum = 1
		p.Properties.Present.Set(codec.PropReceiveMaximum)
	})
	sub.subscribe(1, "q", 1)
	pub := dial(t, s, codec.Version5)
	pub.connect("pub", nil)
	for id, expiry := range []uint32{0, 2, 2} {
		p := &codec.Publish{QoS: 1, PacketID: uint16(id + 1), Topic: []byte("q"), Payload: []byte{byte('a' + id)}}
		if expiry != 0 {
			p.Properties.MessageExpiry = expiry
			p.Properties.Present.Set(codec.PropMessageExpiry)
		}
		pub.send(p.Append(nil, codec.Version5))
		pub.expectAck(codec.TypePuback, uint16(id+1))
	}
	ack := func(p *codec.Publish) {
		sub.send((&codec.Ack{Type: codec.TypePuback, PacketID: p.PacketID}).Append(nil, codec.Version5))
	}
	first := sub.expectPublish()
	clk.Advance(2*time.Second - time.Millisecond)
	ack(first)
	second := sub.expectPublish()
	if string(second.Payload) != "b" || second.Properties.MessageExpiry != 1 {
		t.Fatalf("a millisecond before its expiry: sent %q with %d s left, want b with 1", second.Payload, second.Properties.MessageExpiry)
	}
	clk.Advance(time.Millisecond)
	ack(second)
	waitFor(t, "the third delivery expired in the queue", func() bool { return s.Counters().DeliveriesExpired.Load() == 1 })
	sub.ping("after the expired delivery") // and no PUBLISH before it
}

// A connection that sends nothing between its packets keeps nothing running:
// once connect_timeout has passed for connections that CONNECTed with no
// keepalive, no timer is armed at all, and they are still served.
func TestIdleConnectionsArmNoTimer(t *testing.T) {
	s, clk := fakeServer(t, netloop.Options{ConnectTimeout: 2 * time.Second})
	var idle []*rawClient
	for _, id := range []string{"a", "b", "c"} {
		c := dial(t, s, codec.Version5)
		c.connect(id, func(p *codec.Connect) { p.KeepAlive = 0 })
		idle = append(idle, c)
	}
	if n := clk.Armed(); n != 1 {
		t.Fatalf("%d timers armed for three connections' connect_timeout, want one for all", n)
	}
	clk.Advance(2 * time.Second)
	if n := clk.Armed(); n != 0 {
		t.Fatalf("%d timers armed for idle connections with no keepalive, want 0", n)
	}
	for _, c := range idle {
		c.ping("an idle connection after connect_timeout")
	}
}

// A socket in the overflow budget whose CONNECT arrived in time is answered
// Server busy even when the broker comes to it after the 100 ms limit (a
// busy machine): the bytes waiting in the socket are read, not refused by a
// deadline already past and reset by a close with them unread.
func TestOverflowCONNECTReadInTimeIsAnsweredBusyWhenTheBrokerIsLate(t *testing.T) {
	s, clk := fakeServer(t, netloop.Options{MaxConnections: 1})
	dial(t, s, codec.Version5).connect("holder", nil)
	armed := clk.Armed()
	late := dial(t, s, codec.Version5)
	late.send((&codec.Connect{Version: codec.Version5, CleanStart: true, KeepAlive: 60, ClientID: []byte("late")}).Append(nil, codec.Version5))
	clk.WaitArmed(armed + 1) // the overflow wait for a slot
	clk.Advance(200 * time.Millisecond)
	h, body, err := late.next(5 * time.Second)
	if err != nil || h.Type != codec.TypeConnack {
		t.Fatalf("want CONNACK Server busy, got %s %v", h.Type, err)
	}
	var ack codec.Connack
	if err := ack.Decode(h, body, codec.Version5); err != nil || ack.ReasonCode != codec.ServerBusy {
		t.Fatalf("CONNACK 0x%02x (%v), want 0x89", byte(ack.ReasonCode), err)
	}
}
