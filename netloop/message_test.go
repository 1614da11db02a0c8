package netloop_test

import (
	"fmt"
	"testing"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
)

// Routed messages are pooled (delivery.Message): a queued delivery must keep
// its message until it is written and acknowledged, however many later
// publishes are routed meanwhile. A Receive Maximum of 1 keeps all but one
// delivery waiting in the subscriber's queue while the publisher's messages
// go through the pool; every one must arrive as it was published.
func TestAQueuedDeliveryArrivesAsPublishedWhileLaterPublishesReuseThePool(t *testing.T) {
	s := startServer(t, netloop.Options{})
	sub := dial(t, s, codec.Version5)
	sub.connect("slow", func(p *codec.Connect) {
		p.Properties.ReceiveMaximum = 1
		p.Properties.Present.Set(codec.PropReceiveMaximum)
	})
	if codes := sub.subscribe(1, "pool/#", 1); codes[0] != codec.GrantedQoS1 {
		t.Fatalf("SUBACK %v", codes)
	}
	pub := dial(t, s, codec.Version5)
	pub.connect("pub", nil)
	const n = 300
	payload := func(i int) string { return fmt.Sprintf("message %03d of the pool test", i) }
	for i := range n {
		// QoS 0 and QoS 1 alternate: a QoS 0 delivery waits behind the QoS
		// 1 one the window holds back, so both kinds sit in the queue.
		pub.publish(fmt.Sprintf("pool/%d", i%7), payload(i), byte(i%2), uint16(i+1))
	}
	for range n / 2 {
		if h, _ := pub.read(); h.Type != codec.TypePuback {
			t.Fatalf("want PUBACK, got %s", h.Type)
		}
	}
	for i := range n {
		p := sub.expectPublish()
		if string(p.Payload) != payload(i) || string(p.Topic) != fmt.Sprintf("pool/%d", i%7) {
			t.Fatalf("delivery %d: %q on %q, want %q on pool/%d", i, p.Payload, p.Topic, payload(i), i%7)
		}
		if p.QoS == 1 {
			sub.send((&codec.Ack{Type: codec.TypePuback, PacketID: p.PacketID}).Append(nil, codec.Version5))
		}
	}
}
