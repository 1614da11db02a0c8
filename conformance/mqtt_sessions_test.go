package conformance

import (
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// RFC 0003 "Sessions: one owner, one ending", RFC 0002 "Every session's
// state: broker.session", MQTT 5 sections 3.1.2.4 and 4.1, MQTT 3.1.1 3.1.2.4.

func TestMqttResumedSessionIsAnnouncedWithSessionPresent(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := mqttTarget(t)
		id := clientID(t, "resume")
		c := dialRaw(t, addr, v)
		if ack := c.mustConnect(id, freshSession(60)); ack.SessionPresent {
			t.Fatal("Session Present 1 on a session begun new (MQTT-3.2.2-2)")
		}
		c.disconnect()
		back := dialRaw(t, addr, v)
		if ack := back.mustConnect(id, session(60)); !ack.SessionPresent {
			t.Fatal("Session Present 0 for a session kept inside its expiry (MQTT-3.2.2-3)")
		}
	})
}

func TestMqttResumedSessionKeepsItsSubscriptions(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := mqttTarget(t)
		topic := uniq(t)
		id := clientID(t, "keepsub")
		c := dialRaw(t, addr, v)
		c.mustConnect(id, freshSession(60))
		c.mustSubscribe(1, topic+"/#", 1)
		c.disconnect()
		back := dialRaw(t, addr, v)
		back.mustConnect(id, session(60))
		pub := dialRaw(t, addr, v)
		pub.mustConnect(clientID(t, "pub"), nil)
		pub.publishQoS1(topic+"/x", []byte("kept"), 1)
		if p := back.expectPublish(); string(p.Payload) != "kept" {
			t.Fatalf("got %q, want the publish through the kept subscription", p.Payload)
		}
	})
}

func TestMqttCleanStartDiscardsTheSession(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := mqttTarget(t)
		topic := uniq(t)
		id := clientID(t, "clean")
		c := dialRaw(t, addr, v)
		c.mustConnect(id, freshSession(60))
		c.mustSubscribe(1, topic+"/#", 1)
		c.disconnect()
		back := dialRaw(t, addr, v)
		if ack := back.mustConnect(id, nil); ack.SessionPresent {
			t.Fatal("Session Present 1 on a Clean Start CONNECT (MQTT-3.2.2-2)")
		}
		pub := dialRaw(t, addr, v)
		pub.mustConnect(clientID(t, "pub"), nil)
		pub.publishQoS1(topic+"/x", []byte("gone"), 1)
		back.expectNothing("a subscription of the discarded session")
	})
}

func TestMqttQoS1PublishedWhileAwayIsDeliveredOnResume(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := mqttTarget(t)
		topic := uniq(t)
		id := clientID(t, "away")
		c := dialRaw(t, addr, v)
		c.mustConnect(id, freshSession(60))
		c.mustSubscribe(1, topic+"/#", 1)
		c.disconnect()
		pub := dialRaw(t, addr, v)
		pub.mustConnect(clientID(t, "pub"), nil)
		for i := 1; i <= 3; i++ {
			pub.publishQoS1(topic+"/x", []byte{byte('0' + i)}, uint16(i))
		}
		back := dialRaw(t, addr, v)
		back.mustConnect(id, session(60))
		for i := 1; i <= 3; i++ {
			p := back.expectPublish()
			if p.QoS != 1 || string(p.Payload) != string([]byte{byte('0' + i)}) {
				t.Fatalf("delivery %d: %q at QoS %d, want %q at QoS 1 in publish order", i, p.Payload, p.QoS, []byte{byte('0' + i)})
			}
			back.ackDelivery(p)
		}
	})
}

func TestMqttQoS0PublishedWhileAwayIsNotKept(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := mqttTarget(t)
		topic := uniq(t)
		id := clientID(t, "away0")
		c := dialRaw(t, addr, v)
		c.mustConnect(id, freshSession(60))
		c.mustSubscribe(1, topic+"/#", 0)
		c.disconnect()
		pub := dialRaw(t, addr, v)
		pub.mustConnect(clientID(t, "pub"), nil)
		pub.publish(topic+"/x", []byte("qos0"), 0, 0)
		pub.publishQoS1(topic+"/x", []byte("qos1"), 1) // QoS 1 publish, granted 0
		pub.ping()
		back := dialRaw(t, addr, v)
		back.mustConnect(id, session(60))
		// What the session kept is sent before anything published now.
		pub.publish(topic+"/x", []byte("end"), 0, 0)
		for _, p := range back.readUntil("end") {
			if p.QoS == 0 {
				t.Fatalf("a QoS 0 delivery %q was kept for an away session (RFC 0003 \"Broadcast\": QoS 0 is served from memory only)", p.Payload)
			}
		}
	})
}

func TestMqttUnacknowledgedQoS1IsResentWithDupUnderItsPacketIdentifier(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr, topic, id, c, pub := keptSubscriber(t, v, "dup", 1)
		pub.publishQoS1(topic+"/x", []byte("again"), 1)
		first := c.expectPublish()
		if first.Dup {
			t.Fatal("first delivery carries DUP")
		}
		c.drop() // never acknowledged
		back := dialRaw(t, addr, v)
		if ack := back.mustConnect(id, session(60)); !ack.SessionPresent {
			t.Fatal("Session Present 0")
		}
		again := back.expectPublish()
		if !again.Dup || again.PacketID != first.PacketID || string(again.Payload) != "again" {
			t.Fatalf("re-sent DUP %v id %d %q, want DUP 1 under id %d (MQTT-4.4.0-1)", again.Dup, again.PacketID, again.Payload, first.PacketID)
		}
		back.ackDelivery(again)
		back.expectNothing("after the acknowledged re-send")
	})
}

func TestMqttAcknowledgedQoS1IsNotResentOnResume(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr, topic, id, c, pub := keptSubscriber(t, v, "acked", 1)
		pub.publishQoS1(topic+"/x", []byte("once"), 1)
		p := c.expectPublish()
		c.ackDelivery(p)
		c.disconnect() // a clean DISCONNECT stores the acknowledgement first (invariant 18)
		back := dialRaw(t, addr, v)
		back.mustConnect(id, session(60))
		back.expectNothing("an acknowledged delivery after a clean DISCONNECT")
	})
}

func TestMqttSessionEndsWhenItsExpiryPasses(t *testing.T) {
	addr := mqttTarget(t)
	id := clientID(t, "expire")
	c := dialRaw(t, addr, codec.Version5)
	c.mustConnect(id, freshSession(1))
	c.disconnect()
	// The rule's subject is time: the session must be gone once its one
	// second has passed, however the broker sweeps.
	<-time.After(2500 * time.Millisecond)
	back := dialRaw(t, addr, codec.Version5)
	if ack := back.mustConnect(id, session(60)); ack.SessionPresent {
		t.Fatal("Session Present 1 after the session's expiry passed (MQTT-3.1.2-23)")
	}
}

func TestMqttSessionExpiryFromDisconnectReplacesTheConnects(t *testing.T) {
	addr := mqttTarget(t)
	id := clientID(t, "discexp")
	c := dialRaw(t, addr, codec.Version5)
	c.mustConnect(id, freshSession(60))
	d := &codec.Disconnect{}
	d.Properties.SessionExpiry = 1
	d.Properties.Present.Set(codec.PropSessionExpiry)
	c.send(d.Append(nil, codec.Version5))
	c.expectClosed()
	<-time.After(2500 * time.Millisecond)
	back := dialRaw(t, addr, codec.Version5)
	if ack := back.mustConnect(id, session(60)); ack.SessionPresent {
		t.Fatal("Session Present 1: the DISCONNECT's Session Expiry Interval 1 was not applied (MQTT 5 3.14.2.2.2)")
	}
}

func TestMqttTakeoverOfAKeptSessionResumesIt(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := mqttTarget(t)
		topic := uniq(t)
		id := clientID(t, "take")
		old := dialRaw(t, addr, v)
		old.mustConnect(id, freshSession(60))
		old.mustSubscribe(1, topic+"/#", 1)
		newer := dialRaw(t, addr, v)
		if ack := newer.mustConnect(id, session(60)); !ack.SessionPresent {
			t.Fatal("Session Present 0 on taking over a kept session")
		}
		old.expectClosed() // its 0x8E is TestTakeoverSendsTheOldConnectionSessionTakenOver's rule
		pub := dialRaw(t, addr, v)
		pub.mustConnect(clientID(t, "pub"), nil)
		pub.publishQoS1(topic+"/x", []byte("moved"), 1)
		if p := newer.expectPublish(); string(p.Payload) != "moved" {
			t.Fatalf("got %q", p.Payload)
		}
	})
}

// TestMqttTakeoverOfAConnectionBoundSessionStartsAFreshOne: a session that
// ends with its connection ends at the takeover that closes it, so the new
// connection is told Session Present 0 whatever its Clean Start says (RFC
// 0003 "Sessions"; MQTT 5 3.1.2.11.2 with Session Expiry 0).
func TestMqttTakeoverOfAConnectionBoundSessionStartsAFreshOne(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := mqttTarget(t)
		topic := uniq(t)
		id := clientID(t, "bound")
		old := dialRaw(t, addr, v)
		old.mustConnect(id, nil) // Clean Start 1 and no Session Expiry / cleanSession 1
		old.mustSubscribe(1, topic+"/#", 1)
		newer := dialRaw(t, addr, v)
		if ack := newer.mustConnect(id, session(60)); ack.SessionPresent {
			t.Fatal("Session Present 1 for a session that ended with the connection it took over")
		}
		old.expectClosed()
		pub := dialRaw(t, addr, v)
		pub.mustConnect(clientID(t, "pub"), nil)
		pub.publishQoS1(topic+"/x", []byte("no"), 1)
		newer.expectNothing("a subscription of the ended session")
	})
}

func TestSessionExpiryIsCappedAtMaxSessionExpiryAndTheClientIsTold(t *testing.T) {
	saguinOnly(t, "limits.max_session_expiry is Sagüin's key")
	b := startBroker(t, brokerConfig{Limits: "max_session_expiry: 60s"})
	c := dialRaw(t, b.addr, codec.Version5)
	ack := c.mustConnect(clientID(t, "cap"), freshSession(3600))
	if !ack.Properties.Present.Has(codec.PropSessionExpiry) || ack.Properties.SessionExpiry != 60 {
		t.Fatalf("CONNACK Session Expiry Interval %d (present %v), want the granted 60 (RFC 0002 \"And what the CONNACK promises\")",
			ack.Properties.SessionExpiry, ack.Properties.Present.Has(codec.PropSessionExpiry))
	}
}

func TestMqttClientWithEmptyIDAskingForASessionIsRefused(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		c := dialRaw(t, mqttTarget(t), v)
		ack := c.connect("", session(60))
		want := codec.ClientIdentifierNotValid
		if v == codec.Version311 {
			want = codec.ConnRefusedIdentifier311
		}
		if ack.ReasonCode != want {
			t.Fatalf("CONNACK 0x%02x, want 0x%02x (MQTT-3.1.3-8)", byte(ack.ReasonCode), byte(want))
		}
	})
}

func TestMqttClientWithEmptyIDIsAssignedOne(t *testing.T) {
	c := dialRaw(t, mqttTarget(t), codec.Version5)
	ack := c.mustConnect("", nil)
	if len(ack.Properties.AssignedClientID) == 0 {
		t.Fatal("no Assigned Client Identifier for a zero-length client id (MQTT-3.2.2-16)")
	}
}

func TestMqttTakeoverCarriesUnacknowledgedDeliveriesToTheNewConnection(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr, topic, id, old, pub := keptSubscriber(t, v, "take", 1)
		pub.publishQoS1(topic+"/x", []byte("in flight"), 1)
		first := old.expectPublish() // not acknowledged
		newer := dialRaw(t, addr, v)
		newer.mustConnect(id, session(60))
		old.expectClosed()
		again := newer.expectPublish()
		if string(again.Payload) != "in flight" || again.PacketID != first.PacketID || !again.Dup {
			t.Fatalf("the new connection got %q id %d DUP %v, want the unacknowledged delivery under id %d with DUP (RFC 0003 \"Sessions\": deliveries owed move)",
				again.Payload, again.PacketID, again.Dup, first.PacketID)
		}
	})
}

func TestMqttResumedDeliveriesStayInsideTheReceiveMaximum(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	id := clientID(t, "win")
	c := dialRaw(t, addr, codec.Version5)
	c.mustConnect(id, freshSession(60))
	c.mustSubscribe(1, topic+"/#", 1)
	c.disconnect()
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	for i := 1; i <= 6; i++ {
		pub.publishQoS1(topic+"/x", []byte{byte('0' + i)}, uint16(i))
	}
	back := dialRaw(t, addr, codec.Version5)
	back.mustConnect(id, both(session(60), func(p *codec.Connect) {
		p.Properties.ReceiveMaximum = 2
		p.Properties.Present.Set(codec.PropReceiveMaximum)
	}))
	first := back.expectPublish()
	back.expectPublish()
	if extra := back.ping(); len(extra) != 0 {
		t.Fatalf("%d more deliveries with two unacknowledged under Receive Maximum 2 (MQTT-3.3.4-9)", len(extra))
	}
	back.ackDelivery(first)
	if p := back.expectPublish(); p.Payload[0] != '3' {
		t.Fatalf("after one acknowledgement got %q, want the third in order", p.Payload)
	}
}

func TestMqttPubrecWithAnErrorCodeEndsTheOutboundExchange(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect(clientID(t, "sub"), nil)
	sub.mustSubscribe(1, topic+"/#", 2)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.publishQoS2(topic+"/x", []byte("refused"), 1)
	p := sub.expectPublish()
	sub.send((&codec.Ack{Type: codec.TypePubrec, PacketID: p.PacketID, ReasonCode: codec.UnspecifiedError}).Append(nil, codec.Version5))
	pub.publishQoS2(topic+"/x", []byte("next"), 2)
	h, body := sub.read()
	if h.Type != codec.TypePublish {
		t.Fatalf("got %s after a PUBREC 0x80, want no PUBREL: the exchange ended (MQTT 5 4.3.3)", h.Type)
	}
	var next codec.Publish
	if err := next.Decode(h, body, codec.Version5); err != nil || string(next.Payload) != "next" {
		t.Fatalf("got %q %v, want the next message", next.Payload, err)
	}
}

func TestSessionExpiryThatNeverEndsIsCappedAtThirtyDaysByDefault(t *testing.T) {
	saguinOnly(t, "limits.max_session_expiry's default is Sagüin's")
	c := dialRaw(t, mqttTarget(t), codec.Version5)
	ack := c.mustConnect(clientID(t, "forever"), freshSession(0xFFFFFFFF))
	if !ack.Properties.Present.Has(codec.PropSessionExpiry) || ack.Properties.SessionExpiry != 30*24*3600 {
		t.Fatalf("CONNACK Session Expiry %d (present %v), want 2592000: a session that never expires is capped and the client told",
			ack.Properties.SessionExpiry, ack.Properties.Present.Has(codec.PropSessionExpiry))
	}
}
