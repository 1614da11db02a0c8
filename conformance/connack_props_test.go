package conformance

import (
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// RFC 0002 "And what the CONNACK promises when it says yes".

func TestConnackPromisesItsLimits(t *testing.T) {
	b := startBroker(t, brokerConfig{Limits: "max_message_size: 64KiB\nmax_connect_size: 16KiB"})
	ack := dialRaw(t, b.addr, codec.Version5).mustConnect("props", nil)
	p := &ack.Properties
	if p.Present.Has(codec.PropMaximumQoS) {
		t.Errorf("Maximum QoS is present (%d); absent means 2", p.MaximumQoS)
	}
	if !p.Present.Has(codec.PropTopicAliasMaximum) || p.TopicAliasMaximum != 16 {
		t.Errorf("Topic Alias Maximum %d (present %v), want 16", p.TopicAliasMaximum, p.Present.Has(codec.PropTopicAliasMaximum))
	}
	if p.MaximumPacketSize != 64<<10 {
		t.Errorf("Maximum Packet Size %d, want limits.max_message_size 65536", p.MaximumPacketSize)
	}
	if !p.Present.Has(codec.PropReceiveMaximum) || p.ReceiveMaximum == 0 {
		t.Errorf("Receive Maximum not given")
	}
	if p.Present.Has(codec.PropRetainAvailable) && p.RetainAvailable != 1 {
		t.Errorf("Retain Available %d, want 1: the retained store keeps broadcast values", p.RetainAvailable)
	}
	if p.Present.Has(codec.PropSessionExpiry) || p.Present.Has(codec.PropServerKeepAlive) {
		t.Errorf("Session Expiry or Server Keep Alive told to a client inside both bounds")
	}
}

func TestSessionExpiryIsCappedAtMaxSessionExpiryAndTold(t *testing.T) {
	b := startBroker(t, brokerConfig{Limits: "max_session_expiry: 1h"})
	ask := func(secs uint32) *codec.Connack {
		return dialRaw(t, b.addr, codec.Version5).mustConnect("exp", func(c *codec.Connect) {
			c.Properties.SessionExpiry = secs
			c.Properties.Present.Set(codec.PropSessionExpiry)
		})
	}
	if ack := ask(7200); !ack.Properties.Present.Has(codec.PropSessionExpiry) || ack.Properties.SessionExpiry != 3600 {
		t.Fatalf("asked 7200 s under a 1h cap: told %d (present %v), want 3600", ack.Properties.SessionExpiry, ack.Properties.Present.Has(codec.PropSessionExpiry))
	}
	if ack := ask(60); ack.Properties.Present.Has(codec.PropSessionExpiry) {
		t.Fatalf("asked 60 s under a 1h cap: told %d; a client inside the cap gets what it asked", ack.Properties.SessionExpiry)
	}
}

func TestServerKeepAliveAnswersAKeepaliveAboveMaxKeepaliveOrZero(t *testing.T) {
	b := startBroker(t, brokerConfig{Limits: "max_keepalive: 30s"})
	ask := func(ka uint16) *codec.Connack {
		return dialRaw(t, b.addr, codec.Version5).mustConnect("ka", func(c *codec.Connect) { c.KeepAlive = ka })
	}
	for _, ka := range []uint16{0, 600} {
		ack := ask(ka)
		if !ack.Properties.Present.Has(codec.PropServerKeepAlive) || ack.Properties.ServerKeepAlive != 30 {
			t.Fatalf("keepalive %d under max_keepalive 30s: Server Keep Alive %d (present %v), want 30", ka, ack.Properties.ServerKeepAlive, ack.Properties.Present.Has(codec.PropServerKeepAlive))
		}
	}
	if ack := ask(10); ack.Properties.Present.Has(codec.PropServerKeepAlive) {
		t.Fatal("a keepalive inside the ceiling was answered with Server Keep Alive")
	}
	// A 3.1.1 client keeps its own: its CONNACK has no properties and the
	// connection is admitted as asked.
	dialRaw(t, b.addr, codec.Version311).mustConnect("ka311", func(c *codec.Connect) { c.KeepAlive = 600 })
}
