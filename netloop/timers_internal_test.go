package netloop

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker/clock"
)

// The heap gives back connections in deadline order whatever order they
// were scheduled, moved earlier and removed in, and a later schedule never
// moves an entry back.
func TestTimersHeapOrder(t *testing.T) {
	w := &timers{clk: clock.NewFake(time.Unix(0, 0))}
	conns := make([]*Conn, 500)
	want := map[*Conn]int64{}
	for i := range conns {
		c := &Conn{}
		conns[i] = c
		at := 1 + rand.Int64N(1000)
		w.schedule(c, at)
		w.schedule(c, at+5) // later: ignored
		if rand.IntN(3) == 0 {
			at = 1 + rand.Int64N(at)
			w.schedule(c, at) // earlier: moved
		}
		want[c] = at
	}
	for _, c := range conns[:100] {
		w.remove(c)
		delete(want, c)
	}
	last := int64(0)
	for len(w.heap) > 0 {
		c := w.heap[0]
		at := c.timerAt.Load()
		if at < last {
			t.Fatalf("deadline %d after %d", at, last)
		}
		if at != want[c] {
			t.Fatalf("deadline %d, scheduled %d", at, want[c])
		}
		last = at
		delete(want, c)
		w.removeAt(0)
		if c.timerAt.Load() != 0 {
			t.Fatal("a removed entry keeps its deadline")
		}
	}
	if len(want) != 0 {
		t.Fatalf("%d entries lost", len(want))
	}
}
