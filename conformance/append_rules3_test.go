package conformance

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// Append rules of checklist-channels.md A the audit left without a test
// (notes/s22/append-audit.md), the last of them: each test is named after
// its rule and starts its own broker with the append channel "events" on
// ev/# (append_test.go's helpers).

// A2.10 (notes-0001 "A3.5 Topic Alias"), MQTT 5: the broker never sends a
// Topic Alias, whatever Topic Alias Maximum the subscriber advertises -
// every append delivery, replayed and live, carries its whole topic and no
// alias. (3.1.1 has no aliases.)
func TestA2_10NeverAnOutboundTopicAliasOnAppendDeliveries(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	topic := "ev/" + strings.Repeat("long-level/", 8) + "end"
	for i := 1; i <= 3; i++ {
		pub.publishQoS1(topic, []byte(fmt.Sprint("r", i)), uint16(i))
	}
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("aliased", func(c *codec.Connect) {
		c.Properties.TopicAliasMaximum = 10
		c.Properties.Present.Set(codec.PropTopicAliasMaximum)
	})
	sub.mustSubscribe(1, "ev/#", 1)
	for i := 4; i <= 6; i++ {
		pub.publishQoS1(topic, []byte(fmt.Sprint("r", i)), uint16(i))
	}
	pub.publishQoS1(topic, []byte("end"), 7)
	got := sub.readUntil("end")
	if strings.Join(payloads(got), ",") != "r1,r2,r3,r4,r5,r6" {
		t.Fatalf("got %v, want r1..r6 (three replayed, three live)", payloads(got))
	}
	for _, p := range got {
		if p.Properties.Present.Has(codec.PropTopicAlias) {
			t.Fatalf("delivery %q carries Topic Alias %d", p.Payload, p.Properties.TopicAlias)
		}
		if string(p.Topic) != topic {
			t.Fatalf("delivery %q on topic %q, want the whole topic %q", p.Payload, p.Topic, topic)
		}
	}
}

// A1.18, A1.19 (RFC 0002 "Bounds on what a channel holds"), MQTT 5: a
// record's size for max_bytes is its payload, topic, message id and the key
// and value of each User Property - no more, no less. With max_bytes 100, a
// first record of 60 leaves room for exactly 40: a record of 41 (one more
// byte in a User Property's value) is refused 0x97, one of exactly 40 is
// admitted, and then nothing more fits. (3.1.1 publishes carry no User
// Properties; its refusal closes the connection, TestAppendMaxBytesRefuses0x97.)
func TestA1_18RecordSizeIsPayloadTopicIDAndUserPropertiesAtMaxBytes(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "max_bytes: 100")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	// record is a publish on ev/s (4 bytes) with saguin-id id (the Message
	// ID, not a header), the header key=value and payload.
	record := func(id, key, value, payload string) *codec.Publish {
		p := &codec.Publish{Topic: []byte("ev/s"), Payload: []byte(payload)}
		p.Properties.AddUser([]byte("saguin-id"), []byte(id))
		p.Properties.AddUser([]byte(key), []byte(value))
		return p
	}
	// 4 + 6 + (1+9) + 40 = 60
	if code := pub.publishAs(record("id-001", "k", "123456789", strings.Repeat("a", 40)), 1); code != codec.Success {
		t.Fatalf("PUBACK 0x%02x for a first record of 60 bytes under max_bytes 100", byte(code))
	}
	// 4 + 6 + (2+11) + 18 = 41
	if code := pub.publishAs(record("id-002", "kk", "12345678901", strings.Repeat("b", 18)), 2); code != codec.QuotaExceeded {
		t.Fatalf("PUBACK 0x%02x for a record of 41 bytes with 40 left, want 0x97", byte(code))
	}
	// 4 + 6 + (2+10) + 18 = 40
	if code := pub.publishAs(record("id-003", "kk", "1234567890", strings.Repeat("c", 18)), 3); code != codec.Success {
		t.Fatalf("PUBACK 0x%02x for a record of exactly the 40 bytes left, want 0x00", byte(code))
	}
	if code := pub.publishAs(&codec.Publish{Topic: []byte("ev/s"), Payload: []byte("x")}, 4); code != codec.QuotaExceeded {
		t.Fatalf("PUBACK 0x%02x with the channel at exactly max_bytes, want 0x97", byte(code))
	}
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", nil)
	sub.mustSubscribe(1, "ev/#", 1)
	got := sub.collect(2)
	if len(got) != 2 || string(got[0].Payload) != strings.Repeat("a", 40) || string(got[1].Payload) != strings.Repeat("c", 18) {
		t.Fatalf("channel holds %v, want the 60- and 40-byte records", payloads(got))
	}
	sub.expectNothing("after the two admitted records")
}

// A11.20 (RFC 0003 "What this does not build, and what that costs"), MQTT 5:
// coverage is not checked, but two subscribers on the identical filter
// string declaring different partition counts give one log line naming both
// clients (a warning: docs/append.md "Readings chosen"). A third and fourth
// subscriber repeating the two counts add no line, and a filter that only
// overlaps is not compared. (3.1.1 cannot declare: no User Properties.)
func TestA11_20IdenticalFilterWithDifferingCountsLogsOneLineNamingBoth(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	declare := func(id, filter, slice string) {
		t.Helper()
		c := dialRaw(t, b.addr, codec.Version5)
		c.mustConnect(id, nil)
		ack := c.subscribeWith(1, func(p *codec.Properties) { p.AddUser([]byte("saguin-filter"), []byte(slice)) },
			codec.Subscription{Filter: []byte(filter), QoS: 1})
		if len(ack.ReasonCodes) != 1 || ack.ReasonCodes[0] != 1 {
			t.Fatalf("SUBACK %v for %s declaring %s", ack.ReasonCodes, id, slice)
		}
	}
	declare("member-a", "ev/p/#", "topic_hash(3, 0)")
	declare("member-b", "ev/p/#", "topic_hash(2, 0)")
	declare("member-c", "ev/p/#", "topic_hash(3, 1)")
	declare("member-d", "ev/p/#", "topic_hash(2, 1)")
	declare("overlap", "ev/+/#", "topic_hash(5, 0)")
	clash := regexp.MustCompile(`level=WARN.*partition counts.*filter=ev/p/#`)
	line := b.log.wait(clash, waitLong)
	if line == "" {
		t.Fatal("no line for two subscribers declaring 3 and 2 partitions on ev/p/#")
	}
	for _, who := range []string{"member-a", "member-b"} {
		if !strings.Contains(line, "="+who) {
			t.Fatalf("%s: the line does not name %s", line, who)
		}
	}
	// A later clash on another filter bounds the log.
	declare("marker-a", "ev/m", "topic_hash(4, 0)")
	declare("marker-b", "ev/m", "topic_hash(7, 0)")
	if b.log.wait(regexp.MustCompile(`partition counts.*filter=ev/m `), waitLong) == "" {
		t.Fatal("no line for the marker's clash")
	}
	var lines []string
	for _, l := range b.log.snapshot() {
		if clash.MatchString(l) || strings.Contains(l, "filter=ev/+/#") && strings.Contains(l, "partition counts") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("%d lines about the counts on ev/p/# and ev/+/#, want the one:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}

// A1.22, its second half (notes-0003 "Exactly once, and where the unfinished
// ones wait"), MQTT 5 and 3.1.1: a channel that fills between PUBREC and
// PUBREL refuses the release - no PUBCOMP, DISCONNECT 0x97 (3.1.1: the
// connection closed) - and keeps the message held; the PUBREL re-sent on the
// next connection is refused the same way while the channel is full, and
// completes the exchange once retention (retention_period 3s) made room:
// PUBCOMP 0x00, and the record is delivered once. Under max_bytes 400 one
// record of about 270 bytes fits, two do not.
func TestA1_22AChannelFilledBetweenPubrecAndPubrelHoldsUntilARePubrelFindsRoom(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "max_bytes: 400\nretention_period: 3s")
	watch := dialRaw(t, b.addr, codec.Version5)
	watch.mustConnect("watcher", freshSession(300))
	var last uint64 // the channel's last record, retention's before each run
	versions(t, func(t *testing.T, v byte) {
		if last > 0 {
			waitFloorAbove(t, watch, "events", last)
		}
		topic := "ev/" + uniq(t)
		id := clientID(t, "pub2")
		sub := dialRaw(t, b.addr, codec.Version5)
		sub.mustConnect(clientID(t, "sub"), nil)
		sub.mustSubscribe(1, topic, 1)
		pub := dialRaw(t, b.addr, v)
		pub.mustConnect(id, freshSession(300))
		pub.publish(topic, []byte("held-"+strings.Repeat("h", 195)), 2, 7)
		if code := pub.expectAck(codec.TypePubrec, 7); code != codec.Success {
			t.Fatalf("PUBREC 0x%02x with the channel holding room", byte(code))
		}
		filler := dialRaw(t, b.addr, codec.Version5)
		filler.mustConnect(clientID(t, "filler"), nil)
		filler.publishQoS1(topic, []byte("fill-"+strings.Repeat("f", 195)), 1)
		fill := sub.expectPublishWithin(waitLong)
		sub.ackDelivery(fill)
		pub.sendAck(codec.TypePubrel, 7)
		pub.expectEnd(codec.QuotaExceeded) // a PUBCOMP first fails it
		pub = resume(t, b.addr, v, id, 300)
		pub.sendAck(codec.TypePubrel, 7)
		pub.expectEnd(codec.QuotaExceeded) // still full: a dropped hold would be PUBCOMP 0x92
		sub.expectNothing("while the release is refused")
		waitFloorAbove(t, watch, "events", offsetOf(t, fill))
		pub = resume(t, b.addr, v, id, 300)
		pub.sendAck(codec.TypePubrel, 7)
		if code := pub.expectAck(codec.TypePubcomp, 7); code != codec.Success {
			t.Fatalf("PUBCOMP 0x%02x for the re-sent PUBREL once retention made room, want 0x00", byte(code))
		}
		filler.publishQoS1(topic, []byte("end"), 2)
		got := sub.readUntil("end")
		if len(got) != 1 || !strings.HasPrefix(string(got[0].Payload), "held-") {
			t.Fatalf("after the PUBCOMP the subscriber got %v, want the held record once", payloads(got))
		}
		last = offsetOf(t, got[0]) + 1 // end
	})
}

// A1.24 (notes-0003 "Exactly once, and where the unfinished ones wait"), MQTT
// 5 and 3.1.1: a QoS 2 exchange is completed against the channel its PUBLISH
// resolved to, never re-resolved at PUBREL. On sqlite, holds are made on
// ev/x in channel events (ev/#); the broker restarts with a channel moved
// that claims ev/x more exactly; the re-sent PUBRELs complete (PUBCOMP 0x00)
// and the records are in events - saguin-channel events on a filter now
// reaching both - and nowhere else.
func TestA1_24AQoS2ExchangeCompletesAgainstTheChannelItsPublishResolvedTo(t *testing.T) {
	dir := t.TempDir()
	b := startAppend(t, dir, sqliteStorage, "", "")
	ids := map[byte]string{codec.Version5: "held-v5", codec.Version311: "held-v311"}
	for v, id := range ids {
		pub := dialRaw(t, b.addr, v)
		pub.mustConnect(id, freshSession(300))
		pub.publish("ev/x", []byte(id), 2, 3)
		if code := pub.expectAck(codec.TypePubrec, 3); code != codec.Success {
			t.Fatalf("%s: PUBREC 0x%02x", id, byte(code))
		}
		pub.ping() // the PUBREC's hold is stored; the PUBREL waits for the restart
		pub.disconnect()
	}
	b.stop()
	moved := saguinYAML(sqliteStorage, "") + appendChannelOn("ev/#") +
		"  moved:\n    type: append\n    filter: ev/x\n"
	b = startSaguin(t, dir, moved)
	for v, id := range ids {
		pub := resume(t, b.addr, v, id, 300)
		pub.sendAck(codec.TypePubrel, 3)
		if code := pub.expectAck(codec.TypePubcomp, 3); code != codec.Success {
			t.Fatalf("%s: PUBCOMP 0x%02x after the restart, want 0x00 (the hold kept in events)", id, byte(code))
		}
	}
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", nil)
	sub.mustSubscribe(1, "ev/#", 1)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("marker", nil)
	pub.publishQoS1("ev/end", []byte("end"), 1)
	got := sub.readUntil("end")
	seen := map[string]string{}
	for _, p := range got {
		ch, _ := userProp(p, "saguin-channel")
		seen[string(p.Payload)] = ch
	}
	if len(got) != 2 || seen["held-v5"] != "events" || seen["held-v311"] != "events" {
		t.Fatalf("after the restart ev/# got %v with channels %v, want both held records once each, in events", payloads(got), seen)
	}
}
