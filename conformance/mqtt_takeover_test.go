package conformance

import (
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// RFC 0003 "Sessions: one owner, one ending" (ownership passes with the
// CONNACK; a taken-over connection changes nothing - invariant 17), "Exactly
// once" (outbound QoS 2 resumes under its identifier, MQTT-4.4.0-1), RFC 0002
// "Every reason code, in one place" (0x8E, 0x80); MQTT 5 3.1.4, 4.3.3, 4.4.

// lateAck writes an acknowledgement on a connection the broker may already
// have closed: whether it is read at all is the race the rule is about, so a
// failed write is not the test's failure.
func (c *raw) lateAck(typ codec.Type, id uint16) {
	c.nc.SetWriteDeadline(time.Now().Add(waitLong))
	c.nc.Write((&codec.Ack{Type: typ, PacketID: id}).Append(nil, c.version))
}

// takeOver connects a new connection to the kept session id, which another
// connection holds.
func takeOver(t *testing.T, addr string, v byte, id string) *raw {
	t.Helper()
	newer := dialRaw(t, addr, v)
	if ack := newer.mustConnect(id, session(60)); !ack.SessionPresent {
		t.Fatal("Session Present 0 on taking over a kept session")
	}
	return newer
}

// expectPubrel reads the next packet as the PUBREL for id.
func (c *raw) expectPubrel(id uint16, why string) {
	c.t.Helper()
	h, body := c.read()
	if h.Type != codec.TypePubrel {
		c.t.Fatalf("%s: got %s, want the PUBREL for %d re-sent and never the message again (MQTT-4.4.0-1)", why, h.Type, id)
	}
	var a codec.Ack
	if err := a.Decode(h, body, c.version); err != nil || a.PacketID != id {
		c.t.Fatalf("PUBREL %+v %v, want id %d", a, err, id)
	}
}

func TestMqttTakeoverDuringAnOutboundQoS2ExchangeResumesItWithPubrel(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr, topic, id, old, pub := keptSubscriber(t, v, "q2take", 2)
		pub.publishQoS2(topic+"/x", []byte("once"), 1)
		p := old.expectPublish()
		old.sendAck(codec.TypePubrec, p.PacketID)
		old.expectAck(codec.TypePubrel, p.PacketID) // the old connection never sends its PUBCOMP
		newer := takeOver(t, addr, v, id)
		old.expectClosed()
		newer.expectPubrel(p.PacketID, "on the connection that took the session over")
		newer.sendAck(codec.TypePubcomp, p.PacketID)
		newer.expectNothing("after the exchange completed on the new connection")
	})
}

// TestMqttLatePubcompOnTheTakenOverConnectionNeverBringsTheMessageBack: the
// old connection's PUBCOMP may be read before or after the broker ends it;
// either way the message is never sent again, and whatever the session still
// owes is a PUBREL, which the new connection completes.
func TestMqttLatePubcompOnTheTakenOverConnectionNeverBringsTheMessageBack(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr, topic, id, old, pub := keptSubscriber(t, v, "latecomp", 2)
		pub.publishQoS2(topic+"/x", []byte("once"), 1)
		p := old.expectPublish()
		old.sendAck(codec.TypePubrec, p.PacketID)
		old.expectAck(codec.TypePubrel, p.PacketID)
		newer := takeOver(t, addr, v, id)
		old.lateAck(codec.TypePubcomp, p.PacketID)
		old.expectClosed()
		pub.publishQoS2(topic+"/x", []byte("next"), 2)
		for {
			h, body := newer.read()
			if h.Type == codec.TypePubrel {
				var a codec.Ack
				if err := a.Decode(h, body, v); err != nil || a.PacketID != p.PacketID {
					t.Fatalf("PUBREL %+v %v, want id %d", a, err, p.PacketID)
				}
				newer.sendAck(codec.TypePubcomp, a.PacketID)
				continue
			}
			if h.Type != codec.TypePublish {
				t.Fatalf("got %s, want the PUBREL still owed or the next message", h.Type)
			}
			var got codec.Publish
			if err := got.Decode(h, body, v); err != nil {
				t.Fatal(err)
			}
			if string(got.Payload) != "next" {
				t.Fatalf("got %q again on the new connection: a QoS 2 message past its PUBREC is never re-sent (MQTT-4.4.0-1)", got.Payload)
			}
			break
		}
	})
}

// TestMqttLatePubrecOnTheTakenOverConnectionLeavesTheExchangeToTheNewOne:
// a PUBREC read on a connection that no longer owns the session is not
// recorded (invariant 17), so the new connection is sent the PUBLISH again,
// with DUP under its identifier, and completes the exchange once.
func TestMqttLatePubrecOnTheTakenOverConnectionLeavesTheExchangeToTheNewOne(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr, topic, id, old, pub := keptSubscriber(t, v, "laterec", 2)
		pub.publishQoS2(topic+"/x", []byte("once"), 1)
		p := old.expectPublish()
		newer := takeOver(t, addr, v, id)
		old.lateAck(codec.TypePubrec, p.PacketID)
		old.expectClosed()
		again := newer.expectPublish()
		if string(again.Payload) != "once" || again.PacketID != p.PacketID || !again.Dup || again.QoS != 2 {
			t.Fatalf("the new connection got %q id %d DUP %v QoS %d, want the PUBLISH again under id %d with DUP", again.Payload, again.PacketID, again.Dup, again.QoS, p.PacketID)
		}
		newer.sendAck(codec.TypePubrec, again.PacketID)
		newer.expectPubrel(again.PacketID, "after the new connection's PUBREC")
		newer.sendAck(codec.TypePubcomp, again.PacketID)
		newer.expectNothing("after the exchange completed")
	})
}

// TestMqttConnectsRacingForOneClientIDLeaveExactlyOneOwner: two resuming
// CONNECTs sent back to back for a client id a third connection holds. The
// broker serialises them (RFC 0003 "A CONNECT that a newer one is queued to
// replace"): the one it answers last owns the session and is served; every
// other is ended with 0x8E (a bare close on 3.1.1), never left half-owning.
func TestMqttConnectsRacingForOneClientIDLeaveExactlyOneOwner(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr, topic, id, first, pub := keptSubscriber(t, v, "race", 1)
		b, c := dialRaw(t, addr, v), dialRaw(t, addr, v)
		b.send(b.connectPacket(id, session(60)))
		c.send(c.connectPacket(id, session(60)))
		for _, x := range []*raw{b, c} {
			if ack := x.connack(); ack.ReasonCode != codec.Success {
				t.Fatalf("CONNACK 0x%02x for a resuming CONNECT, want success", byte(ack.ReasonCode))
			}
		}
		first.expectClosed() // its 0x8E is TestTakeoverSendsTheOldConnectionSessionTakenOver's rule
		pub.publishQoS1(topic+"/x", []byte("owner"), 1)
		var owners, ended int
		for _, x := range []*raw{b, c} {
			h, body, err := x.next(waitLong)
			switch {
			case err != nil:
				ended++ // 3.1.1: closed with nothing to say
			case h.Type == codec.TypeDisconnect:
				var d codec.Disconnect
				if err := d.Decode(h, body, v); err != nil || d.ReasonCode != codec.SessionTakenOver {
					t.Fatalf("DISCONNECT %v %v, want 0x8E", d.ReasonCode, err)
				}
				x.expectClosed()
				ended++
			case h.Type == codec.TypePublish:
				var p codec.Publish
				if err := p.Decode(h, body, v); err != nil || string(p.Payload) != "owner" {
					t.Fatalf("got %q %v, want the message published to the session", p.Payload, err)
				}
				owners++
			default:
				t.Fatalf("got %s, want the message (owner) or the end (taken over)", h.Type)
			}
		}
		if owners != 1 || ended != 1 {
			t.Fatalf("%d connections served and %d ended, want exactly one owner and the other taken over", owners, ended)
		}
	})
}
