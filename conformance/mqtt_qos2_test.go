package conformance

import (
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// RFC 0003 "Exactly once, and where the unfinished ones wait", RFC 0002
// "Exactly-once publishes: broker.qos2" and "Publishing" (the PUBREC row);
// MQTT 5 4.3.3 and 4.4, MQTT 3.1.1 4.3.3.

func TestMqttQoS2PublishSentTwiceBeforeItsPubrelIsDeliveredOnce(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := mqttTarget(t)
		topic := uniq(t)
		sub := dialRaw(t, addr, v)
		sub.mustConnect(clientID(t, "sub"), nil)
		sub.mustSubscribe(1, topic+"/#", 2)
		pub := dialRaw(t, addr, v)
		pub.mustConnect(clientID(t, "pub"), nil)
		p := &codec.Publish{QoS: 2, PacketID: 7, Topic: []byte(topic + "/x"), Payload: []byte("one")}
		pub.sendPublish(p)
		pub.expectAck(codec.TypePubrec, 7)
		p.Dup = true
		pub.sendPublish(p)
		pub.expectAck(codec.TypePubrec, 7)
		pub.sendAck(codec.TypePubrel, 7)
		if code := pub.expectAck(codec.TypePubcomp, 7); code != codec.Success {
			t.Fatalf("PUBCOMP 0x%02x", byte(code))
		}
		pub.publishQoS1(topic+"/x", []byte("end"), 8)
		copies := len(sub.readUntil("end"))
		if copies != 1 {
			t.Fatalf("%d copies delivered, want exactly one (MQTT-4.3.3-?: the message lands once however often its PUBLISH is re-sent)", copies)
		}
	})
}

// TestQoS2BroadcastReachesSubscribersAtItsPubrel: RFC 0003 "Exactly once" -
// the message is held from PUBREC and released at PUBREL, so nothing is
// delivered before the PUBREL.
func TestQoS2BroadcastReachesSubscribersAtItsPubrel(t *testing.T) {
	saguinOnly(t, "MQTT allows delivery at PUBLISH (Mosquitto's method); RFC 0003 delivers at PUBREL")
	addr := mqttTarget(t)
	topic := uniq(t)
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect(clientID(t, "sub"), nil)
	sub.mustSubscribe(1, topic+"/#", 1)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.publish(topic+"/x", []byte("held"), 2, 3)
	pub.expectAck(codec.TypePubrec, 3)
	sub.expectNothing("a QoS 2 publish delivered before its PUBREL")
	pub.sendAck(codec.TypePubrel, 3)
	pub.expectAck(codec.TypePubcomp, 3)
	if p := sub.expectPublish(); string(p.Payload) != "held" {
		t.Fatalf("got %q", p.Payload)
	}
}

// TestPubrelForAnUnknownPacketIdentifierIsAnsweredPubcomp0x92: RFC 0002's
// 0x92 row. MQTT 5 3.7.2.1 defines 0x92 for this and Mosquitto 2.0 answers
// 0x00, which MQTT does not forbid in words; RFC 0002 requires 0x92.
func TestPubrelForAnUnknownPacketIdentifierIsAnsweredPubcomp0x92(t *testing.T) {
	saguinOnly(t, "RFC 0002 requires PUBCOMP 0x92 where Mosquitto answers 0x00")
	c := dialRaw(t, mqttTarget(t), codec.Version5)
	c.mustConnect(clientID(t, "rel"), nil)
	c.sendAck(codec.TypePubrel, 77)
	if code := c.expectAck(codec.TypePubcomp, 77); code != codec.PacketIdentifierNotFound {
		t.Fatalf("PUBCOMP 0x%02x, want 0x92 (MQTT 5 3.7.2.1)", byte(code))
	}
}

func TestMqttQoS2ExchangeIsFinishedOnTheResumedSession(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := mqttTarget(t)
		topic := uniq(t)
		sub := dialRaw(t, addr, v)
		sub.mustConnect(clientID(t, "sub"), nil)
		sub.mustSubscribe(1, topic+"/#", 1)
		id := clientID(t, "pub")
		pub := dialRaw(t, addr, v)
		pub.mustConnect(id, freshSession(60))
		pub.publish(topic+"/x", []byte("resumed"), 2, 11)
		pub.expectAck(codec.TypePubrec, 11)
		pub.drop()
		back := dialRaw(t, addr, v)
		if ack := back.mustConnect(id, session(60)); !ack.SessionPresent {
			t.Fatal("Session Present 0 for a session holding an exchange")
		}
		back.sendAck(codec.TypePubrel, 11)
		if code := back.expectAck(codec.TypePubcomp, 11); code != codec.Success {
			t.Fatalf("PUBCOMP 0x%02x for the exchange the session kept", byte(code))
		}
		back.publishQoS1(topic+"/x", []byte("end"), 12)
		n := len(sub.readUntil("end"))
		if n != 1 {
			t.Fatalf("delivered %d times, want once", n)
		}
	})
}

// TestQoS2ExchangeEndsWithItsSessionAndItsPubrelIsAnswered0x92: RFC 0003
// "Sessions" (exactly-once publishes end with the session, counted as
// abandoned) and RFC 0002's 0x92 row.
func TestQoS2ExchangeEndsWithItsSessionAndItsPubrelIsAnswered0x92(t *testing.T) {
	saguinOnly(t, "RFC 0002 requires PUBCOMP 0x92 where Mosquitto answers 0x00")
	addr := mqttTarget(t)
	topic := uniq(t)
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect(clientID(t, "sub"), nil)
	sub.mustSubscribe(1, topic+"/#", 1)
	id := clientID(t, "pub")
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(id, freshSession(60))
	pub.publish(topic+"/x", []byte("abandoned"), 2, 12)
	pub.expectAck(codec.TypePubrec, 12)
	pub.drop()
	back := dialRaw(t, addr, codec.Version5)
	back.mustConnect(id, nil) // Clean Start ends the session and its exchange
	back.sendAck(codec.TypePubrel, 12)
	if code := back.expectAck(codec.TypePubcomp, 12); code != codec.PacketIdentifierNotFound {
		t.Fatalf("PUBCOMP 0x%02x, want 0x92 for an exchange its session took with it", byte(code))
	}
	for _, p := range sub.ping() {
		if string(p.Payload) == "abandoned" {
			t.Fatal("an exchange ended with its session was delivered")
		}
	}
}

func TestQoS2ExchangesPastMaxInflightPerClientAreRefusedOnPubrec(t *testing.T) {
	saguinOnly(t, "broker.qos2.max_inflight_per_client is Sagüin's key")
	b := startSaguin(t, t.TempDir(), saguinYAML(memoryStorage, "qos2:\n  max_inflight_per_client: 2"))
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect(clientID(t, "pub"), nil)
	topic := uniq(t)
	for i := uint16(1); i <= 2; i++ {
		c.publish(topic, []byte("x"), 2, i)
		if code := c.expectAck(codec.TypePubrec, i); code != codec.Success {
			t.Fatalf("PUBREC %d: 0x%02x", i, byte(code))
		}
	}
	c.publish(topic, []byte("x"), 2, 3)
	if code := c.expectAck(codec.TypePubrec, 3); code != codec.QuotaExceeded {
		t.Fatalf("third exchange: PUBREC 0x%02x, want 0x97", byte(code))
	}
	// Inside a bound, not misbehaving: the connection stays, and once one of
	// its own completes the next exchange is taken.
	c.sendAck(codec.TypePubrel, 1)
	c.expectAck(codec.TypePubcomp, 1)
	c.publish(topic, []byte("x"), 2, 4)
	if code := c.expectAck(codec.TypePubrec, 4); code != codec.Success {
		t.Fatalf("after a release: PUBREC 0x%02x, want 0x00", byte(code))
	}
}

func TestQoS2HeldPastExpiresAfterIsDroppedAndItsPubrelAnswered0x92(t *testing.T) {
	saguinOnly(t, "broker.qos2.expires_after is Sagüin's key")
	b := startSaguin(t, t.TempDir(), saguinYAML(memoryStorage, "qos2:\n  expires_after: 1s"))
	topic := uniq(t)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect(clientID(t, "sub"), nil)
	sub.mustSubscribe(1, topic+"/#", 1)
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect(clientID(t, "pub"), nil)
	c.publish(topic+"/x", []byte("late"), 2, 1)
	c.expectAck(codec.TypePubrec, 1)
	<-time.After(2500 * time.Millisecond) // the rule's subject is the second passing
	c.sendAck(codec.TypePubrel, 1)
	if code := c.expectAck(codec.TypePubcomp, 1); code != codec.PacketIdentifierNotFound {
		t.Fatalf("PUBCOMP 0x%02x, want 0x92 after expires_after", byte(code))
	}
	sub.expectNothing("an expired exchange was delivered")
}

func TestMqttOutboundQoS2AwaitingPubcompIsResumedWithPubrel(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr, topic, id, sub, pub := keptSubscriber(t, v, "sub", 2)
		pub.publishQoS2(topic+"/x", []byte("x"), 1)
		p := sub.expectPublish()
		sub.sendAck(codec.TypePubrec, p.PacketID)
		sub.expectAck(codec.TypePubrel, p.PacketID)
		sub.drop() // no PUBCOMP
		back := dialRaw(t, addr, v)
		back.mustConnect(id, session(60))
		h, body := back.read()
		if h.Type != codec.TypePubrel {
			t.Fatalf("on resume got %s, want the PUBREL re-sent, never the message again (MQTT-4.4.0-1)", h.Type)
		}
		var a codec.Ack
		if err := a.Decode(h, body, v); err != nil || a.PacketID != p.PacketID {
			t.Fatalf("PUBREL %+v %v, want id %d", a, err, p.PacketID)
		}
		back.sendAck(codec.TypePubcomp, p.PacketID)
		back.expectNothing("after the exchange completed")
	})
}

func TestMqttOutboundQoS2NotYetReceivedIsResentAsPublishWithDup(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr, topic, id, sub, pub := keptSubscriber(t, v, "sub", 2)
		pub.publishQoS2(topic+"/x", []byte("x2"), 1)
		p := sub.expectPublish()
		sub.drop() // no PUBREC
		back := dialRaw(t, addr, v)
		back.mustConnect(id, session(60))
		again := back.expectPublish()
		if !again.Dup || again.PacketID != p.PacketID || again.QoS != 2 || string(again.Payload) != "x2" {
			t.Fatalf("re-sent DUP %v id %d QoS %d %q, want DUP 1 under id %d", again.Dup, again.PacketID, again.QoS, again.Payload, p.PacketID)
		}
	})
}

// TestRetainedQoS2ValueIsStoredAtItsRelease: RFC 0003 "Exactly once" - the
// retained value of a QoS 2 broadcast is stored at release, so no subscriber
// is served the retained value of a never-released publish.
func TestRetainedQoS2ValueIsStoredAtItsRelease(t *testing.T) {
	saguinOnly(t, "MQTT lets a server store at PUBLISH; RFC 0003 stores at PUBREL")
	addr := mqttTarget(t)
	topic := uniq(t)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.sendPublish(&codec.Publish{QoS: 2, PacketID: 3, Retain: true, Topic: []byte(topic + "/a"), Payload: []byte("held")})
	pub.expectAck(codec.TypePubrec, 3)
	early := dialRaw(t, addr, codec.Version5)
	early.mustConnect(clientID(t, "early"), nil)
	early.mustSubscribe(1, topic+"/#", 1)
	early.expectNothing("the retained value of a publish not yet released")
	pub.sendAck(codec.TypePubrel, 3)
	pub.expectAck(codec.TypePubcomp, 3)
	if p := early.expectPublish(); string(p.Payload) != "held" || p.Retain {
		t.Fatalf("the early subscriber got %q retain %v, want the live delivery at release", p.Payload, p.Retain)
	}
	late := dialRaw(t, addr, codec.Version5)
	late.mustConnect(clientID(t, "late"), nil)
	late.mustSubscribe(1, topic+"/#", 1)
	if p := late.expectPublish(); string(p.Payload) != "held" || !p.Retain {
		t.Fatalf("the late subscriber got %q retain %v, want the retained value", p.Payload, p.Retain)
	}
}
