package conformance

import (
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
