package conformance

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// Retention overtaking a reader while it reads, and seeks the other tests do
// not make (checklist-channels.md A5, A6.12, A6.22).

// A5.1, A5.6: a consumer connected and reading when retention's floor
// overtakes its position restarts at the floor - never served a record
// below it - and the broker logs the loss for the operator.
func TestConnectedConsumerOvertakenByRetentionRestartsAtTheFloor(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "retention_bytes: 600")
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("slow", both(freshSession(300), func(c *codec.Connect) {
		c.Properties.ReceiveMaximum = 1
		c.Properties.Present.Set(codec.PropReceiveMaximum)
	}))
	sub.mustSubscribe(1, "ev/#", 1)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	for i := 0; i < 12; i++ {
		pub.publishQoS1("ev/o", []byte(fmt.Sprintf("r%02d-%s", i+1, strings.Repeat("x", 100))), uint16(i+1))
	}
	first := sub.expectPublishWithin(waitLong) // held unacknowledged: the window is shut
	w := dialRaw(t, b.addr, codec.Version5)
	w.mustConnect("watcher", freshSession(300))
	waitFloorAbove(t, w, "events", 2)
	floor := floorOf(t, w, "events", 1)
	sub.ackDelivery(first)
	if next := sub.expectPublishWithin(waitLong); offsetOf(t, next) != floor {
		t.Fatalf("after the floor passed it the consumer was served offset %d, want the floor %d", offsetOf(t, next), floor)
	}
	b.log.wait(regexp.MustCompile(`position was passed by retention.*client_id=slow`), waitLong)
}

// A5.10: under retention, a reader with no position simply starts at the
// floor: no loss is reported for it.
func TestNewReaderUnderRetentionStartsAtTheFloorUntold(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "retention_bytes: 600")
	publishAll(t, b, "ev/n", func() []string {
		var m []string
		for i := 0; i < 12; i++ {
			m = append(m, fmt.Sprintf("r%02d-%s", i+1, strings.Repeat("x", 100)))
		}
		return m
	}()...)
	w := dialRaw(t, b.addr, codec.Version5)
	w.mustConnect("watcher", freshSession(300))
	waitFloorAbove(t, w, "events", 1)
	floor := floorOf(t, w, "events", 1)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("newcomer", freshSession(300))
	sub.mustSubscribe(1, "ev/#", 1)
	if p := sub.expectPublishWithin(waitLong); offsetOf(t, p) != floor {
		t.Fatalf("a new reader started at %d, want the floor %d", offsetOf(t, p), floor)
	}
	publishAll(t, b, "ev/n", "end")
	sub.readUntil("end")
	for _, l := range b.log.snapshot() {
		if strings.Contains(l, "passed by retention") && strings.Contains(l, "newcomer") {
			t.Fatalf("a loss reported for a reader that had no position: %s", l)
		}
	}
}

// A6.22 (reading E3): a seek at QoS 0 is applied and answered on its reply
// route - there is no PUBACK to answer it - and the records follow from the
// new position.
func TestSeekAtQoS0IsAppliedAndAnswered(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	publishAll(t, b, "ev/z", "r1", "r2", "m1")
	sub := durableReader(t, b, "seeker", "ev/z", "m1")
	p := &codec.Publish{Topic: []byte("$saguin/consumer/events/seek"), Payload: []byte("2")}
	p.Properties.ResponseTopic = []byte("my/replies")
	p.Properties.Present.Set(codec.PropResponseTopic)
	sub.sendPublish(p)
	reply := sub.expectPublishWithin(waitLong)
	if string(reply.Topic) != "my/replies" || string(reply.Payload) != "2" {
		t.Fatalf("QoS 0 seek: first %q on %s, want the reply 2 on my/replies", reply.Payload, reply.Topic)
	}
	publishAll(t, b, "ev/z", "m2")
	if got := payloads(sub.readUntil("m2")); strings.Join(got, ",") != "r2,m1" {
		t.Fatalf("after the QoS 0 seek: %v, want r2,m1", got)
	}
}

// A6.12, A6.1: a dead-letter channel is an append channel a seek moves,
// named <queue>__dlq.
func TestSeekMovesAReaderOfADeadLetterChannel(t *testing.T) {
	b := startQueueBroker(t, "jobs:\n  type: queue\n  filter: work/+/inspect\n  retry:\n    max_attempts: 1")
	w := queueWorker(t, b.addr, "w1")
	pub := queueProducer(t, b.addr)
	pub.publishQoS1("work/7/inspect", []byte("doomed"), 1)
	w.answer(w.takeOffer(), "return")
	if b.log.wait(regexp.MustCompile(`queue: dead-lettered`), 5*time.Second) == "" {
		t.Fatal("no dead-letter move logged")
	}
	r := dialRaw(t, b.addr, codec.Version5)
	r.mustConnect("dlq-reader", freshSession(300))
	if reply, code := r.seekAs("jobs__dlq", "-1", "", 1); code != codec.Success || reply == nil || string(reply.Payload) != "2" {
		t.Fatalf("seek -1 on jobs__dlq: PUBACK 0x%02x, reply %v; want 0x00 and 2", byte(code), reply)
	}
	r.mustSubscribe(2, "work/+/inspect/__dlq", 1)
	r.expectNothing("the dead letter, behind the sought position")
	reply, code, early := r.seekSeeing("jobs__dlq", "0", "my/replies", 3)
	if code != codec.Success || reply == nil || string(reply.Payload) != "1" {
		t.Fatalf("seek 0 on jobs__dlq: PUBACK 0x%02x, reply %v; want 0x00 and 1", byte(code), reply)
	}
	if len(early) == 0 {
		early = append(early, r.expectPublishWithin(waitLong))
	}
	if string(early[0].Payload) != "doomed" {
		t.Fatalf("after seek 0: %q, want the dead letter", early[0].Payload)
	}
}

// A2.15, A3.19: an append consumer that takes no bytes is disconnected when
// a write waits past limits.write_timeout - not dropped from, and its
// position unharmed: resumed, it is served every record from the first.
// session_queue_bytes is raised so that what may be in flight (half of it,
// A2.16) is more than the sockets' buffers hold.
func TestAppendConsumerTakingNoBytesIsDisconnectedAndLosesNothing(t *testing.T) {
	b := startBrokerIn(t, t.TempDir(), brokerConfig{Limits: "write_timeout: 500ms\nsession_queue_bytes: 67108864", Channels: "events:\n  type: append\n  filter: ev/#"})
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	record := make([]byte, 32<<10)
	const n = 200 // 6.4 MB, more than the sockets hold: a write waits
	for i := 1; i <= n; i++ {
		copy(record, fmt.Sprint(i, "|"))
		pub.publishQoS1("ev/big", record, uint16(i))
	}
	deaf := dialRaw(t, b.addr, codec.Version5)
	deafen(t, deaf)
	deaf.mustConnect("deaf", freshSession(300))
	deaf.mustSubscribe(1, "ev/#", 1)
	if b.log.wait(regexp.MustCompile(`client_id=deaf .*write_timeout|write_timeout.*client_id=deaf`), waitLong) == "" {
		t.Fatal("the consumer taking no bytes was not disconnected for limits.write_timeout")
	}
	back := dialRaw(t, b.addr, codec.Version5)
	if ack := back.mustConnect("deaf", session(300)); !ack.SessionPresent {
		t.Fatal("the write_timeout ended the session")
	}
	pub.publishQoS1("ev/big", []byte("end"), n+1)
	got := back.readUntil("end")
	if len(got) != n || offsetOf(t, got[0]) != 1 {
		t.Fatalf("resumed with %d records from offset %d, want all %d from 1: nothing was acknowledged", len(got), offsetOf(t, got[0]), n)
	}
	for i, p := range got {
		if offsetOf(t, p) != uint64(i+1) {
			t.Fatalf("record %d is offset %d: out of order or skipped", i, offsetOf(t, p))
		}
	}
}
