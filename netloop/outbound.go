package netloop

import (
	"sync"
	"sync/atomic"

	"github.com/saguin-edge/saguin/netloop/delivery"
)

// outEntryCost is what one queued delivery's bookkeeping is charged beside its
// message's bytes, so that many small messages cannot pass the bound.
const outEntryCost = 64

// entrySize is what a queued or in-flight delivery of m is charged against
// the connection's bounds: its message's bytes and the entry's fixed cost.
func entrySize(m *delivery.Message) int { return m.Bytes() + outEntryCost }

// outEntry is one delivery waiting to be written: the delivery as the
// handler gave it, whole, and its place in the queue.
type outEntry struct {
	msg *delivery.Message
	delivery.Delivery
	seq uint64 // position in the queue, so a drained batch pops exactly itself
}

// outQueue holds the deliveries a connection has not yet handed to its
// transport, in order, bounded in bytes (limits.session_queue_bytes). It is
// the one piece of a connection other goroutines touch: any goroutine may
// push, only the connection's loop pops.
//
// Every queued entry holds a reference to its message (Message.Retain),
// given back when the entry is popped, shed or forgotten at close. Fields
// are sized and grouped so nothing is padded: every connection has one.
type outQueue struct {
	mu      sync.Mutex
	ring    []outEntry
	head    int32
	n       int32
	bytes   int
	limit   int
	nextSeq uint64
	// lent is the last entry the loop's snapshot copied out and popThrough
	// has not yet settled: the loop may still be reading those messages,
	// so an entry up to it shed meanwhile leaves its reference to
	// popThrough, which finds it missing from the ring and gives it back.
	lent uint64
	// pushed is set by every push and cleared by trimIdle, which gives a
	// grown ring back only after a whole tick with none: giving it back
	// the moment it empties made a subscriber kept busy by bursts regrow
	// its ring for every one (94% of the bytes a fan-in benchmark
	// allocated).
	pushed bool
	closed bool
	grown  atomic.Bool // the ring is longer than keptRing: the tick may trim it
}

// keptRing is the longest ring an emptied queue gives back at once, to
// ringPools; one grown past it by a burst is given back once the queue has
// been idle for a tick.
const keptRing = 64

// ringPools hold the rings of 8, 16, 32 and 64 entries emptied queues gave
// back. A queue holds a ring only while deliveries wait in it: an idle
// connection that was once sent something kept its ring (640 bytes and up)
// for the rest of its life, and taken from a pool it costs a subscriber
// kept busy by bursts no allocation per burst (the reason the ring was
// kept). Every slot of a ring given back is zero: popLocked clears each.
var ringPools [4]sync.Pool

// ringFromPool is a ring of n entries (8, 16, 32 or 64), from its pool when
// one waits there.
func ringFromPool(n int) []outEntry {
	switch n {
	case 8:
		if r, ok := ringPools[0].Get().(*[8]outEntry); ok {
			return r[:]
		}
	case 16:
		if r, ok := ringPools[1].Get().(*[16]outEntry); ok {
			return r[:]
		}
	case 32:
		if r, ok := ringPools[2].Get().(*[32]outEntry); ok {
			return r[:]
		}
	case 64:
		if r, ok := ringPools[3].Get().(*[64]outEntry); ok {
			return r[:]
		}
	}
	return make([]outEntry, n)
}

// giveRing puts an empty ring of 8 to 64 entries back in its pool; a longer
// one is left to the collector.
func giveRing(r []outEntry) {
	switch len(r) {
	case 8:
		ringPools[0].Put((*[8]outEntry)(r))
	case 16:
		ringPools[1].Put((*[16]outEntry)(r))
	case 32:
		ringPools[2].Put((*[32]outEntry)(r))
	case 64:
		ringPools[3].Put((*[64]outEntry)(r))
	}
}

// push queues e. Past the bound a QoS 0 delivery is shed; a QoS 1 delivery
// makes room by shedding the oldest entries not yet written (RFC 0002
// limits.session_queue_bytes: full means the oldest goes), and is itself
// always queued when nothing else is, however large. What is shed is counted
// in cs.
func (q *outQueue) push(e outEntry, cs *Counters) bool {
	size := entrySize(e.msg)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	if q.bytes+size > q.limit && q.n > 0 {
		if e.QoS == 0 {
			cs.DeliveriesDropped.Add(1)
			return false
		}
		for q.n > 0 && q.bytes+size > q.limit {
			old := q.popLocked()
			q.bytes -= entrySize(old.msg)
			if old.QoS == 0 {
				cs.DeliveriesDropped.Add(1)
			} else {
				cs.DeliveriesDroppedQueue.Add(1)
			}
			if old.seq > q.lent {
				old.msg.Release() // else the loop's snapshot holds it (lent)
			}
		}
	}
	e.msg.Retain()
	q.pushed = true
	if int(q.n) == len(q.ring) {
		q.grow()
	}
	q.nextSeq++
	e.seq = q.nextSeq
	q.ring[(int(q.head)+int(q.n))%len(q.ring)] = e
	q.n++
	q.bytes += size
	return true
}

func (q *outQueue) grow() {
	nr := ringFromPool(max(8, 2*len(q.ring)))
	for i := 0; i < int(q.n); i++ {
		j := (int(q.head) + i) % len(q.ring)
		nr[i], q.ring[j] = q.ring[j], outEntry{}
	}
	if q.ring != nil {
		giveRing(q.ring)
	}
	q.ring, q.head = nr, 0
	if len(nr) > keptRing {
		q.grown.Store(true)
	}
}

func (q *outQueue) popLocked() outEntry {
	e := q.ring[q.head]
	q.ring[q.head] = outEntry{}
	q.head = int32((int(q.head) + 1) % len(q.ring))
	q.n--
	return e
}

// peek returns the oldest entry without removing it.
func (q *outQueue) peek() (outEntry, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n == 0 {
		return outEntry{}, false
	}
	return q.ring[q.head], true
}

// snapshot copies up to cap(dst) entries from the head, oldest first, without
// removing them: the loop encodes them outside the lock and then pops what
// it wrote with popThrough, passing the snapshot back.
func (q *outQueue) snapshot(dst []outEntry) []outEntry {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i := 0; i < int(q.n) && len(dst) < cap(dst); i++ {
		dst = append(dst, q.ring[(int(q.head)+i)%len(q.ring)])
	}
	if len(dst) > 0 {
		q.lent = dst[len(dst)-1].seq
	}
	return dst
}

// popThrough removes every entry up to and including seq and settles lent:
// the loop has finished reading batch, its last snapshot. An entry of batch
// a push shed meanwhile is no longer in the ring, and its reference, left
// by the push, is given back here.
func (q *outQueue) popThrough(seq uint64, batch []outEntry) {
	q.mu.Lock()
	defer q.mu.Unlock()
	first := q.nextSeq + 1 // the oldest seq still queued
	if q.n > 0 {
		first = q.ring[q.head].seq
	}
	for _, e := range batch {
		if e.seq < first {
			e.msg.Release()
		}
	}
	q.lent = 0
	for q.n > 0 && q.ring[q.head].seq <= seq {
		e := q.popLocked()
		q.bytes -= entrySize(e.msg)
		e.msg.Release()
	}
	if q.n == 0 && len(q.ring) <= keptRing {
		// Emptied: the ring goes back to its pool until the next delivery
		// (a longer one waits for trimIdle's idle tick).
		giveRing(q.ring)
		q.ring, q.head = nil, 0
	}
}

// held copies every entry, oldest first, each with a reference of its own
// that the caller gives back: what an ending connection hands its handler.
func (q *outQueue) held() []outEntry {
	q.mu.Lock()
	defer q.mu.Unlock()
	dst := make([]outEntry, 0, q.n)
	for i := 0; i < int(q.n); i++ {
		e := q.ring[(int(q.head)+i)%len(q.ring)]
		e.msg.Retain()
		dst = append(dst, e)
	}
	return dst
}

// trimIdle gives back a ring a burst grew once the queue is empty and nothing
// was pushed since the last call (the server's tick).
func (q *outQueue) trimIdle() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pushed {
		q.pushed = false
		return
	}
	if q.n == 0 && len(q.ring) > keptRing {
		q.ring, q.head = nil, 0
		q.grown.Store(false)
	}
}

// last is the position of the newest entry ever queued: entries queued later
// have higher ones.
func (q *outQueue) last() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.nextSeq
}

// len is how many entries wait.
func (q *outQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return int(q.n)
}

// room is how many entries wait, and whether push would queue one of size
// without shedding anything (it or another).
func (q *outQueue) room(size int) (int, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return int(q.n), !q.closed && (q.n == 0 || q.bytes+size <= q.limit)
}

// pending reports whether anything waits.
func (q *outQueue) pending() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n > 0
}

// close refuses every later push and forgets what waits. It is called on the
// loop, never between a snapshot and its popThrough.
func (q *outQueue) close() {
	q.mu.Lock()
	for q.n > 0 {
		q.popLocked().msg.Release()
	}
	q.closed = true
	if q.ring != nil {
		giveRing(q.ring)
	}
	q.ring, q.head, q.n, q.bytes = nil, 0, 0, 0
	q.mu.Unlock()
}
