package conformance

import (
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// MQTT-3.1.2-24: the broker MUST NOT send a packet over the client's Maximum
// Packet Size. A CONNACK that does not fit is never sent: the connection is
// closed and no session is made. A refusal drops its Reason String to fit.
func TestConnackLargerThanTheClientsMaximumPacketSizeIsNeverSent(t *testing.T) {
	addr := target(t)
	maxPacket := func(n uint32) func(*codec.Connect) {
		return func(p *codec.Connect) {
			p.Properties.MaximumPacketSize = n
			p.Properties.Present.Set(codec.PropMaximumPacketSize)
		}
	}
	// The size of the success CONNACK this broker sends such a client.
	probe := dialRaw(t, addr, codec.Version5)
	probe.send(probe.connectPacket(clientID(t, "probe"), nil))
	h, _ := probe.read()
	if h.Type != codec.TypeConnack {
		t.Fatalf("want CONNACK, got %s", h.Type)
	}
	size := uint32(h.Total())

	id := clientID(t, "small")
	small := dialRaw(t, addr, codec.Version5)
	small.send(small.connectPacket(id, both(persistent(codec.Version5), maxPacket(size-1))))
	small.expectClosedSilently()

	again := dialRaw(t, addr, codec.Version5)
	if ack := again.mustConnect(id, persistent(codec.Version5)); ack.SessionPresent {
		t.Fatal("Session Present 1: the connection whose CONNACK was never sent made a session")
	}
	again.send((&codec.Disconnect{Properties: codec.Properties{}}).Append(nil, codec.Version5))

	exact := dialRaw(t, addr, codec.Version5)
	exact.send(exact.connectPacket(clientID(t, "exact"), maxPacket(size)))
	if h, _ := exact.read(); h.Type != codec.TypeConnack || uint32(h.Total()) > size {
		t.Fatalf("Maximum Packet Size %d: got %s of %d bytes, want the CONNACK within it", size, h.Type, h.Total())
	}

	// A refusal (an Authentication Method Sagüin does not run) with room for
	// its code alone: the Reason String goes, the code is told.
	auth := func(p *codec.Connect) {
		p.Properties.AuthMethod = []byte("SCRAM-SHA-256")
		p.Properties.Present.Set(codec.PropAuthMethod)
	}
	bare := dialRaw(t, addr, codec.Version5)
	bare.send(bare.connectPacket(clientID(t, "bare"), both(auth, maxPacket(5))))
	h, body := bare.read()
	var ack codec.Connack
	if h.Type != codec.TypeConnack || ack.Decode(h, body, codec.Version5) != nil {
		t.Fatalf("want a CONNACK, got %s", h.Type)
	}
	if h.Total() > 5 || ack.ReasonCode != codec.BadAuthenticationMethod {
		t.Fatalf("refusal CONNACK of %d bytes with code 0x%02x; want 0x8C within 5 bytes", h.Total(), byte(ack.ReasonCode))
	}
	bare.expectClosed()

	// No room even for the code: closed with nothing written.
	none := dialRaw(t, addr, codec.Version5)
	none.send(none.connectPacket(clientID(t, "none"), both(auth, maxPacket(4))))
	none.expectClosedSilently()
}
