package conformance

import (
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// Queue rules of checklist C that the first queue tests left untested.

// TestQueueC3_11OffersGoOutInOffsetOrder: checklist C3.11 - a queue offers
// its jobs in offset order, the order they were stored in.
func TestQueueC3_11OffersGoOutInOffsetOrder(t *testing.T) {
	b := startQueueBroker(t, queueChannel)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("producer", nil)
	want := []string{"j1", "j2", "j3", "j4"}
	for i, p := range want {
		pub.publishQoS1("work/"+p+"/inspect", []byte(p), uint16(i+1))
	}
	w := queueWorker(t, b.addr, "w1")
	for _, p := range want {
		o := w.expectPublishWithin(5 * time.Second)
		if string(o.Payload) != p {
			t.Fatalf("offered %q, want %q (offset order %v)", o.Payload, p, want)
		}
		w.ackDelivery(o)
		w.answer(o, "ack")
	}
}

// TestQueueC4_4AWorkerOfTwoQueuesHoldsOneJobFromEach: checklist C4.4 - the
// one-job lease is per queue, so a worker subscribed to two queues holds a
// job of each at once, and no second job of either.
func TestQueueC4_4AWorkerOfTwoQueuesHoldsOneJobFromEach(t *testing.T) {
	b := startQueueBroker(t, queueChannel+"\nmail:\n  type: queue\n  filter: mail/+\n  visibility_timeout: 30s")
	w := queueWorker(t, b.addr, "w1")
	if got := w.subscribe(2, "$saguin/queue/mail", 1); len(got) != 1 || got[0] != codec.GrantedQoS1 {
		t.Fatalf("SUBACK %v for the second queue's form, want 0x01", got)
	}
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("producer", nil)
	pub.publishQoS1("work/1/inspect", []byte("job-a"), 1)
	pub.publishQoS1("work/2/inspect", []byte("job-b"), 2)
	pub.publishQoS1("mail/1", []byte("mail-a"), 3)
	pub.publishQoS1("mail/2", []byte("mail-b"), 4)
	got := map[string]bool{}
	for i := 0; i < 2; i++ {
		o := w.expectPublishWithin(5 * time.Second)
		got[string(o.Payload)] = true
	}
	if !got["job-a"] || !got["mail-a"] {
		t.Fatalf("offers %v, want the first job of each queue", got)
	}
	w.expectNothing("one job held from each queue: no second of either")
}

// TestQueueC3_8OfferCarriesSubscriptionIdentifierAndCountedDownExpiry:
// checklist C3.8 - an offer carries the Subscription Identifier of the
// worker's subscription and the Message Expiry Interval counted down by the
// time the job waited.
func TestQueueC3_8OfferCarriesSubscriptionIdentifierAndCountedDownExpiry(t *testing.T) {
	b := startQueueBroker(t, queueChannel)
	w := dialRaw(t, b.addr, codec.Version5)
	w.mustConnect("w1", nil)
	ack := w.subscribeWith(1, func(p *codec.Properties) {
		p.SubscriptionIDs = append(p.SubscriptionIDs, 42)
		p.Present.Set(codec.PropSubscriptionID)
	}, codec.Subscription{Filter: []byte(queueForm), QoS: 1})
	if len(ack.ReasonCodes) != 1 || ack.ReasonCodes[0] != codec.GrantedQoS1 {
		t.Fatalf("SUBACK %v, want 0x01", ack.ReasonCodes)
	}
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("producer", nil)
	p := &codec.Publish{QoS: 1, PacketID: 1, Topic: []byte("work/1/inspect"), Payload: []byte("a")}
	p.Properties.MessageExpiry = 100
	p.Properties.Present.Set(codec.PropMessageExpiry)
	if code := pub.publishAs(p, 1); code != codec.Success {
		t.Fatalf("PUBACK 0x%02x", byte(code))
	}
	check := func(o *codec.Publish, maxExpiry uint32) {
		t.Helper()
		if len(o.Properties.SubscriptionIDs) != 1 || o.Properties.SubscriptionIDs[0] != 42 {
			t.Errorf("offer's Subscription Identifiers %v, want [42]", o.Properties.SubscriptionIDs)
		}
		if !o.Properties.Present.Has(codec.PropMessageExpiry) || o.Properties.MessageExpiry == 0 || o.Properties.MessageExpiry > maxExpiry {
			t.Errorf("offer's Message Expiry Interval %d (present %v), want 1..%d",
				o.Properties.MessageExpiry, o.Properties.Present.Has(codec.PropMessageExpiry), maxExpiry)
		}
	}
	first := w.expectPublishWithin(5 * time.Second)
	check(first, 100)
	w.ackDelivery(first) // the 1 s visibility timeout starts here
	again := w.expectPublishWithin(5 * time.Second)
	if offerAttempt(t, again) != 2 {
		t.Fatalf("after the timeout: attempt %d", offerAttempt(t, again))
	}
	// At least a second has passed since the publish: the interval is counted down.
	check(again, 99)
}
