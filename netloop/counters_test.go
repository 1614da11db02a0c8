package netloop_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// waitCount waits for a counter to read want: the loops count after they
// write, so a client can see an answer a moment before its count moves.
func waitCount(t *testing.T, what string, load func() uint64, want uint64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := load()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s counted %d, want %d", what, got, want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func gauge(g *atomic.Int64) func() uint64 { return func() uint64 { return uint64(g.Load()) } }

func TestAnAcceptedConnectionCountsInConnectionsUntilItEnds(t *testing.T) {
	s := startServer(t, netloop.Options{})
	cs := s.Counters()
	c5 := dial(t, s, codec.Version5)
	c5.connect("five", nil)
	c4 := dial(t, s, codec.Version311)
	c4.connect("four", nil)
	waitCount(t, "connections", gauge(&cs.Connections), 2)
	if n := cs.ConnectionsTotal.Load(); n != 2 {
		t.Fatalf("connections accepted counted %d, want 2", n)
	}
	if v311, v5 := s.ConnectedByProtocol(); v311 != 1 || v5 != 1 {
		t.Fatalf("by protocol: 3.1.1 %d, 5 %d; want 1 and 1", v311, v5)
	}
	c5.send([]byte{0xE0, 0x00}) // DISCONNECT
	c5.expectClosed()
	waitCount(t, "connections", gauge(&cs.Connections), 1)
	if n := cs.ConnectionsTotal.Load(); n != 2 {
		t.Fatalf("connections accepted counted %d after one ended, want still 2", n)
	}
}

func TestARefusedConnectIsCountedUnderTheMQTT5CodeDecided(t *testing.T) {
	s := startServer(t, netloop.Options{})
	cs := s.Counters()
	c := dial(t, s, codec.Version5)
	ack := c.connect("m", func(p *codec.Connect) {
		p.Properties.AuthMethod = []byte("SCRAM-SHA-1")
		p.Properties.Present.Set(codec.PropAuthMethod)
	})
	if ack.ReasonCode != codec.BadAuthenticationMethod {
		t.Fatalf("CONNACK 0x%02x, want 0x8c", byte(ack.ReasonCode))
	}
	// A 3.1.1 client refused for its client id is told 0x02 and counted
	// under MQTT 5's name for what was decided.
	old := dial(t, s, codec.Version311)
	ack = old.connect("", func(p *codec.Connect) { p.CleanStart = false })
	if ack.ReasonCode != codec.ConnRefusedIdentifier311 {
		t.Fatalf("CONNACK 0x%02x, want 0x02", byte(ack.ReasonCode))
	}
	waitCount(t, "refused for bad authentication method", func() uint64 {
		return cs.ConnectionsRefused.Load(delivery.ReasonOf(codec.BadAuthenticationMethod))
	}, 1)
	waitCount(t, "refused for client identifier not valid", func() uint64 {
		return cs.ConnectionsRefused.Load(delivery.ReasonOf(codec.ClientIdentifierNotValid))
	}, 1)
	if n := cs.ConnectionsTotal.Load(); n != 0 {
		t.Fatalf("refused connections counted as accepted: %d", n)
	}
	labels := map[string]uint64{}
	cs.ConnectionsRefused.Each(func(r delivery.Reason, n uint64) { labels[r.String()] = n })
	if len(labels) != 2 || labels["bad authentication method"] != 1 || labels["client identifier not valid"] != 1 {
		t.Fatalf("series %v, want one each for the two reasons and no other", labels)
	}
}

func TestAConnectionEndedForAProtocolErrorCountsAsRefused(t *testing.T) {
	s := startServer(t, netloop.Options{})
	cs := s.Counters()
	c := dial(t, s, codec.Version5)
	c.connect("alias", nil)
	p := &codec.Publish{Topic: []byte("t"), Payload: []byte("x")}
	p.Properties.TopicAlias = 17 // above the advertised 16
	p.Properties.Present.Set(codec.PropTopicAlias)
	c.send(p.Append(nil, codec.Version5))
	waitCount(t, "refused for topic alias invalid", func() uint64 {
		return cs.ConnectionsRefused.Load(delivery.ReasonOf(codec.TopicAliasInvalid))
	}, 1)
	waitCount(t, "connections", gauge(&cs.Connections), 0)
}

func TestBytesReceivedAndSentCountEveryByteOnTheWire(t *testing.T) {
	s := startServer(t, netloop.Options{})
	cs := s.Counters()
	c := dial(t, s, codec.Version5)
	connect := (&codec.Connect{Version: codec.Version5, CleanStart: true, KeepAlive: 60, ClientID: []byte("bytes")}).Append(nil, codec.Version5)
	c.send(connect)
	h, _ := c.read()
	connack := h.Total()
	c.send([]byte{0xC0, 0x00}) // PINGREQ
	if h, _ := c.read(); h.Type != codec.TypePingresp {
		t.Fatalf("want PINGRESP, got %s", h.Type)
	}
	waitCount(t, "bytes received", cs.BytesReceived.Load, uint64(len(connect)+2))
	waitCount(t, "bytes sent", cs.BytesSent.Load, uint64(connack+2))
}

func TestPublishesReceivedAndDeliveriesSentCountEachPublish(t *testing.T) {
	s := startServer(t, netloop.Options{})
	cs := s.Counters()
	sub := dial(t, s, codec.Version5)
	sub.connect("sub", nil)
	sub.subscribe(1, "p/#", 0)
	pub := dial(t, s, codec.Version311)
	pub.connect("pub", nil)
	pub.publish("p/1", "a", 0, 0)
	pub.publish("nobody/1", "b", 0, 0)
	sub.expectPublish()
	waitCount(t, "publishes received", cs.PublishesReceived.Load, 2)
	waitCount(t, "deliveries sent", cs.DeliveriesSent.Load, 1)
}

func TestARefusedFilterIsCountedUnderTheCodeDecidedNotThe311Failure(t *testing.T) {
	s := startServer(t, netloop.Options{})
	cs := s.Counters()
	c := dial(t, s, codec.Version311)
	c.connect("sys", nil)
	if codes := c.subscribe(1, "$SYS/#", 0); len(codes) != 1 || codes[0] != codec.SubackFailure311 {
		t.Fatalf("SUBACK %v, want 0x80", codes)
	}
	if n := cs.SubscriptionsRefused.Load(delivery.ReasonOf(codec.NotAuthorized)); n != 1 {
		t.Fatalf("filters refused not authorized counted %d, want 1", n)
	}
	if n := cs.SubscriptionsRefused.Load(delivery.ReasonOf(codec.SubackFailure311)); n != 0 {
		t.Fatalf("the 3.1.1 wire code was counted too: %d", n)
	}
}

func TestADeliveryOverTheClientsMaximumPacketSizeCountsAsTooLarge(t *testing.T) {
	s := startServer(t, netloop.Options{})
	cs := s.Counters()
	sub := dial(t, s, codec.Version5)
	sub.connect("small", func(p *codec.Connect) {
		p.Properties.MaximumPacketSize = 64
		p.Properties.Present.Set(codec.PropMaximumPacketSize)
	})
	sub.subscribe(1, "big/#", 0)
	pub := dial(t, s, codec.Version5)
	pub.connect("pub", nil)
	pub.publish("big/1", string(make([]byte, 200)), 0, 0)
	pub.publish("big/2", "fits", 0, 0)
	if p := sub.expectPublish(); string(p.Payload) != "fits" {
		t.Fatalf("got %q, want only the one that fits", p.Payload)
	}
	waitCount(t, "deliveries too large", cs.DeliveriesTooLarge.Load, 1)
	waitCount(t, "deliveries sent", cs.DeliveriesSent.Load, 1)
}

func TestASessionExpiryAboveTheCapCountsAsShortened(t *testing.T) {
	s := startServer(t, netloop.Options{MaxSessionExpiry: time.Hour})
	cs := s.Counters()
	within := dial(t, s, codec.Version5)
	within.connect("within", func(p *codec.Connect) {
		p.Properties.SessionExpiry = 60
		p.Properties.Present.Set(codec.PropSessionExpiry)
	})
	above := dial(t, s, codec.Version5)
	ack := above.connect("above", func(p *codec.Connect) {
		p.Properties.SessionExpiry = 7200
		p.Properties.Present.Set(codec.PropSessionExpiry)
	})
	if ack.Properties.SessionExpiry != 3600 {
		t.Fatalf("CONNACK Session Expiry %d, want the cap 3600", ack.Properties.SessionExpiry)
	}
	if n := cs.SessionExpiryShortened.Load(); n != 1 {
		t.Fatalf("session expiry shortened counted %d, want 1", n)
	}
}
