package conformance

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// Seek forms and effects through the binary (checklist-channels.md A6),
// beside append_test.go's seek tests; each starts its own broker with the
// append channel "events" on ev/#.

// durableReader connects a durable consumer id subscribed to topic and
// reads (acknowledging) what the channel holds there up to marker, which
// the caller has published last.
func durableReader(t *testing.T, b *brokerProc, id, topic, marker string) *raw {
	t.Helper()
	c := durableConsumer(t, b, codec.Version5, id, topic, 1)
	c.readUntil(marker)
	return c
}

// timestampOf is a delivery's saguin-timestamp, Unix milliseconds.
func timestampOf(t *testing.T, p *codec.Publish) int64 {
	t.Helper()
	v, ok := userProp(p, "saguin-timestamp")
	if !ok {
		t.Fatalf("delivery %q carries no saguin-timestamp", p.Payload)
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// A6.4, A6.10 (E17): a bare integer is an offset - the consumer is served
// from there on its connection - and the next offset itself is accepted,
// the end rather than beyond it.
func TestSeekToAnOffsetServesFromThereAndTheNextOffsetIsTheEnd(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	for i := 1; i <= 5; i++ {
		pub.publishQoS1("ev/o", []byte(fmt.Sprint("r", i)), uint16(i))
	}
	pub.publishQoS1("ev/o", []byte("m1"), 6)
	sub := durableReader(t, b, "seeker", "ev/o", "m1")
	reply, code, early := sub.seekSeeing("events", "3", "", 1)
	if code != codec.Success || reply == nil || string(reply.Payload) != "3" {
		t.Fatalf("seek 3: PUBACK 0x%02x, reply %v; want 0x00 and 3", byte(code), reply)
	}
	pub.publishQoS1("ev/o", []byte("m2"), 7)
	if got := payloads(append(early, sub.readUntil("m2")...)); strings.Join(got, ",") != "r3,r4,r5,m1" {
		t.Fatalf("after seek 3: %v, want r3,r4,r5,m1", got)
	}
	// r1..r5, m1, m2 are offsets 1..7: 8 is the next.
	reply, code = sub.seekAs("events", "8", "", 2)
	if code != codec.Success || reply == nil || string(reply.Payload) != "8" {
		t.Fatalf("seek to the next offset: PUBACK 0x%02x, reply %v; want 0x00 and 8", byte(code), reply)
	}
	sub.expectNothing("after a seek to the next offset")
}

// clockPast returns once the wall clock's Unix millisecond is past ms: a
// record published after it is received at a later millisecond than one
// acknowledged before it.
func clockPast(ms int64) {
	for time.Now().UnixMilli() <= ms {
		runtime.Gosched()
	}
}

// A6.5-A6.9: a duration (sign optional, always ago) and an RFC 3339 time
// land on the lowest offset received at or after the moment - never an
// exact match asked for; a moment older than every record, the floor still
// 1, serves from the start, and one in the future is accepted at the next
// offset.
func TestSeekByADurationOrAnRFC3339TimeLandsAtTheFirstRecordAtOrAfterIt(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	for i := 1; i <= 3; i++ {
		pub.publishQoS1("ev/t", []byte(fmt.Sprint("r", i)), uint16(i))
		clockPast(time.Now().UnixMilli())
	}
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("seeker", freshSession(300))
	sub.mustSubscribe(1, "ev/t", 1)
	got := sub.collect(3)
	if len(got) != 3 {
		t.Fatalf("replayed %v, want r1..r3", payloads(got))
	}
	t1, t2, t3 := timestampOf(t, got[0]), timestampOf(t, got[1]), timestampOf(t, got[2])
	if !(t1 < t2 && t2 < t3) {
		t.Fatalf("receipt times %d, %d, %d: not one a millisecond", t1, t2, t3)
	}
	rfc := func(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00") }
	for _, tc := range []struct{ payload, want string }{
		{rfc(t2), "2"},
		{rfc(t2 + 1), "3"}, // at or after: the first record past the moment
		{"12h", "1"}, {"-12h", "1"}, {"90m", "1"}, {"7d", "1"},
		{"2000-01-01T00:00:00Z", "1"},
		{time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "4"},
	} {
		reply, code := sub.seekAs("events", tc.payload, "", 5)
		if code != codec.Success || reply == nil || string(reply.Payload) != tc.want {
			t.Fatalf("seek %q: PUBACK 0x%02x, reply %v; want 0x00 and %s", tc.payload, byte(code), reply, tc.want)
		}
	}
}

// A6.14, A6.8: once retention moved the floor, a seek below it - an offset
// or a moment older than the oldest surviving record - is refused
// below-floor with saguin-floor naming the floor, PUBACK 0x83; the floor
// itself is accepted.
func TestSeekBelowTheFloorIsRefusedNamingTheFloor(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "retention_bytes: 600")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	for i := 0; i < 12; i++ {
		pub.publishQoS1("ev/f", []byte(fmt.Sprintf("r%02d-%s", i, strings.Repeat("x", 100))), uint16(i+1))
	}
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("seeker", freshSession(300))
	waitFloorAbove(t, sub, "events", 1)
	floor := fmt.Sprint(floorOf(t, sub, "events", 1))
	for _, payload := range []string{"1", "2000-01-01T00:00:00Z"} {
		reply, code := sub.seekAs("events", payload, "", 2)
		if code != codec.ImplementationSpecificError || reply == nil || string(reply.Payload) != "below-floor" {
			t.Fatalf("seek %q below the floor %s: PUBACK 0x%02x, reply %v; want below-floor and 0x83", payload, floor, byte(code), reply)
		}
		if f, ok := userProp(reply, "saguin-floor"); !ok || f != floor {
			t.Fatalf("seek %q: saguin-floor %q (present %v), want %s", payload, f, ok, floor)
		}
	}
	if reply, code := sub.seekAs("events", floor, "", 3); code != codec.Success || reply == nil || string(reply.Payload) != floor {
		t.Fatalf("seek to the floor %s: PUBACK 0x%02x, reply %v", floor, byte(code), reply)
	}
}

// A6.25, A6.26: $saguin/consumer/<channel>/seek/reply is subscribable, and a
// seek's reply - on its Response Topic or on that topic - is written to the
// seeking connection only: another client subscribed to both receives
// nothing.
func TestSeekReplyIsWrittenToTheSeekingConnectionOnly(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	other := dialRaw(t, b.addr, codec.Version5)
	other.mustConnect("other", nil)
	for i, f := range []string{"$saguin/consumer/events/seek/reply", "my/replies"} {
		if got := other.subscribe(uint16(i+1), f, 1); got[0] != 1 {
			t.Fatalf("SUBSCRIBE %s: SUBACK 0x%02x, want 0x01", f, byte(got[0]))
		}
	}
	seeker := dialRaw(t, b.addr, codec.Version5)
	seeker.mustConnect("seeker", freshSession(300))
	if got := seeker.subscribe(1, "$saguin/consumer/events/seek/reply", 1); got[0] != 1 {
		t.Fatalf("the seeker's SUBSCRIBE to its reply topic: SUBACK 0x%02x, want 0x01", byte(got[0]))
	}
	if reply, code := seeker.seekAs("events", "0", "my/replies", 1); code != codec.Success || reply == nil || string(reply.Topic) != "my/replies" {
		t.Fatalf("seek with a Response Topic: 0x%02x %v", byte(code), reply)
	}
	if reply, code := seeker.seekAs("events", "0", "", 2); code != codec.Success || reply == nil || string(reply.Topic) != "$saguin/consumer/events/seek/reply" {
		t.Fatalf("seek with none: 0x%02x %v", byte(code), reply)
	}
	other.expectNothing("another client's seek replies")
	seeker.expectNothing("a reply written once, not again through the seeker's subscription")
}

// A6.31, A6.32, A6.34: a seek made before the consumer reads the channel
// is where its first read starts; it moves no other consumer, deletes
// nothing and leaves the floor where it was.
func TestSeekBeforeReadingStartsThereAndMovesNoOtherConsumer(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	for i := 1; i <= 3; i++ {
		pub.publishQoS1("ev/b", []byte(fmt.Sprint("r", i)), uint16(i))
	}
	pub.publishQoS1("ev/b", []byte("m1"), 4)
	other := durableReader(t, b, "other", "ev/b", "m1")
	other.disconnect()
	seeker := dialRaw(t, b.addr, codec.Version5)
	seeker.mustConnect("seeker", freshSession(300))
	if reply, code := seeker.seekAs("events", "2", "", 1); code != codec.Success || reply == nil || string(reply.Payload) != "2" {
		t.Fatalf("seek 2 before subscribing: 0x%02x %v", byte(code), reply)
	}
	seeker.mustSubscribe(2, "ev/b", 1)
	pub.publishQoS1("ev/b", []byte("m2"), 5)
	if got := payloads(seeker.readUntil("m2")); strings.Join(got, ",") != "r2,r3,m1" {
		t.Fatalf("first read after seek 2: %v, want r2,r3,m1", got)
	}
	other = dialRaw(t, b.addr, codec.Version5)
	other.mustConnect("other", session(300))
	pub.publishQoS1("ev/b", []byte("m3"), 6)
	if got := payloads(other.readUntil("m3")); strings.Join(got, ",") != "m2" {
		t.Fatalf("the other consumer resumed with %v, want m2 only: another's seek moved it", got)
	}
	fresh := dialRaw(t, b.addr, codec.Version5)
	fresh.mustConnect("fresh", nil)
	fresh.mustSubscribe(1, "ev/b", 1)
	if got := payloads(fresh.readUntil("m3")); len(got) == 0 || got[0] != "r1" {
		t.Fatalf("a new reader starts at %v, want r1: the seek moved the floor", got)
	}
}

// A6.29, A6.33: a seek ends the consumer's era - PUBACKs for records sent
// before it, arriving after it, do not move the new position: the session
// resumes at the sought offset, the records re-sent since left
// unacknowledged.
func TestSeekIgnoresAcknowledgementsOfRecordsSentBeforeIt(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	for i := 1; i <= 4; i++ {
		pub.publishQoS1("ev/e", []byte(fmt.Sprint("r", i)), uint16(i))
	}
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("seeker", freshSession(300))
	sub.mustSubscribe(1, "ev/e", 1)
	var before []*codec.Publish // delivered, not acknowledged
	for len(before) < 4 {
		before = append(before, sub.expectPublishWithin(waitLong))
	}
	sub.sendPublish(&codec.Publish{QoS: 1, PacketID: 60000, Topic: []byte("$saguin/consumer/events/seek"), Payload: []byte("1")})
	var resent []*codec.Publish
	for acked := false; !acked; {
		h, body := sub.read()
		switch h.Type {
		case codec.TypePublish:
			var q codec.Publish
			if err := q.Decode(h, body, codec.Version5); err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(string(q.Topic), "ev/") {
				resent = append(resent, &q)
			}
		case codec.TypePuback:
			acked = true
		default:
			t.Fatalf("want the seek's reply or PUBACK, got %s", h.Type)
		}
	}
	for _, p := range before {
		sub.ackDelivery(p) // the closed era's acknowledgements
	}
	for len(resent) < 4 {
		resent = append(resent, sub.expectPublishWithin(waitLong))
	}
	if got := payloads(resent); strings.Join(got, ",") != "r1,r2,r3,r4" {
		t.Fatalf("after seek 1: %v, want r1..r4 again", got)
	}
	sub.disconnect() // the position is stored before the close (A3.11)
	sub = dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("seeker", session(300))
	pub.publishQoS1("ev/e", []byte("m"), 9)
	if got := payloads(sub.readUntil("m")); strings.Join(got, ",") != "r1,r2,r3,r4" {
		t.Fatalf("resumed with %v, want r1..r4: an acknowledgement from before the seek moved its position", got)
	}
}
