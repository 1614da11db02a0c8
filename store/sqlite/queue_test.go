package sqlite

import (
	"sync"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/store"
)

func TestConcurrentWorkersTakeEachJobExactlyOnce(t *testing.T) {
	p := mustOpen(t, testOptions(t))
	q, _ := p.Queue("jobs", store.QueueOptions{})
	const jobs = 200
	for i := 0; i < jobs; i++ {
		if _, err := q.Enqueue(record(i, 20)); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Unix(1_700_000_000, 0)
	var mu sync.Mutex
	taken := map[uint64]int{}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j, d, ok, err := q.Offer("worker", now)
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					return
				}
				mu.Lock()
				taken[j.Offset]++
				mu.Unlock()
				if _, err := q.Lease(d, now, now.Add(time.Minute)); err != nil {
					t.Error(err)
					return
				}
				if err := q.Resolve(d); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for off := uint64(1); off <= jobs; off++ {
		if taken[off] != 1 {
			t.Fatalf("job %d offered %d times", off, taken[off])
		}
	}
	if q.Depth() != 0 || q.Bytes() != 0 || q.Floor() != q.Next() {
		t.Fatalf("drained queue: depth %d bytes %d floor %d next %d", q.Depth(), q.Bytes(), q.Floor(), q.Next())
	}
}

func TestAJobBeingDeadLetteredIsNotOffered(t *testing.T) {
	p := mustOpen(t, testOptions(t))
	q, _ := p.Queue("jobs", store.QueueOptions{})
	q.Enqueue(record(1, 20))
	release := stall(t, p)
	moved := make(chan error)
	go func() {
		_, err := q.DeadLetter(store.Delivery{Offset: 1}, "jobs/__dlq/x", store.ReasonExpired, time.Unix(1_700_000_000, 0))
		moved <- err
	}()
	waitQueued(t, p, 0, 1)
	if _, _, ok, _ := q.Offer("w", time.Unix(1_700_000_000, 0)); ok {
		t.Fatal("a job was offered while its dead-letter move was queued")
	}
	release()
	if err := <-moved; err != nil {
		t.Fatal(err)
	}
	if q.Depth() != 0 || q.DeadLetters().Next() != 2 {
		t.Fatalf("depth %d, dead letters next %d", q.Depth(), q.DeadLetters().Next())
	}
}
