package netloop

import (
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// A delivery shed to make room while the loop is encoding it from a snapshot
// keeps its message until the loop settles the snapshot: giving it back at
// the shed would let the pool reuse memory the loop is still reading.
func TestADeliveryShedWhileTheLoopReadsItKeepsItsMessageUntilPopped(t *testing.T) {
	q := outQueue{limit: 200}
	first := delivery.AcquireMessage(&codec.Publish{Topic: []byte("a"), Payload: []byte("first")}, time.Now)
	cs := new(Counters)
	q.push(outEntry{msg: first, Delivery: delivery.Delivery{QoS: 1}}, cs)
	first.Release() // the route lets go: the queue's reference is the only one
	batch := q.snapshot(make([]outEntry, 0, 8))
	big := delivery.AcquireMessage(&codec.Publish{Topic: []byte("a"), Payload: make([]byte, 300)}, time.Now)
	q.push(outEntry{msg: big, Delivery: delivery.Delivery{QoS: 1}}, cs) // sheds first
	big.Release()
	if n := cs.DeliveriesDroppedQueue.Load(); n != 1 {
		t.Fatalf("%d shed, want the first delivery", n)
	}
	if got := string(batch[0].msg.Payload); got != "first" || first.Holders() != 1 {
		t.Fatalf("the snapshot's message reads %q with %d references while the loop holds it", got, first.Holders())
	}
	q.popThrough(0, batch)
	if first.Holders() != 0 {
		t.Fatalf("%d references left once the snapshot settled, want 0", first.Holders())
	}
	q.close()
	if big.Holders() != 0 {
		t.Fatalf("%d references left on a message the closed queue held, want 0", big.Holders())
	}
}
