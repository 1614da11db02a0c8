package netloop

import (
	"sync"
	"time"

	"github.com/saguin-edge/saguin/broker/clock"
)

// pollInterval is how often a connection with outbound bytes waiting is
// looked at again: to refill what the transport cap held back (nothing tells
// the loop when gnet's buffer drains) and to check write_timeout. Only such
// connections are polled; an idle one is visited at its own deadlines alone.
const pollInterval = 25 * time.Millisecond

// timers holds every connection's next deadline - connect_timeout,
// keepalive, write_timeout, the end of a drain, a poll - in one min-heap
// with a single clock timer armed for the earliest. Nothing runs between
// deadlines, so an idle connection costs no CPU between its packets, and
// arming one costs O(log n), not a scan of all of them.
//
// Deadlines are lazy: a connection's entry is only ever moved earlier, and
// when it comes due Conn.tick re-reads the connection (its last read, its
// state) and arms the next one. So a read never touches the heap - a client
// sending PINGREQ every keepalive is visited about once per keepalive - and
// the hot path pays nothing for timers.
type timers struct {
	clk     clock.Clock
	mu      sync.Mutex
	heap    []*Conn     // ordered by Conn.timerAt; Conn.timerIdx is the position
	timer   clock.Timer // nil until first armed
	armedAt int64       // unix ns the timer is armed for; 0 not armed
	started bool        // the timer is armed only once the server runs
	stopped bool
}

// schedule makes sure c's timers are looked at by at (unix ns). It is safe
// from any goroutine; an entry already due by then is left alone.
func (w *timers) schedule(c *Conn, at int64) {
	if cur := c.timerAt.Load(); cur != 0 && cur <= at {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	switch cur := c.timerAt.Load(); {
	case cur == 0:
		c.timerAt.Store(at)
		c.timerIdx = int32(len(w.heap))
		w.heap = append(w.heap, c)
		w.up(int(c.timerIdx))
	case at < cur:
		c.timerAt.Store(at)
		w.up(int(c.timerIdx))
	default:
		return
	}
	w.armLocked()
}

// remove forgets c's entry: a connection that has ended is not kept alive,
// nor visited, until its last deadline.
func (w *timers) remove(c *Conn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c.timerAt.Load() != 0 {
		w.removeAt(int(c.timerIdx))
	}
}

// start arms the timer for what was scheduled before the server ran.
func (w *timers) start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.started = true
	w.armLocked()
}

// stop disarms the timer for good: every connection has ended.
func (w *timers) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
	}
	for len(w.heap) > 0 {
		w.removeAt(len(w.heap) - 1)
	}
}

// fire runs every connection due, then arms the timer for the next.
func (w *timers) fire() {
	now := w.clk.Now().UnixNano()
	var due []*Conn
	w.mu.Lock()
	w.armedAt = 0
	for len(w.heap) > 0 && w.heap[0].timerAt.Load() <= now {
		due = append(due, w.heap[0])
		w.removeAt(0)
	}
	w.mu.Unlock()
	for _, c := range due {
		c.tick(now)
	}
	w.mu.Lock()
	w.armLocked()
	w.mu.Unlock()
}

// armLocked arms the timer for the earliest entry unless it already fires
// by then; w.mu held.
func (w *timers) armLocked() {
	if !w.started || w.stopped || len(w.heap) == 0 {
		return
	}
	at := w.heap[0].timerAt.Load()
	if w.armedAt != 0 && w.armedAt <= at {
		return
	}
	w.armedAt = at
	d := max(0, time.Duration(at-w.clk.Now().UnixNano())) // a Fake set back in time would move its clock back
	if w.timer == nil {
		w.timer = w.clk.AfterFunc(d, w.fire)
	} else {
		w.timer.Reset(d)
	}
}

func (w *timers) removeAt(i int) {
	c := w.heap[i]
	last := len(w.heap) - 1
	if i != last {
		w.swap(i, last)
	}
	w.heap[last] = nil
	w.heap = w.heap[:last]
	if i != last {
		w.down(i)
		w.up(i)
	}
	c.timerAt.Store(0)
	c.timerIdx = -1
}

func (w *timers) less(i, j int) bool { return w.heap[i].timerAt.Load() < w.heap[j].timerAt.Load() }

func (w *timers) swap(i, j int) {
	w.heap[i], w.heap[j] = w.heap[j], w.heap[i]
	w.heap[i].timerIdx, w.heap[j].timerIdx = int32(i), int32(j)
}

func (w *timers) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !w.less(i, p) {
			return
		}
		w.swap(i, p)
		i = p
	}
}

func (w *timers) down(i int) {
	n := len(w.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && w.less(r, l) {
			m = r
		}
		if !w.less(m, i) {
			return
		}
		w.swap(i, m)
		i = m
	}
}
