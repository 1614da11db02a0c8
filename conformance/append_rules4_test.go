package conformance

import (
	"fmt"
	"strings"
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// Channel rules of checklist-channels.md A and D that the audit of
// notes/s22/audit-chA.md found without a test (issue 11): each test is
// named after its rule and starts its own broker.

// readEach reads PUBLISHes, acknowledging each, until every payload of want
// has arrived, and fails on one it does not want, or on a second copy.
func (c *raw) readEach(why string, want ...string) {
	c.t.Helper()
	left := map[string]bool{}
	for _, w := range want {
		left[w] = true
	}
	for len(left) > 0 {
		p := c.expectPublishWithin(waitLong)
		c.ackDelivery(p)
		if !left[string(p.Payload)] {
			c.t.Fatalf("%s: got %q on %s, want only %v", why, p.Payload, p.Topic, want)
		}
		delete(left, string(p.Payload))
	}
}

// D2.3 (RFC 0002 "What a filter reaches"; notes-0001 "Invariant 11 - A
// wildcard never reaches a queue"), MQTT 5: a filter crossing a queue is
// served every other channel it touches - an append record and broadcast
// messages, also one beside the queue's filter - and never the queue's job,
// which only the worker on $saguin/queue/jobs is offered.
func TestD2_3AFilterCrossingAQueueGetsEverythingButTheQueuesJobs(t *testing.T) {
	b := startQueueBroker(t, "events:\n  type: append\n  filter: ev/#\njobs:\n  type: queue\n  filter: work/+/inspect")
	all := durableConsumer(t, b, codec.Version5, "all", "#", 1)
	work := durableConsumer(t, b, codec.Version5, "work", "work/#", 1)
	w := queueWorker(t, b.addr, "w1")
	pub := queueProducer(t, b.addr)
	pub.publishQoS1("work/7/inspect", []byte("job"), 1)
	pub.publishQoS1("ev/a", []byte("record"), 2)
	pub.publishQoS1("plain/x", []byte("broadcast"), 3)
	pub.publishQoS1("work/7/other", []byte("beside"), 4)
	o := w.takeOffer()
	if string(o.Payload) != "job" || string(o.Topic) != "work/7/inspect" {
		t.Fatalf("the worker was offered %q on %s, want the job on work/7/inspect", o.Payload, o.Topic)
	}
	all.readEach("#", "record", "broadcast", "beside")
	work.readEach("work/#", "beside")
	all.expectNothing("# after the job was offered: the queue's job")
	work.expectNothing("work/# after the job was offered: the queue's job")
	w.answer(o, "ack")
}

// A13.5 (notes-0003 "Exactly once, and where the unfinished ones wait"),
// MQTT 5: a QoS 2 publish to an append channel reaches a shared group
// member at its release, not at its arrival - nothing while the exchange
// waits at PUBREC, the record once the PUBREL is sent.
func TestA13_5AQoS2AppendPublishReachesASharedGroupAtPubrel(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	member := dialRaw(t, b.addr, codec.Version5)
	member.mustConnect("member", nil)
	member.mustSubscribe(1, "$share/g/ev/#", 2)
	pub := appendPublisher(t, b)
	pub.publish("ev/x", []byte("held"), 2, 1)
	if code := pub.expectAck(codec.TypePubrec, 1); code != codec.Success {
		t.Fatalf("PUBREC 0x%02x, want 0x00", byte(code))
	}
	member.expectNothing("the group member before the PUBREL")
	pub.sendAck(codec.TypePubrel, 1)
	if code := pub.expectAck(codec.TypePubcomp, 1); code != codec.Success {
		t.Fatalf("PUBCOMP 0x%02x, want 0x00", byte(code))
	}
	if got := member.receiveOne(); string(got.Payload) != "held" || string(got.Topic) != "ev/x" {
		t.Fatalf("the group member got %q on %s after the PUBREL, want held on ev/x", got.Payload, got.Topic)
	}
	member.expectNothing("the group member after the record: a second copy")
}

// receiveOne reads the next PUBLISH and completes its exchange as a
// receiver (PUBREC, then PUBCOMP for the PUBREL of a QoS 2 one).
func (c *raw) receiveOne() *codec.Publish {
	c.t.Helper()
	p := c.expectPublishWithin(waitLong)
	switch p.QoS {
	case 1:
		c.sendAck(codec.TypePuback, p.PacketID)
	case 2:
		c.sendAck(codec.TypePubrec, p.PacketID)
		c.expectAck(codec.TypePubrel, p.PacketID)
		c.sendAck(codec.TypePubcomp, p.PacketID)
	}
	return p
}

// A3.7 (notes-0003 "What a reconnecting consumer receives"), MQTT 5, no
// restart: a durable consumer that read six records and acknowledged two
// resumes with the four it did not acknowledge re-sent first, then the
// records written while it was away - in order, none skipped, none twice.
// What the broker does not do: re-send the four as the session's in-flight
// deliveries (MQTT-4.4.0-1 original Packet Identifiers, MQTT-3.3.1-1 DUP 1);
// it serves them again from the stored position, DUP 0 under new ids, so
// this test does not check DUP or the ids.
func TestA3_7OnResumeUnacknowledgedDeliveriesComeFirstThenNewRecords(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	pub := appendPublisher(t, b)
	for i := 1; i <= 6; i++ {
		pub.publishQoS1("ev/x", []byte(fmt.Sprint("r", i)), uint16(i))
	}
	sub := durableConsumer(t, b, codec.Version5, "resumer", "ev/#", 1)
	for i := 1; i <= 6; i++ {
		p := sub.expectPublishWithin(waitLong)
		if string(p.Payload) != fmt.Sprint("r", i) {
			t.Fatalf("delivery %d: %q, want r%d", i, p.Payload, i)
		}
		if i <= 2 {
			sub.ackDelivery(p)
		}
	}
	sub.leave()
	pub.publishQoS1("ev/x", []byte("r7"), 7)
	pub.publishQoS1("ev/x", []byte("r8"), 8)
	sub = resume(t, b.addr, codec.Version5, "resumer", 300)
	pub.publishQoS1("ev/x", []byte("end"), 9)
	got := sub.readUntil("end")
	if strings.Join(payloads(got), ",") != "r3,r4,r5,r6,r7,r8" {
		t.Fatalf("after the resume: %v, want r3..r6 re-sent, then r7,r8", payloads(got))
	}
	for i, p := range got {
		if want := uint64(i + 3); offsetOf(t, p) != want {
			t.Fatalf("%q at offset %d, want %d", p.Payload, offsetOf(t, p), want)
		}
	}
}
