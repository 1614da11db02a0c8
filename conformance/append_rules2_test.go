package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// Append rules of checklist-channels.md A the audit found untested
// (notes/s22/append-audit.md), from the bottom of its list: each test is
// named after its rule and starts its own broker with the append channel
// "events" on ev/# (append_test.go's helpers).

// A3.14: a position never removes records and never affects another
// consumer - one durable consumer reading and acknowledging everything
// leaves another's stored position, and a new reader's floor, where they
// were.
func TestA3_14APositionNeverAffectsAnotherConsumer(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	versions(t, func(t *testing.T, v byte) {
		topic := "ev/" + uniq(t)
		pub := appendPublisher(t, b)
		slow, fast := clientID(t, "slow"), clientID(t, "fast")
		s := durableConsumer(t, b, v, slow, topic, 1)
		pub.publishQoS1(topic, []byte("r1"), 1)
		pub.publishQoS1(topic, []byte("m1"), 2)
		if got := payloads(s.readUntil("m1")); strings.Join(got, ",") != "r1" {
			t.Fatalf("slow consumer read %v, want r1", got)
		}
		s.leave() // its position: after m1
		for i := 2; i <= 4; i++ {
			pub.publishQoS1(topic, []byte(fmt.Sprint("r", i)), uint16(i+1))
		}
		f := durableConsumer(t, b, v, fast, topic, 1)
		pub.publishQoS1(topic, []byte("m2"), 9)
		if got := payloads(f.readUntil("m2")); strings.Join(got, ",") != "r1,m1,r2,r3,r4" {
			t.Fatalf("fast consumer read %v, want the whole channel", got)
		}
		f.leave() // its position: after m2, ahead of the slow one's
		s = resume(t, b.addr, v, slow, 300)
		pub.publishQoS1(topic, []byte("m3"), 10)
		if got := payloads(s.readUntil("m3")); strings.Join(got, ",") != "r2,r3,r4,m2" {
			t.Fatalf("slow consumer resumed with %v, want r2,r3,r4,m2: another consumer's position moved it", got)
		}
		n := dialRaw(t, b.addr, v)
		n.mustConnect(clientID(t, "new"), nil)
		n.mustSubscribe(1, topic, 1)
		pub.publishQoS1(topic, []byte("m4"), 11)
		if got := payloads(n.readUntil("m4")); strings.Join(got, ",") != "r1,m1,r2,r3,r4,m2,m3" {
			t.Fatalf("a new reader got %v, want everything: a position removed records", got)
		}
	})
}

// A3.12: a dropped link (no DISCONNECT) stores the position once the broker
// notices, and the session resumes there: what was acknowledged is not
// served again, what was published meanwhile is.
func TestA3_12DroppedLinkResumesAtThePositionStoredWhenNoticed(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	versions(t, func(t *testing.T, v byte) {
		topic := "ev/" + uniq(t)
		id := clientID(t, "dropped")
		pub := appendPublisher(t, b)
		sub := durableConsumer(t, b, v, id, topic, 1)
		for i := 1; i <= 3; i++ {
			pub.publishQoS1(topic, []byte(fmt.Sprint("r", i)), uint16(i))
		}
		pub.publishQoS1(topic, []byte("m1"), 4)
		if got := payloads(sub.readUntil("m1")); len(got) != 3 {
			t.Fatalf("read %v before the drop", got)
		}
		sub.ping() // every acknowledgement read by the broker
		sub.drop()
		pub.publishQoS1(topic, []byte("away"), 5)
		pub.publishQoS1(topic, []byte("m2"), 6)
		sub = resume(t, b.addr, v, id, 300)
		if got := payloads(sub.readUntil("m2")); strings.Join(got, ",") != "away" {
			t.Fatalf("resumed after a dropped link with %v, want away alone", got)
		}
	})
}

// A4.15: on a start: tail channel a client with no durable session never
// receives a record published before it subscribed - not on its first
// connection, not on a later one, and it cannot seek back (no-session).
func TestA4_15StartTailWithoutADurableSessionNeverGetsOlderRecords(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "start: tail")
	versions(t, func(t *testing.T, v byte) {
		topic := "ev/" + uniq(t)
		id := clientID(t, "passer")
		pub := appendPublisher(t, b)
		pub.publishQoS1(topic, []byte("old"), 1)
		for round := 1; round <= 2; round++ {
			sub := dialRaw(t, b.addr, v)
			if ack := sub.mustConnect(id, nil); ack.SessionPresent {
				t.Fatal("Session Present 1 for Clean Start 1 with no expiry")
			}
			sub.mustSubscribe(1, topic, 1)
			live := fmt.Sprint("live", round)
			pub.publishQoS1(topic, []byte(live), uint16(2*round))
			pub.publishQoS1(topic, []byte("end"), uint16(2*round+1))
			if got := payloads(sub.readUntil("end")); strings.Join(got, ",") != live {
				t.Fatalf("connection %d got %v, want %s alone", round, got, live)
			}
			if v == codec.Version5 {
				if reply, code := sub.seekAs("events", "0", "", 9); code != codec.ImplementationSpecificError || reply == nil || string(reply.Payload) != "no-session" {
					t.Fatalf("seek without a durable session: 0x%02x %v, want no-session and 0x83", byte(code), reply)
				}
			}
			sub.disconnect()
		}
	})
}

// A12.5: a 3.1.1 client is told a SUBSCRIBE refusal as SUBACK 0x80 and
// keeps its connection: the packet's granted filter is served.
func TestA12_5A311SubackRefusalIs0x80WithTheConnectionKept(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publishQoS1("ev/a", []byte("r1"), 1)
	old := dialRaw(t, b.addr, codec.Version311)
	old.mustConnect("old", nil)
	ack := old.subscribeWith(1, nil,
		codec.Subscription{Filter: []byte("$share/g/ev/#"), QoS: 1},
		codec.Subscription{Filter: []byte("$saguin/consumer/events/seek"), QoS: 1},
		codec.Subscription{Filter: []byte("ev/a"), QoS: 1})
	if got := ack.ReasonCodes; len(got) != 3 || got[0] != 0x80 || got[1] != 0x80 || got[2] != 1 {
		t.Fatalf("SUBACK %v, want 0x80, 0x80 and 1", got)
	}
	pub.publishQoS1("ev/a", []byte("m1"), 2)
	if got := payloads(old.readUntil("m1")); strings.Join(got, ",") != "r1" {
		t.Fatalf("after the refusals: %v, want r1 replayed on the kept connection", got)
	}
	if got := old.subscribe(2, "$share/g/ev/#", 1); len(got) != 1 || got[0] != 0x80 {
		t.Fatalf("SUBACK %v, want 0x80", got)
	}
	old.expectNothing("the connection after a second refusal")
}

// A3.17: a refused CONNECT changes no position - a CONNECT for a durable
// consumer's client id refused for its password, asking Clean Start 1 (which
// would discard the session were it accepted), neither takes the connected
// consumer's place nor moves its position, connected or away.
func TestA3_17ARefusedConnectChangesNoPosition(t *testing.T) {
	dir := t.TempDir()
	pw := writePasswd(t, dir, map[string]string{"reader": "pwr"})
	b := startBrokerIn(t, dir, brokerConfig{MQTT: "password_file: " + pw,
		Channels: "events:\n  type: append\n  filter: ev/#"})
	me := login("reader", "pwr")
	versions(t, func(t *testing.T, v byte) {
		topic := "ev/" + uniq(t)
		id := clientID(t, "durable")
		pub := dialRaw(t, b.addr, codec.Version5)
		pub.mustConnect(clientID(t, "pub"), me)
		sub := dialRaw(t, b.addr, v)
		sub.mustConnect(id, both(freshSession(300), me))
		sub.mustSubscribe(1, topic, 1)
		pub.publishQoS1(topic, []byte("r1"), 1)
		pub.publishQoS1(topic, []byte("m1"), 2)
		sub.readUntil("m1")
		refuse := func() {
			t.Helper()
			bad := dialRaw(t, b.addr, v)
			if ack := bad.connect(id, both(login("reader", "wrong"), func(c *codec.Connect) { c.CleanStart = true })); ack.ReasonCode != refusedCode(v, codec.BadUserNameOrPassword, 0x04) {
				t.Fatalf("CONNACK 0x%02x for a wrong password", byte(ack.ReasonCode))
			}
			bad.expectClosed()
		}
		refuse() // while the consumer is connected
		pub.publishQoS1(topic, []byte("r2"), 3)
		pub.publishQoS1(topic, []byte("m2"), 4)
		if got := payloads(sub.readUntil("m2")); strings.Join(got, ",") != "r2" {
			t.Fatalf("the connected consumer got %v after a refused CONNECT, want r2", got)
		}
		sub.leave()
		refuse() // while it is away
		pub.publishQoS1(topic, []byte("away"), 5)
		pub.publishQoS1(topic, []byte("m3"), 6)
		sub = dialRaw(t, b.addr, v)
		if ack := sub.mustConnect(id, both(session(300), me)); !ack.SessionPresent {
			t.Fatal("Session Present 0: a refused CONNECT ended the session")
		}
		if got := payloads(sub.readUntil("m3")); strings.Join(got, ",") != "away" {
			t.Fatalf("resumed with %v, want away alone", got)
		}
	})
}

// A3.15, A3.16: a position is dropped with its session - at its expiry
// (limits.max_session_expiry 1s caps MQTT 5 and 3.1.1 alike), and on MQTT 5
// at a DISCONNECT setting Session Expiry 0 - and the next CONNECT starts per
// start: the whole channel from the floor.
func TestA3_15and16ASessionThatEndsDropsItsPositions(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "limits:\n  max_session_expiry: 1s", "")
	versions(t, func(t *testing.T, v byte) {
		topic := "ev/" + uniq(t)
		id := clientID(t, "expiring")
		pub := appendPublisher(t, b)
		pub.publishQoS1(topic, []byte("r1"), 1)
		pub.publishQoS1(topic, []byte("m1"), 2)
		sub := durableConsumer(t, b, v, id, topic, 1)
		sub.readUntil("m1")
		sub.leave()
		if b.log.wait(regexp.MustCompile(`session ended.*client_id=`+id+`.*why=expired`), waitLong) == "" {
			t.Fatal("the session never expired")
		}
		pub.publishQoS1(topic, []byte("m2"), 3)
		sub = dialRaw(t, b.addr, v)
		if ack := sub.mustConnect(id, session(300)); ack.SessionPresent {
			t.Fatal("Session Present 1 after the session expired")
		}
		sub.mustSubscribe(1, topic, 1)
		if got := payloads(sub.readUntil("m2")); strings.Join(got, ",") != "r1,m1" {
			t.Fatalf("after the expiry: %v, want r1,m1 (from the floor): the expired session's position was kept", got)
		}
		if v != codec.Version5 {
			return
		}
		sub.ping()
		d := &codec.Disconnect{}
		d.Properties.SessionExpiry = 0
		d.Properties.Present.Set(codec.PropSessionExpiry)
		sub.send(d.Append(nil, v))
		sub.expectClosed()
		sub = dialRaw(t, b.addr, v)
		if ack := sub.mustConnect(id, session(300)); ack.SessionPresent {
			t.Fatal("Session Present 1 after a DISCONNECT with Session Expiry 0")
		}
		sub.mustSubscribe(1, topic, 1)
		pub.publishQoS1(topic, []byte("m3"), 4)
		if got := payloads(sub.readUntil("m3")); strings.Join(got, ",") != "r1,m1,m2" {
			t.Fatalf("after the DISCONNECT ended it: %v, want r1,m1,m2 (from the floor)", got)
		}
	})
}

// A4.12: Retain Handling 2 on a session that does not outlive its
// connection is served live only and stores nothing: the client id's next
// session, asking Clean Start 0, finds none and starts at the floor, not at
// the head the subscription began from.
func TestA4_12RetainHandling2OnAConnectionBoundSessionStoresNothing(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publishQoS1("ev/h", []byte("old"), 1)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("passing", nil)
	if ack := sub.subscribeWith(1, nil, codec.Subscription{Filter: []byte("ev/h"), QoS: 1, RetainHandling: 2}); ack.ReasonCodes[0] != 1 {
		t.Fatalf("SUBACK %v", ack.ReasonCodes)
	}
	pub.publishQoS1("ev/h", []byte("new"), 2)
	pub.publishQoS1("ev/h", []byte("m1"), 3)
	if got := payloads(sub.readUntil("m1")); strings.Join(got, ",") != "new" {
		t.Fatalf("got %v, want new alone", got)
	}
	sub.leave()
	sub = dialRaw(t, b.addr, codec.Version5)
	if ack := sub.mustConnect("passing", session(300)); ack.SessionPresent {
		t.Fatal("Session Present 1: a connection-bound session was kept")
	}
	sub.mustSubscribe(1, "ev/h", 1)
	pub.publishQoS1("ev/h", []byte("m2"), 4)
	if got := payloads(sub.readUntil("m2")); strings.Join(got, ",") != "old,new,m1" {
		t.Fatalf("the next session got %v, want old,new,m1 from the floor: a head position was stored", got)
	}
}

// A9.4: a channel record goes out at QoS 2 to a QoS 2 subscription; the
// broker sends PUBREL only once the PUBREC came, and the position passes the
// record at PUBCOMP: a record left at PUBREL is still ahead when the session
// resumes, a completed one is not.
func TestA9_4OutboundQoS2OfAChannelRecord(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	versions(t, func(t *testing.T, v byte) {
		topic := "ev/" + uniq(t)
		id := clientID(t, "q2")
		pub := appendPublisher(t, b)
		sub := durableConsumer(t, b, v, id, topic, 2)
		pub.publishQoS1(topic, []byte("r1"), 1)
		p := sub.expectPublishWithin(waitLong)
		if p.QoS != 2 || string(p.Payload) != "r1" {
			t.Fatalf("delivery %q at QoS %d, want r1 at 2", p.Payload, p.QoS)
		}
		sub.expectNothing("before the PUBREC") // ping fails on a PUBREL too
		sub.sendAck(codec.TypePubrec, p.PacketID)
		if code := sub.expectAck(codec.TypePubrel, p.PacketID); code != codec.Success {
			t.Fatalf("PUBREL 0x%02x", byte(code))
		}
		sub.sendAck(codec.TypePubcomp, p.PacketID)
		pub.publish(topic, []byte("r2"), 2, 2)
		pub.expectAck(codec.TypePubrec, 2)
		pub.sendAck(codec.TypePubrel, 2)
		pub.expectAck(codec.TypePubcomp, 2)
		p = sub.expectPublishWithin(waitLong)
		if p.QoS != 2 || string(p.Payload) != "r2" {
			t.Fatalf("delivery %q at QoS %d, want r2 at 2", p.Payload, p.QoS)
		}
		sub.sendAck(codec.TypePubrec, p.PacketID)
		sub.expectAck(codec.TypePubrel, p.PacketID)
		sub.leave() // r2's exchange unfinished: no PUBCOMP
		pub.publishQoS1(topic, []byte("m1"), 3)
		sub = resume(t, b.addr, v, id, 300)
		got := payloads(sub.readUntil("m1"))
		if len(got) == 0 || got[0] == "r1" {
			t.Fatalf("resumed with %v: r1, completed, came again", got)
		}
		if strings.Join(got, ",") != "r2" {
			t.Fatalf("resumed with %v, want r2 (its exchange unfinished) again", got)
		}
	})
}

// overflow publishes n records of about 110 bytes on topic: past a
// retention_bytes of 600, the size sweep raises the floor.
func overflow(pub *raw, topic string, n int, firstID uint16) {
	pub.t.Helper()
	for i := 0; i < n; i++ {
		pub.publishQoS1(topic, []byte(fmt.Sprintf("fill-%02d-%s", i, strings.Repeat("x", 100))), firstID+uint16(i))
	}
}

// A5.10: under retention a new reader - no position - simply starts at the
// floor: the first record it is served is the floor's, its session is not
// ended for it, and nothing reports a position lost.
func TestA5_10ANewReaderUnderRetentionStartsAtTheFloorUnreported(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "retention_bytes: 600")
	watch := dialRaw(t, b.addr, codec.Version5)
	watch.mustConnect("watcher", freshSession(300))
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	overflow(pub, "ev/n", 12, 1)
	waitFloorAbove(t, watch, "events", 1)
	versions(t, func(t *testing.T, v byte) {
		id := clientID(t, "newcomer")
		sub := dialRaw(t, b.addr, v)
		sub.mustConnect(id, freshSession(300))
		sub.mustSubscribe(1, "ev/n", 1)
		got := sub.collect(1)
		if len(got) == 0 {
			t.Fatal("a new reader was served nothing")
		}
		floor := floorOf(t, watch, "events", 7)
		if !strings.HasPrefix(string(got[0].Payload), "fill-") || (v == codec.Version5 && offsetOf(t, got[0]) != floor) {
			t.Fatalf("first served %q, want the floor's record (offset %d)", got[0].Payload, floor)
		}
		sub.leave()
		if ack := dialRaw(t, b.addr, v).mustConnect(id, session(300)); !ack.SessionPresent {
			t.Fatal("Session Present 0: starting at the floor was taken for a position lost")
		}
		// A later line bounds the log: a Clean Start 1 ends a kept session.
		marker := clientID(t, "marker")
		dialRaw(t, b.addr, codec.Version5).mustConnect(marker, freshSession(300))
		dialRaw(t, b.addr, codec.Version5).mustConnect(marker, freshSession(300))
		if b.log.wait(regexp.MustCompile(`session ended.*client_id=`+marker), waitLong) == "" {
			t.Fatal("no line for the marker's ended session")
		}
		lost := regexp.MustCompile(`passed by retention.*client_id=` + id)
		for _, l := range b.log.snapshot() {
			if lost.MatchString(l) {
				t.Fatalf("a new reader was reported as a position lost: %s", l)
			}
		}
	})
}

// A5.6: a consumer connected and reading when the floor overtakes its
// position restarts at the floor, and the broker logs how many records it
// missed (MQTT cannot tell the client). Receive Maximum 1 holds it at its
// first record, unacknowledged, while retention passes it.
func TestA5_6AConnectedConsumerOvertakenByRetentionRestartsAtTheFloor(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "retention_bytes: 600")
	watch := dialRaw(t, b.addr, codec.Version5)
	watch.mustConnect("watcher", freshSession(300))
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("overtaken", both(freshSession(300), func(c *codec.Connect) {
		c.Properties.ReceiveMaximum = 1
		c.Properties.Present.Set(codec.PropReceiveMaximum)
	}))
	sub.mustSubscribe(1, "ev/o", 1)
	pub.publishQoS1("ev/o", []byte("first"), 1)
	first := sub.expectPublishWithin(waitLong)
	if string(first.Payload) != "first" || offsetOf(t, first) != 1 {
		t.Fatalf("first delivery %q", first.Payload)
	}
	overflow(pub, "ev/o", 12, 2)
	waitFloorAbove(t, watch, "events", 2)
	floor := floorOf(t, watch, "events", 3)
	sub.ackDelivery(first)
	next := sub.expectPublishWithin(waitLong)
	if got := offsetOf(t, next); got != floor {
		t.Fatalf("after the floor passed it the consumer was served offset %d (%q), want the floor %d", got, next.Payload, floor)
	}
	line := b.log.wait(regexp.MustCompile(`a consumer's position was passed by retention.*client_id=overtaken`), waitLong)
	if line == "" {
		t.Fatal("no line says the connected consumer's position was passed")
	}
	if want := fmt.Sprintf("records_missed=%d", floor-2); !strings.Contains(line, want) {
		t.Fatalf("%s: want %s (offsets 2 to %d)", line, want, floor-1)
	}
}

// A6.12: a dead-letter channel <queue>__dlq is an append channel and is
// sought as one: $saguin/consumer/jobs__dlq/seek 0 rewinds a durable reader
// of the dead letters to their floor, -1 to their end.
func TestA6_12SeekOnADeadLetterChannel(t *testing.T) {
	b := startQueueBroker(t, "jobs:\n  type: queue\n  filter: work/+/inspect\n  retry:\n    max_attempts: 1")
	r := dialRaw(t, b.addr, codec.Version5)
	r.mustConnect("dlq-reader", freshSession(300))
	r.mustSubscribe(1, "work/+/inspect/__dlq", 1)
	w := queueWorker(t, b.addr, "w1")
	pub := queueProducer(t, b.addr)
	for i, job := range []string{"d1", "d2", "end"} {
		pub.publishQoS1("work/7/inspect", []byte(job), uint16(i+1))
		w.answer(w.takeOffer(), "return")
	}
	if got := payloads(r.readUntil("end")); strings.Join(got, ",") != "d1,d2" {
		t.Fatalf("dead letters %v, want d1,d2", got)
	}
	reply, code := r.seekAs("jobs__dlq", "0", "my/replies", 10)
	if code != codec.Success || reply == nil || string(reply.Payload) != "1" {
		t.Fatalf("seek 0 on the dead-letter channel: 0x%02x %v, want 0x00 and 1", byte(code), reply)
	}
	if got := payloads(r.readUntil("end")); strings.Join(got, ",") != "d1,d2" {
		t.Fatalf("after seek 0: %v, want d1,d2 again", got)
	}
	reply, code = r.seekAs("jobs__dlq", "-1", "my/replies", 11)
	if code != codec.Success || reply == nil || string(reply.Payload) != "4" {
		t.Fatalf("seek -1 on the dead-letter channel: 0x%02x %v, want 0x00 and 4", byte(code), reply)
	}
	r.expectNothing("after seek -1")
}

// A6.22 (reading E3, docs/append.md): a seek at QoS 0 is applied and
// answered on its reply route - the Response Topic, or on 3.1.1
// $saguin/consumer/<channel>/seek/reply - with no PUBACK, and the records
// from the new position follow.
func TestA6_22ASeekAtQoS0IsAppliedAndAnswered(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	versions(t, func(t *testing.T, v byte) {
		topic := "ev/" + uniq(t)
		pub := appendPublisher(t, b)
		sub := durableConsumer(t, b, v, clientID(t, "seeker"), topic, 1)
		sub.mustSubscribe(2, "$saguin/consumer/events/seek/reply", 1)
		pub.publishQoS1(topic, []byte("r1"), 1)
		pub.publishQoS1(topic, []byte("m1"), 2)
		sub.readUntil("m1")
		floor := dialRaw(t, b.addr, codec.Version5)
		floor.mustConnect(clientID(t, "floor"), freshSession(300))
		want := fmt.Sprint(floorOf(t, floor, "events", 1))
		p := &codec.Publish{Topic: []byte("$saguin/consumer/events/seek"), Payload: []byte("0")}
		replyTo := "$saguin/consumer/events/seek/reply"
		if v == codec.Version5 {
			replyTo = "my/replies"
			p.Properties.ResponseTopic = []byte(replyTo)
			p.Properties.Present.Set(codec.PropResponseTopic)
		}
		sub.sendPublish(p)
		reply := sub.expectPublishWithin(waitLong)
		if string(reply.Topic) != replyTo || string(reply.Payload) != want {
			t.Fatalf("QoS 0 seek answered %q on %s, want %s on %s", reply.Payload, reply.Topic, want, replyTo)
		}
		sub.ackDelivery(reply)
		pub.publishQoS1(topic, []byte("m2"), 3)
		got := payloads(sub.readUntil("m2"))
		if len(got) < 2 || strings.Join(got[len(got)-2:], ",") != "r1,m1" {
			t.Fatalf("after a QoS 0 seek to 0: %v, want the channel from its floor (ending r1,m1)", got)
		}
		sub.expectNothing("no PUBACK for a QoS 0 seek") // a PUBACK would fail the ping's read
	})
}

// featuresBroker runs saguin with the events channel under an acl_file
// granting every user write, read and seek on it, "capped" with qos2 denied
// and "fleeting" with persistent denied.
func featuresBroker(t *testing.T) *brokerProc {
	t.Helper()
	dir := t.TempDir()
	pw := writePasswd(t, dir, map[string]string{"capped": "pwc", "fleeting": "pwf", "full": "pwu"})
	grant := "    - channel: events\n      allow: [write, read, seek]\n"
	acl := "roles:\n  capped:\n" + grant + "    - broker: features\n      deny: [qos2]\n" +
		"  fleeting:\n" + grant + "    - broker: features\n      deny: [persistent]\n" +
		"  full:\n" + grant +
		"users:\n  capped: [capped]\n  fleeting: [fleeting]\n  full: [full]\n"
	if err := os.WriteFile(filepath.Join(dir, "acl.yaml"), []byte(acl), 0o600); err != nil {
		t.Fatal(err)
	}
	return startBrokerIn(t, dir, brokerConfig{MQTT: "password_file: " + pw + "\nacl_file: " + filepath.Join(dir, "acl.yaml"),
		Channels: "events:\n  type: append\n  filter: ev/#"})
}

// A9.2: a subscription to a channel is granted at the QoS asked but never
// above 1 for a client whose roles deny qos2 (CONNACK Maximum QoS 1), and a
// record published at QoS 2 reaches it at QoS 1.
func TestA9_2GrantCappedAt1WhenQoS2IsDenied(t *testing.T) {
	b := featuresBroker(t)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("full-pub", login("full", "pwu"))
	versions(t, func(t *testing.T, v byte) {
		topic := "ev/" + uniq(t)
		sub := dialRaw(t, b.addr, v)
		ack := sub.mustConnect(clientID(t, "capped"), login("capped", "pwc"))
		if v == codec.Version5 && (!ack.Properties.Present.Has(codec.PropMaximumQoS) || ack.Properties.MaximumQoS != 1) {
			t.Fatalf("CONNACK Maximum QoS %v %d, want 1", ack.Properties.Present.Has(codec.PropMaximumQoS), ack.Properties.MaximumQoS)
		}
		if got := sub.subscribe(1, topic, 2); len(got) != 1 || got[0] != 1 {
			t.Fatalf("SUBACK %v for QoS 2, want granted 1", got)
		}
		pub.publishQoS2(topic, []byte("exactly"), 1)
		p := sub.expectPublishWithin(waitLong)
		if string(p.Payload) != "exactly" || p.QoS != 1 {
			t.Fatalf("delivery %q at QoS %d, want exactly at 1", p.Payload, p.QoS)
		}
		sub.ackDelivery(p)
	})
}

// A3.5: a client whose roles deny persistent gets Session Expiry 0 (3.1.1:
// made clean) and so holds no durable position on an append channel: the
// next connection finds no session and replays from the floor, and a seek
// is no-session.
func TestA3_5PersistentDeniedHoldsNoDurablePosition(t *testing.T) {
	b := featuresBroker(t)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("full-pub", login("full", "pwu"))
	versions(t, func(t *testing.T, v byte) {
		topic := "ev/" + uniq(t)
		id := clientID(t, "fleeting")
		me := login("fleeting", "pwf")
		pub.publishQoS1(topic, []byte("r1"), 1)
		pub.publishQoS1(topic, []byte("m1"), 2)
		sub := dialRaw(t, b.addr, v)
		ack := sub.mustConnect(id, both(freshSession(300), me))
		if v == codec.Version5 && (!ack.Properties.Present.Has(codec.PropSessionExpiry) || ack.Properties.SessionExpiry != 0) {
			t.Fatalf("CONNACK Session Expiry %v %d, want 0", ack.Properties.Present.Has(codec.PropSessionExpiry), ack.Properties.SessionExpiry)
		}
		sub.mustSubscribe(1, topic, 1)
		sub.readUntil("m1")
		if v == codec.Version5 {
			if reply, code := sub.seekAs("events", "0", "my/replies", 3); code != codec.ImplementationSpecificError || reply == nil || string(reply.Payload) != "no-session" {
				t.Fatalf("seek with persistent denied: 0x%02x %v, want no-session and 0x83", byte(code), reply)
			}
		}
		sub.leave()
		pub.publishQoS1(topic, []byte("m2"), 4)
		sub = dialRaw(t, b.addr, v)
		if ack := sub.mustConnect(id, both(session(300), me)); ack.SessionPresent {
			t.Fatal("Session Present 1 for a client denied persistent")
		}
		sub.mustSubscribe(1, topic, 1)
		if got := payloads(sub.readUntil("m2")); strings.Join(got, ",") != "r1,m1" {
			t.Fatalf("the next connection got %v, want r1,m1 from the floor: a position was kept", got)
		}
	})
}

// A13.3: a shared group member a record does not fit (its Maximum Packet
// Size) is passed over, not disconnected: the record goes to a member it
// fits, and the small member is still served.
func TestA13_3ASharedMemberARecordDoesNotFitIsPassedOver(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	small := dialRaw(t, b.addr, codec.Version5)
	small.mustConnect("m-a", func(c *codec.Connect) {
		c.Properties.MaximumPacketSize = 300
		c.Properties.Present.Set(codec.PropMaximumPacketSize)
	})
	small.mustSubscribe(1, "$share/g/ev/#", 1)
	large := dialRaw(t, b.addr, codec.Version5)
	large.mustConnect("m-b", nil)
	large.mustSubscribe(1, "$share/g/ev/#", 1)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	big := strings.Repeat("y", 600)
	for i := 1; i <= 3; i++ {
		pub.publishQoS1("ev/big", []byte(fmt.Sprint(i, big)), uint16(i))
	}
	if got := large.collect(3); len(got) != 3 {
		t.Fatalf("the member the records fit got %d of 3", len(got))
	}
	small.expectNothing("the member the records do not fit") // a DISCONNECT 0x95 fails the ping's read
	for i := 4; i <= 7; i++ {
		pub.publishQoS1("ev/small", []byte(fmt.Sprint("s", i)), uint16(i))
	}
	var toSmall, all []*codec.Publish
	for deadline := time.Now().Add(waitLong); len(all) < 4 && time.Now().Before(deadline); {
		s, l := small.ping(), large.ping()
		for _, p := range s {
			small.ackDelivery(p)
		}
		for _, p := range l {
			large.ackDelivery(p)
		}
		toSmall = append(toSmall, s...)
		all = append(append(all, s...), l...)
	}
	if len(all) != 4 {
		t.Fatalf("the group got %v, want the four small records once each", payloads(all))
	}
	if len(toSmall) == 0 {
		t.Fatal("the member passed over for size was never served again")
	}
}

// A13.4, its second half: a record no member of a shared group can take,
// the group holding no member whose session outlives its connection, is
// dropped for that group and counted in
// saguin_session_deliveries_dropped_total{cause="no_shared_member"} - an
// append group counted in its engine, which the scrape did not read. (The
// first half - held for a group with a kept member away - the broker does
// not do: an append group drops that record too.)
func TestA13_4ARecordNoSharedMemberCanTakeIsDroppedAndCounted(t *testing.T) {
	y := saguinYAML(memoryStorage, "operations:\n  listen:\n    tcp:\n      address: 127.0.0.1:0") + appendChannelOn("ev/#")
	ob := withOps(startSaguin(t, t.TempDir(), y))
	passer := dialRaw(t, ob.addr, codec.Version5)
	passer.mustConnect("passer", func(c *codec.Connect) {
		c.Properties.MaximumPacketSize = 300
		c.Properties.Present.Set(codec.PropMaximumPacketSize)
	})
	passer.mustSubscribe(1, "$share/solo/ev/d", 1)
	pub := dialRaw(t, ob.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publishQoS1("ev/d", []byte(strings.Repeat("z", 600)), 1)
	pub.publishQoS1("ev/d", []byte("fits"), 2)
	if p := passer.expectPublishWithin(waitLong); string(p.Payload) != "fits" {
		t.Fatalf("the member got %q, want fits alone: the record too large for it is dropped", p.Payload)
	}
	fams := scrapeOnce(t, ob)
	wantSeries(t, fams, "saguin_session_deliveries_dropped_total", 1, "cause", "no_shared_member")
}
