package conformance

import (
	"fmt"
	"strings"
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// Where an append subscription starts and what a durable consumer keeps
// (checklist-channels.md A3, A4). Each test starts its own broker with the
// append channel "events" on ev/#.

// publishAll publishes each payload to topic at QoS 1 from a fresh client.
func publishAll(t *testing.T, b *brokerProc, topic string, msgs ...string) {
	t.Helper()
	pub := appendPublisher(t, b)
	for i, m := range msgs {
		pub.publishQoS1(topic, []byte(m), uint16(i+1))
	}
}

// A4.6: one SUBSCRIBE carrying several filters over one channel is one
// arrival: every filter is recorded before any is replayed, so the records
// of the last are not stepped over while the first replays - two hundred
// filters between them give the replay of the first every chance to run
// ahead.
func TestOneSubscribeOfManyFiltersReplaysThemAll(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	publishAll(t, b, "ev/a", "a1", "a2")
	publishAll(t, b, "ev/b", "b1")
	publishAll(t, b, "ev/a", "a3")
	subs := []codec.Subscription{{Filter: []byte("ev/a"), QoS: 1}}
	for i := 0; i < 200; i++ {
		subs = append(subs, codec.Subscription{Filter: []byte(fmt.Sprint("ev/f/", i)), QoS: 1})
	}
	subs = append(subs, codec.Subscription{Filter: []byte("ev/b"), QoS: 1})
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("many", freshSession(300))
	sub.subscribeWith(1, nil, subs...)
	publishAll(t, b, "ev/b", "end")
	if got := payloads(sub.readUntil("end")); strings.Join(got, ",") != "a1,a2,b1,a3" {
		t.Fatalf("replayed %v, want a1,a2,b1,a3 in offset order", got)
	}
}

// A4.7: a filter added by a later SUBSCRIBE does not reach back on a
// channel where the consumer already has a position: it is served from
// that position on.
func TestALaterSubscribeDoesNotReachBack(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	publishAll(t, b, "ev/b", "b-old")
	publishAll(t, b, "ev/a", "a1")
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("later", freshSession(300))
	sub.mustSubscribe(1, "ev/a", 1)
	publishAll(t, b, "ev/a", "m1")
	if got := payloads(sub.readUntil("m1")); strings.Join(got, ",") != "a1" {
		t.Fatalf("first read %v, want a1", got)
	}
	sub.mustSubscribe(2, "ev/b", 1)
	publishAll(t, b, "ev/b", "b-new")
	publishAll(t, b, "ev/a", "m2")
	if got := payloads(sub.readUntil("m2")); strings.Join(got, ",") != "b-new" {
		t.Fatalf("after the later SUBSCRIBE: %v, want b-new only (b-old is behind the position)", got)
	}
}

// A4.8, A4.9: Retain Handling 1 is treated as 0 on append: a new reader is
// replayed from the floor either way.
func TestRetainHandling1ReplaysAsRetainHandling0(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	publishAll(t, b, "ev/h", "r1", "r2")
	for _, rh := range []byte{0, 1} {
		sub := dialRaw(t, b.addr, codec.Version5)
		sub.mustConnect(fmt.Sprint("rh", rh), nil)
		sub.subscribeWith(1, nil, codec.Subscription{Filter: []byte("ev/h"), QoS: 1, RetainHandling: rh})
		if got := payloads(sub.collect(2)); strings.Join(got, ",") != "r1,r2" {
			t.Fatalf("Retain Handling %d: replayed %v, want r1,r2", rh, got)
		}
	}
}

// A4.11: Retain Handling 2 on a channel where the consumer holds a position
// commits its position at the channel's head: the backlog is dropped, now
// and at the next resume.
func TestRetainHandling2WithAStoredPositionCommitsTheHead(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("head", freshSession(300))
	sub.mustSubscribe(1, "ev/h", 1)
	publishAll(t, b, "ev/h", "r1", "m1")
	sub.readUntil("m1")
	// Unsubscribed, it reads the channel no more: its position stays
	// after m1 while the backlog arrives.
	sub.unsubscribe(3, "ev/h")
	publishAll(t, b, "ev/h", "backlog1", "backlog2")
	sub.subscribeWith(4, nil, codec.Subscription{Filter: []byte("ev/h"), QoS: 1, RetainHandling: 2})
	publishAll(t, b, "ev/h", "live", "m2")
	if got := payloads(sub.readUntil("m2")); strings.Join(got, ",") != "live" {
		t.Fatalf("after Retain Handling 2: %v, want live only (the backlog dropped)", got)
	}
	sub.disconnect()
	publishAll(t, b, "ev/h", "away")
	sub = dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("head", session(300))
	publishAll(t, b, "ev/h", "m3")
	if got := payloads(sub.readUntil("m3")); strings.Join(got, ",") != "away" {
		t.Fatalf("resumed with %v, want away only", got)
	}
}

// A4.14, A3.3: a subscriber with no durable session (MQTT 5 Clean Start 1
// and no expiry, 3.1.1 cleanSession 1) starts per start on every
// connection: replayed from the floor each time.
func TestANonDurableSubscriberIsReplayedOnEveryConnection(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	versions(t, func(t *testing.T, v byte) {
		topic := "ev/" + uniq(t)
		publishAll(t, b, topic, "r1", "r2")
		id := clientID(t, "clean")
		for i := 0; i < 2; i++ {
			sub := dialRaw(t, b.addr, v)
			sub.mustConnect(id, nil)
			sub.mustSubscribe(1, topic, 1)
			if got := payloads(sub.collect(2)); strings.Join(got, ",") != "r1,r2" {
				t.Fatalf("connection %d: replayed %v, want r1,r2", i+1, got)
			}
			sub.disconnect()
		}
	})
}

// A3.2, A3.18: a Clean Start 1 connection with an expiry begins a new
// durable session that inherits no position: replayed from the floor.
func TestCleanStartDiscardsTheEarlierPosition(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	publishAll(t, b, "ev/c", "r1", "m1")
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("restart", freshSession(300))
	sub.mustSubscribe(1, "ev/c", 1)
	sub.readUntil("m1")
	sub.disconnect()
	sub = dialRaw(t, b.addr, codec.Version5)
	if ack := sub.mustConnect("restart", freshSession(300)); ack.SessionPresent {
		t.Fatal("Session Present 1 for Clean Start 1")
	}
	sub.mustSubscribe(1, "ev/c", 1)
	if got := payloads(sub.collect(2)); strings.Join(got, ",") != "r1,m1" {
		t.Fatalf("the new session was served %v, want r1,m1 from the floor", got)
	}
}

// A3.19, D6.4: a consumer hung up by $saguin/sessions/disconnect keeps its
// session and resumes at its stored position, losing nothing.
func TestHungUpConsumerResumesAtItsPosition(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("device", freshSession(300))
	sub.mustSubscribe(1, "ev/u", 1)
	publishAll(t, b, "ev/u", "r1", "m1")
	sub.readUntil("m1")
	op := dialRaw(t, b.addr, codec.Version5)
	op.mustConnect("operator", nil)
	op.sendPublish(hangUpRequest("device", "ops/replies"))
	if reply, code := replyAndAck(op); code != codec.Success || string(reply.Payload) != "hung-up" {
		t.Fatalf("hang-up: PUBACK 0x%02x, reply %q", byte(code), reply.Payload)
	}
	sub.expectDisconnect(codec.AdministrativeAction)
	publishAll(t, b, "ev/u", "away")
	sub = dialRaw(t, b.addr, codec.Version5)
	if ack := sub.mustConnect("device", session(300)); !ack.SessionPresent {
		t.Fatal("the hang-up ended the session")
	}
	publishAll(t, b, "ev/u", "m2")
	if got := payloads(sub.readUntil("m2")); strings.Join(got, ",") != "away" {
		t.Fatalf("resumed with %v, want away only", got)
	}
}
