package conformance

import (
	"strings"
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// RFC 0002 "Every reason code, in one place": each CONNACK refusal, and the
// 3.1.1 return code it maps to.

// refusal checks that a CONNECT built by mutate is refused with want5 under
// MQTT 5 and want311 under 3.1.1, and the connection then closed.
func refusal(t *testing.T, cfg brokerConfig, id string, mutate func(*codec.Connect), want5, want311 codec.ReasonCode) {
	t.Helper()
	versions(t, func(t *testing.T, v byte) {
		b := startBroker(t, cfg)
		c := dialRaw(t, b.addr, v)
		ack := c.connect(id, mutate)
		want := want5
		if v == codec.Version311 {
			want = want311
		}
		if ack.ReasonCode != want || ack.SessionPresent {
			t.Fatalf("CONNACK 0x%02x present=%v, want 0x%02x", byte(ack.ReasonCode), ack.SessionPresent, byte(want))
		}
		c.expectClosed()
	})
}

func TestClientIDOverMaxClientIDLengthIsRefused(t *testing.T) {
	refusal(t, brokerConfig{Limits: "max_client_id_length: 23"}, strings.Repeat("x", 24), nil,
		codec.ClientIdentifierNotValid, codec.ConnRefusedIdentifier311)
}

func TestClientIDHoldingAControlCharacterIsRefused(t *testing.T) {
	refusal(t, brokerConfig{}, "dev\x07ice", nil, codec.ClientIdentifierNotValid, codec.ConnRefusedIdentifier311)
}

func TestZeroLengthClientIDAskingForASessionIsRefused(t *testing.T) {
	refusal(t, brokerConfig{}, "", func(c *codec.Connect) {
		c.CleanStart = false
		if c.Version == codec.Version5 {
			c.Properties.SessionExpiry = 60
			c.Properties.Present.Set(codec.PropSessionExpiry)
		}
	}, codec.ClientIdentifierNotValid, codec.ConnRefusedIdentifier311)
}

func TestZeroLengthClientIDWithoutASessionIsAssignedOne(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		c := dialRaw(t, target(t), v)
		ack := c.mustConnect("", nil)
		if v == codec.Version5 && len(ack.Properties.AssignedClientID) == 0 {
			t.Fatal("CONNACK carries no Assigned Client Identifier")
		}
	})
}

func TestUserNameHoldingAControlCharacterIsRefused(t *testing.T) {
	refusal(t, brokerConfig{}, "c", func(c *codec.Connect) {
		c.UsernameFlag, c.Username = true, []byte("dev\x01ice")
	}, codec.BadUserNameOrPassword, codec.ConnRefusedBadUserNamePassword)
}

func TestConnectWithItsReservedFlagSetIsRefused(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		b := startBroker(t, brokerConfig{})
		c := dialRaw(t, b.addr, v)
		pkt := c.connectPacket("c", nil)
		// Connect flags follow the fixed header (2 bytes), the protocol name
		// (6) and the level (1).
		pkt[2+6+1] |= 0x01
		c.send(pkt)
		want := codec.MalformedPacket
		if v == codec.Version311 {
			want = codec.ConnRefusedNotAuthorized311
		}
		if ack := c.connack(); ack.ReasonCode != want {
			t.Fatalf("CONNACK 0x%02x, want 0x%02x", byte(ack.ReasonCode), byte(want))
		}
		c.expectClosed()
	})
}

func TestWillRetainWithoutAWillIsRefused(t *testing.T) {
	refusal(t, brokerConfig{}, "c", func(c *codec.Connect) { c.WillRetain = true },
		codec.ProtocolError, codec.ConnRefusedNotAuthorized311)
}

func TestWillQoSThreeIsRefused(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		b := startBroker(t, brokerConfig{})
		c := dialRaw(t, b.addr, v)
		pkt := c.connectPacket("c", func(p *codec.Connect) {
			p.WillFlag, p.WillTopic, p.WillPayload = true, []byte("w"), []byte("x")
		})
		pkt[2+6+1] |= 0x18 // Will QoS 3
		c.send(pkt)
		want := codec.MalformedPacket
		if v == codec.Version311 {
			want = codec.ConnRefusedNotAuthorized311
		}
		if ack := c.connack(); ack.ReasonCode != want {
			t.Fatalf("CONNACK 0x%02x, want 0x%02x", byte(ack.ReasonCode), byte(want))
		}
	})
}

func TestPasswordWithoutUserNameIsRefusedUnder311(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	c := dialRaw(t, b.addr, codec.Version311)
	ack := c.connect("c", func(p *codec.Connect) { p.PasswordFlag, p.Password = true, []byte("pw") })
	if ack.ReasonCode != codec.ConnRefusedNotAuthorized311 {
		t.Fatalf("CONNACK 0x%02x, want 0x05", byte(ack.ReasonCode))
	}
}

func TestWillInTheReservedSpaceIsRefusedTopicNameInvalid(t *testing.T) {
	refusal(t, brokerConfig{}, "c", func(c *codec.Connect) {
		c.WillFlag, c.WillTopic, c.WillPayload = true, []byte("$saguin/queue/x"), []byte("x")
	}, codec.TopicNameInvalid, codec.ConnRefusedNotAuthorized311)
}

func TestAuthenticationMethodIsRefusedBadAuthenticationMethod(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	c := dialRaw(t, b.addr, codec.Version5)
	ack := c.connect("c", func(p *codec.Connect) {
		p.Properties.AuthMethod = []byte("SCRAM-SHA-1")
		p.Properties.Present.Set(codec.PropAuthMethod)
	})
	if ack.ReasonCode != codec.BadAuthenticationMethod {
		t.Fatalf("CONNACK 0x%02x, want 0x8c", byte(ack.ReasonCode))
	}
}

func TestSaguinUserPropertyOnConnectIsRefused(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	c := dialRaw(t, b.addr, codec.Version5)
	ack := c.connect("c", func(p *codec.Connect) { p.Properties.AddUser([]byte("saguin-offset"), []byte("1")) })
	if ack.ReasonCode != codec.ImplementationSpecificError {
		t.Fatalf("CONNACK 0x%02x, want 0x83", byte(ack.ReasonCode))
	}
}

func TestVersionBelowMinProtocolVersionIsRefusedInItsOwnVocabulary(t *testing.T) {
	b := startBroker(t, brokerConfig{MQTT: `min_protocol_version: "5"`})
	c := dialRaw(t, b.addr, codec.Version311)
	if ack := c.connect("c", nil); ack.ReasonCode != codec.ConnRefusedProtocolVersion311 {
		t.Fatalf("CONNACK 0x%02x, want 3.1.1's 0x01", byte(ack.ReasonCode))
	}
	c.expectClosed()
	dialRaw(t, b.addr, codec.Version5).mustConnect("five", nil)
}

func TestMQTT31IsAlwaysRefused(t *testing.T) {
	c := dialRaw(t, target(t), codec.Version311)
	// MQTT 3.1: protocol name MQIsdp, level 3, then flags, keepalive, id.
	body := []byte{0, 6, 'M', 'Q', 'I', 's', 'd', 'p', 3, 0x02, 0, 60, 0, 1, 'c'}
	c.send(append([]byte{0x10, byte(len(body))}, body...))
	h, b := c.read()
	if h.Type != codec.TypeConnack || len(b) != 2 || b[1] != 0x01 {
		t.Fatalf("got %s % x, want CONNACK return code 0x01", h.Type, b)
	}
	c.expectClosed()
}

func TestGarbageBeforeConnectIsClosedWithNothingWritten(t *testing.T) {
	c := dialRaw(t, target(t), codec.Version5)
	c.send([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	c.expectClosedSilently()
}

func TestSecondConnectIsAProtocolError(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		c := dialRaw(t, target(t), v)
		c.mustConnect("twice", nil)
		c.send(c.connectPacket("twice", nil))
		c.expectEnd(codec.ProtocolError)
	})
}
