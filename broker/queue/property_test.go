package queue

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// TestRandomWorkersKeepInvariants3To7 drives random workers - publishing,
// PUBACKs, acks, returns, stale and foreign answers, disconnects, silence
// and time passing - and checks after every step: a superseded delivery
// resolves nothing (3), one holder per job (4), every published job is
// waiting, out, resolved or dead-lettered exactly once (5), a PUBACK
// resolves nothing (6), no visibility deadline runs while delivering (7),
// and the counters' identity (C15).
func TestRandomWorkersKeepInvariants3To7(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		o := opts()
		o.MaxAttempts, o.VisibilityTimeout = 3, 10*time.Second
		o.Backoff, o.BackoffBase = BackoffLinear, time.Second
		r := newRig(t, o)
		ids := []string{"a", "b", "c", "d"}
		live := map[string]*fakeClient{}
		acked := map[string]int{} // offers already PUBACKed, by worker
		published := 0
		for step := 0; step < 600; step++ {
			depth, ackedN := r.q.Depth(), r.e.C.Acknowledged.Load()
			id := ids[rng.IntN(len(ids))]
			w := live[id]
			what := rng.IntN(10)
			switch {
			case what == 0 || w == nil && what < 3:
				if w == nil {
					live[id] = r.worker(id)
					acked[id] = 0
				} else {
					r.publish("work/1/inspect", "j")
					published++
				}
			case w == nil:
				r.publish("work/1/inspect", "j")
				published++
			case what == 1:
				r.gone(id)
				delete(live, id)
			case what == 2:
				r.advance(time.Duration(rng.IntN(15)) * time.Second)
			case what == 3:
				r.tick()
			default:
				offers := w.offers()
				if len(offers) == 0 {
					r.tick()
					break
				}
				cur := offers[len(offers)-1]
				switch rng.IntN(6) {
				case 0:
					if acked[id] < len(offers) {
						acked[id] = len(offers)
						r.puback(w, cur)
						if r.q.Depth() != depth {
							t.Fatalf("seed %d step %d: a PUBACK resolved a job (invariant 6)", seed, step)
						}
					}
				case 1:
					r.answer(id, cur, "ack")
				case 2:
					r.answer(id, cur, "return")
				case 3:
					if len(offers) > 1 {
						old := offers[rng.IntN(len(offers)-1)]
						r.answer(id, old, "ack")
						if r.e.C.Acknowledged.Load() != ackedN && r.q.Depth() == depth {
							t.Fatalf("seed %d step %d: a superseded delivery resolved a job (invariant 3)", seed, step)
						}
					}
				case 4:
					other := ids[rng.IntN(len(ids))]
					if other != id {
						before := r.e.C.Acknowledged.Load()
						r.answer(other, cur, "ack")
						if r.e.C.Acknowledged.Load() != before {
							t.Fatalf("seed %d step %d: another session's ack resolved a job", seed, step)
						}
					}
				default:
					// silence
				}
			}
			checkInvariants(t, r, seed, step, published)
		}
	}
}

func checkInvariants(t *testing.T, r *rig, seed uint64, step, published int) {
	t.Helper()
	e := r.e
	// Invariant 4: each job out with one worker, each worker holding one.
	holders := map[uint64]string{}
	for _, w := range e.workers {
		if w.job == 0 {
			continue
		}
		if prev, dup := holders[w.job]; dup {
			t.Fatalf("seed %d step %d: job %d held by %s and %s", seed, step, w.job, prev, w.id)
		}
		holders[w.job] = w.id
	}
	for off, l := range e.out {
		if holders[off] != l.holder {
			t.Fatalf("seed %d step %d: job %d out with %q, worker records %q", seed, step, off, l.holder, holders[off])
		}
		st, epoch, ok := r.q.State(off)
		if !ok || epoch != l.d.Epoch {
			t.Fatalf("seed %d step %d: job %d out at epoch %d, store at %d (%v)", seed, step, off, l.d.Epoch, epoch, ok)
		}
		// Invariant 7: no deadline while delivering.
		switch {
		case !l.leased && (st != store.JobDelivering || l.timer != nil):
			t.Fatalf("seed %d step %d: job %d delivering with state %v timer %v", seed, step, off, st, l.timer != nil)
		case l.leased && (st != store.JobLeased || l.timer == nil):
			t.Fatalf("seed %d step %d: job %d leased with state %v timer %v", seed, step, off, st, l.timer != nil)
		}
	}
	// Invariant 5: every job is in exactly one place.
	dead := len(dlq(t, r))
	if got := r.q.Depth() + dead + int(e.C.Acknowledged.Load()); got != published {
		t.Fatalf("seed %d step %d: depth %d + dead %d + acked %d != published %d", seed, step, r.q.Depth(), dead, e.C.Acknowledged.Load(), published)
	}
	if uint64(dead) != e.C.DeadLettered.Load() {
		t.Fatalf("seed %d step %d: %d dead letters, %d counted", seed, step, dead, e.C.DeadLettered.Load())
	}
	// C15: delivered = ended + in flight.
	c := &e.C
	ended := c.Acknowledged.Load() + c.Returned.Load() + c.Redelivered.Load() + c.DeadLettered.Load()
	if c.Delivered.Load() != ended+uint64(c.Inflight.Load()) {
		t.Fatalf("seed %d step %d: delivered %d != ended %d + inflight %d", seed, step, c.Delivered.Load(), ended, c.Inflight.Load())
	}
}
