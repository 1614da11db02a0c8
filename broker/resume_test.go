package broker

import (
	"testing"

	"github.com/saguin-edge/saguin/netloop/delivery"
)

// TestALateAcknowledgementOnATakenOverConnectionLeavesTheDeliveryToTheNewOne
// is invariant 17 for a delivery: the old connection settled the exchange on
// its side, but a connection that no longer owns the session changes nothing,
// so the session still owes it and the connection that owns it now is sent it
// again, marked DUP - it is not left on nobody's wire until the next resume.
func TestALateAcknowledgementOnATakenOverConnectionLeavesTheDeliveryToTheNewOne(t *testing.T) {
	b := newStores(t, 0).broker(t, Options{})
	old := &ackClient{id: "dev"}
	connectAs(t, b, old, true, 60, nil)
	b.Subscribe(old, []byte("t"), delivery.SubscribeOptions{QoS: 1})
	publish(b, "p", "t", "job", 1, false)
	old.waitPayloads(t, "job")
	newer := &ackClient{id: "dev"}
	connectAs(t, b, newer, false, 60, nil)
	b.Acked(old, old.refs[0]) // its PUBACK, read after the takeover
	newer.waitPayloads(t, "job")
	b.Acked(newer, newer.refs[0])
	b.Disconnected(old, 60, false) // its end hands back nothing: it had settled the exchange
	if got := newer.payloads(); len(got) != 1 {
		t.Fatalf("the new connection was sent %q, want the delivery exactly once", got)
	}
}
