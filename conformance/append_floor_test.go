package conformance

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// Falling below the retention floor (checklist-channels.md A5): records a
// durable consumer had not acknowledged are removed by retention while it is
// away, and its next CONNECT says so the one way MQTT can.

// floorOf asks the channel's floor with a seek to 0 from a durable watcher
// of its own (the reply is the offset stored: the floor), which moves no
// other consumer (A6.31).
func floorOf(t *testing.T, w *raw, channel string, id uint16) uint64 {
	t.Helper()
	reply, code := w.seekAs(channel, "0", "watch/floor", id)
	if code != codec.Success || reply == nil {
		t.Fatalf("seek 0: 0x%02x %v", byte(code), reply)
	}
	n, err := strconv.ParseUint(string(reply.Payload), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitFloorAbove waits until retention's size sweep has raised the floor
// past offset.
func waitFloorAbove(t *testing.T, w *raw, channel string, offset uint64) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for id := uint16(100); ; id++ {
		if floorOf(t, w, channel, id) > offset {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the floor of %s did not pass %d", channel, offset)
		}
		w.quietFor(50*time.Millisecond, "between two looks at the floor")
	}
}

// A5.2, A5.4, A5.7, A12: a session whose stored position retention passed is
// not resumed - CONNACK Session Present 0 on MQTT 5 and 3.1.1 alike, logged
// for the operator - and its consumer starts where a reader with no position
// does: at the floor, never at the oldest surviving record as though nothing
// were missing.
func TestResumeBelowTheFloorAnswersSessionPresent0(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "retention_bytes: 600")
	watch := dialRaw(t, b.addr, codec.Version5)
	watch.mustConnect("watcher", freshSession(300))
	versions(t, func(t *testing.T, v byte) {
		topic := "ev/" + uniq(t)
		id := clientID(t, "durable")
		pub := appendPublisher(t, b)
		sub := durableConsumer(t, b, v, id, topic, 1)
		pub.publishQoS1(topic, []byte("seen"), 1)
		pub.publishQoS1(topic, []byte("m1"), 2)
		sub.readUntil("m1")
		sub.disconnect()
		// Everything so far is acknowledged: its position is the next offset.
		reply, _ := watch.seekAs("events", "-1", "watch/next", 2)
		next, _ := strconv.ParseUint(string(reply.Payload), 10, 64)
		for i := 0; i < 12; i++ {
			pub.publishQoS1(topic, []byte(fmt.Sprintf("away-%02d-%s", i, strings.Repeat("x", 100))), uint16(10+i))
		}
		waitFloorAbove(t, watch, "events", next)
		sub = dialRaw(t, b.addr, v)
		if ack := sub.mustConnect(id, session(300)); ack.SessionPresent {
			t.Fatal("Session Present 1 for a session whose position retention passed")
		}
		b.log.wait(regexp.MustCompile(`position was passed by retention.*client_id=`+id), waitLong)
		sub.mustSubscribe(1, topic, 1)
		pub.publishQoS1(topic, []byte("m2"), 30)
		got := payloads(sub.readUntil("m2"))
		if len(got) == 0 || got[0] == "seen" || !strings.HasPrefix(got[0], "away-") {
			t.Fatalf("served %v after the floor passed, want the floor's records onward", got)
		}
		if len(got) >= 12 {
			t.Fatalf("served %d away records, more than retention kept", len(got))
		}
		// Its new position is kept: the next CONNECT resumes.
		sub.disconnect()
		sub = dialRaw(t, b.addr, v)
		if ack := sub.mustConnect(id, session(300)); !ack.SessionPresent {
			t.Fatal("Session Present 0 for the session begun after the floor passed")
		}
	})
}

// A5.3: the positions retention did not pass are kept with the session
// begun in its place: on a second channel the consumer resumes where it
// was, not at that channel's floor.
func TestResumeBelowTheFloorKeepsPositionsRetentionDidNotPass(t *testing.T) {
	y := saguinYAML(memoryStorage, "") + appendChannelOn("ev/#") + "    retention_bytes: 600\n" +
		"  kept:\n    type: append\n    filter: kp/#\n"
	b := startSaguin(t, t.TempDir(), y)
	watch := dialRaw(t, b.addr, codec.Version5)
	watch.mustConnect("watcher", freshSession(300))
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("durable", freshSession(300))
	sub.mustSubscribe(1, "ev/a", 1)
	sub.mustSubscribe(2, "kp/a", 1)
	pub.publishQoS1("kp/a", []byte("kept-read"), 1)
	pub.publishQoS1("kp/a", []byte("k1"), 2)
	sub.readUntil("k1")
	pub.publishQoS1("ev/a", []byte("e1"), 3)
	sub.readUntil("e1")
	sub.disconnect()
	reply, _ := watch.seekAs("events", "-1", "watch/next", 1)
	next, _ := strconv.ParseUint(string(reply.Payload), 10, 64)
	pub.publishQoS1("kp/a", []byte("kept-away"), 4)
	for i := 0; i < 12; i++ {
		pub.publishQoS1("ev/a", []byte(fmt.Sprintf("away-%02d-%s", i, strings.Repeat("x", 100))), uint16(10+i))
	}
	waitFloorAbove(t, watch, "events", next)
	sub = dialRaw(t, b.addr, codec.Version5)
	if ack := sub.mustConnect("durable", session(300)); ack.SessionPresent {
		t.Fatal("Session Present 1 for a session whose position retention passed")
	}
	sub.mustSubscribe(1, "kp/a", 1)
	pub.publishQoS1("kp/a", []byte("k2"), 30)
	if got := payloads(sub.readUntil("k2")); strings.Join(got, ",") != "kept-away" {
		t.Fatalf("on the channel retention did not pass: %v, want kept-away alone (resumed at its position)", got)
	}
}

// A5.5: a Will waiting out its delay on a session whose position retention
// passed is published as that session ends at the CONNECT - not cancelled
// as a resume would cancel it.
func TestResumeBelowTheFloorPublishesTheWaitingWill(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "retention_bytes: 600")
	watch := dialRaw(t, b.addr, codec.Version5)
	watch.mustConnect("watcher", freshSession(300))
	watch.mustSubscribe(1, "wills/#", 1)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("durable", both(freshSession(300), will("wills/durable", "gone", 1, false, 600)))
	sub.mustSubscribe(1, "ev/w", 1)
	pub.publishQoS1("ev/w", []byte("m1"), 1)
	sub.readUntil("m1")
	reply, _ := watch.seekAs("events", "-1", "watch/next", 2)
	next, _ := strconv.ParseUint(string(reply.Payload), 10, 64)
	sub.drop() // the link lost: the Will waits out its 600 s delay
	for i := 0; i < 12; i++ {
		pub.publishQoS1("ev/w", []byte(fmt.Sprintf("away-%02d-%s", i, strings.Repeat("x", 100))), uint16(10+i))
	}
	waitFloorAbove(t, watch, "events", next)
	sub = dialRaw(t, b.addr, codec.Version5)
	if ack := sub.mustConnect("durable", session(300)); ack.SessionPresent {
		t.Fatal("Session Present 1 for a session whose position retention passed")
	}
	w := watch.expectPublishWithin(waitLong)
	if string(w.Topic) != "wills/durable" || string(w.Payload) != "gone" {
		t.Fatalf("watcher got %s %q, want the ended session's Will", w.Topic, w.Payload)
	}
}
