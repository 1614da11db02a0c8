package netloop

import (
	"testing"

	"github.com/saguin-edge/saguin/netloop/delivery"
)

func msgOf(n int) *delivery.Message {
	return &delivery.Message{Topic: []byte("t"), Payload: make([]byte, n)}
}

func TestQoS0DeliveryPastTheQueueBoundIsShedAndCountedAsDropped(t *testing.T) {
	q := outQueue{limit: 1000}
	var cs Counters
	if !q.push(outEntry{msg: msgOf(600)}, &cs) {
		t.Fatal("first delivery shed")
	}
	if q.push(outEntry{msg: msgOf(600)}, &cs) {
		t.Fatal("a QoS 0 delivery past the bound was queued")
	}
	if n := cs.DeliveriesDropped.Load(); n != 1 || q.n != 1 {
		t.Fatalf("dropped %d queued %d, want 1 and 1", n, q.n)
	}
}

func TestQoS1DeliveryPastTheQueueBoundMakesRoomByDroppingTheOldestCountedAsSessionQueueFull(t *testing.T) {
	q := outQueue{limit: 1000}
	var cs Counters
	first, second := msgOf(400), msgOf(400)
	q.push(outEntry{msg: first, Delivery: delivery.Delivery{QoS: 1}}, &cs)
	q.push(outEntry{msg: second, Delivery: delivery.Delivery{QoS: 1}}, &cs)
	newest := msgOf(400)
	if !q.push(outEntry{msg: newest, Delivery: delivery.Delivery{QoS: 1}}, &cs) {
		t.Fatal("the QoS 1 delivery was refused")
	}
	if e, _ := q.peek(); e.msg != second {
		t.Fatal("the oldest was not the one given up")
	}
	if n, d := cs.DeliveriesDroppedQueue.Load(), cs.DeliveriesDropped.Load(); n != 1 || d != 0 {
		t.Fatalf("session_queue_full %d, QoS 0 dropped %d; want 1 and 0", n, d)
	}
}

func TestADeliveryLargerThanTheBoundIsQueuedWhenNothingElseIs(t *testing.T) {
	q := outQueue{limit: 100}
	if !q.push(outEntry{msg: msgOf(5000)}, new(Counters)) {
		t.Fatal("a delivery alone in its queue was shed for its size")
	}
}

func TestQueueKeepsOrderAcrossGrowth(t *testing.T) {
	q := outQueue{limit: 1 << 30}
	var msgs []*delivery.Message
	for i := 0; i < 100; i++ {
		m := msgOf(i)
		msgs = append(msgs, m)
		q.push(outEntry{msg: m}, new(Counters))
		if i%3 == 0 {
			e, _ := q.peek()
			if e.msg != msgs[0] {
				t.Fatal("order lost")
			}
			q.popThrough(e.seq, nil)
			msgs = msgs[1:]
		}
	}
	for len(msgs) > 0 {
		e, ok := q.peek()
		if !ok || e.msg != msgs[0] {
			t.Fatal("order lost")
		}
		q.popThrough(e.seq, nil)
		msgs = msgs[1:]
	}
	if q.bytes != 0 {
		t.Fatalf("%d bytes counted in an empty queue", q.bytes)
	}
}

func TestClosedQueueRefusesDeliveries(t *testing.T) {
	q := outQueue{limit: 1000}
	q.close()
	if q.push(outEntry{msg: msgOf(1)}, new(Counters)) {
		t.Fatal("a closed queue took a delivery")
	}
}

func TestPopThroughSkipsWhatAPushAlreadyShed(t *testing.T) {
	q := outQueue{limit: 1000}
	q.push(outEntry{msg: msgOf(400), Delivery: delivery.Delivery{QoS: 1}}, new(Counters))
	q.push(outEntry{msg: msgOf(400), Delivery: delivery.Delivery{QoS: 1}}, new(Counters))
	batch := q.snapshot(make([]outEntry, 0, 8))
	q.push(outEntry{msg: msgOf(400), Delivery: delivery.Delivery{QoS: 1}}, new(Counters)) // sheds the oldest while the batch is out
	q.popThrough(batch[1].seq, batch)
	if q.n != 1 {
		t.Fatalf("%d left, want only the delivery pushed after the batch", q.n)
	}
}

// A queue holds a ring only while deliveries wait in it: once the loop has
// written everything it goes back to its pool, so an idle connection that
// was once sent something holds none, and the next delivery takes one
// again with its order kept.
func TestAnEmptiedQueueGivesItsRingBack(t *testing.T) {
	q := outQueue{limit: 1 << 20}
	var cs Counters
	for i := 0; i < 20; i++ { // grown past the first ring of 8
		q.push(outEntry{msg: msgOf(1)}, &cs)
	}
	batch := q.snapshot(make([]outEntry, 0, 32))
	q.popThrough(batch[len(batch)-1].seq, batch)
	if q.ring != nil || q.n != 0 {
		t.Fatalf("an emptied queue keeps a ring of %d entries", len(q.ring))
	}
	a, b := msgOf(1), msgOf(2)
	q.push(outEntry{msg: a}, &cs)
	q.push(outEntry{msg: b}, &cs)
	batch = q.snapshot(batch[:0])
	if len(batch) != 2 || batch[0].msg != a || batch[1].msg != b {
		t.Fatalf("after the ring went back the queue holds %d entries out of order", len(batch))
	}
}

// The in-flight window goes back to its pool with its last acknowledged
// delivery: a Go map never shrinks, and a connection kept the window its
// busiest moment grew for the rest of its life.
func TestTheLastAcknowledgementGivesTheWindowBack(t *testing.T) {
	c := &Conn{clientRecvMax: 10}
	var ids []uint16
	for i := 0; i < 3; i++ {
		m := msgOf(1)
		m.Retain()
		id := c.nextPacketID()
		c.inflight[id] = inflight{msg: m}
		ids = append(ids, id)
	}
	for i, id := range ids {
		c.settle(id, c.inflight[id])
		if last := i == len(ids)-1; (c.inflight == nil) != last {
			t.Fatalf("after %d of %d acknowledgements the window is held: %v", i+1, len(ids), c.inflight != nil)
		}
	}
}
