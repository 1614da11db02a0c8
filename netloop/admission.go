package netloop

import (
	"sync"
	"time"

	"github.com/saguin-edge/saguin/broker/clock"
)

// Admission timings fixed by RFC 0002 "How long a socket may wait to send
// CONNECT": how long a socket in the overflow budget waits for a slot, and by
// when every socket not admitted is closed.
const (
	overflowWait  = 50 * time.Millisecond
	overflowClose = 100 * time.Millisecond
	// busyReadGrace is the least time the Server busy answer gives a
	// socket's waiting bytes to be read (see overflow).
	busyReadGrace = 10 * time.Millisecond
	// overflowBudgetCap: the budget is min(max_connections, 32) places.
	overflowBudgetCap = 32
)

// admission counts max_connections slots from accept, across every door, and
// keeps the overflow budget: sockets that arrived with every slot taken wait
// in arrival order for one given back.
type admission struct {
	mu       sync.Mutex
	max      int
	used     int
	budget   int
	inBudget int       // sockets holding an overflow place (waiting or being answered)
	waiters  []*waiter // FIFO, longest waiting first
	stopping bool
	clock    clock.Clock // times a waiter's wait
}

// waiter is one socket in the overflow budget waiting for a slot.
type waiter struct {
	granted chan struct{} // closed when a slot is handed to this socket
	done    bool          // granted or given up; guarded by admission.mu
}

// arrival is what admission decides for a socket the moment it is accepted.
type arrival int

const (
	admitted arrival = iota // holds a slot
	queued                  // holds an overflow place; wait on the waiter
	refused                 // budget full or stopping: close at once, nothing read or written
)

func newAdmission(maxConns int, clk clock.Clock) *admission {
	return &admission{max: maxConns, budget: min(maxConns, overflowBudgetCap), clock: clk}
}

// arrive decides for a socket just accepted. A slot goes to the arrival only
// when nobody waits, so one arriving meanwhile queues behind the longest
// waiting rather than taking a given-back slot first.
func (a *admission) arrive() (arrival, *waiter) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.stopping:
		return refused, nil
	case a.used < a.max && len(a.waiters) == 0:
		a.used++
		return admitted, nil
	case a.inBudget < a.budget:
		a.inBudget++
		w := &waiter{granted: make(chan struct{})}
		a.waiters = append(a.waiters, w)
		return queued, w
	}
	return refused, nil
}

// wait blocks the socket's own goroutine until a slot is handed to it, d
// passes, or the broker stops. It reports whether the socket now holds a
// slot; if not it keeps its overflow place until leave is called.
func (a *admission) wait(w *waiter, d time.Duration, stop <-chan struct{}) bool {
	out := make(chan struct{})
	t := a.clock.AfterFunc(d, func() { close(out) })
	defer t.Stop()
	select {
	case <-w.granted:
	case <-out:
	case <-stop:
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-w.granted:
		// Granted, possibly racing the timer: the slot is ours.
		return true
	default:
	}
	w.done = true
	for i, x := range a.waiters {
		if x == w {
			a.waiters = append(a.waiters[:i], a.waiters[i+1:]...)
			break
		}
	}
	return false
}

// leave gives back an overflow place held by a socket that was not admitted.
func (a *admission) leave() {
	a.mu.Lock()
	a.inBudget--
	a.mu.Unlock()
}

// release gives back a slot, the moment a connection's end is decided. The
// longest-waiting socket in the budget takes it over.
func (a *admission) release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for len(a.waiters) > 0 {
		w := a.waiters[0]
		a.waiters = a.waiters[1:]
		if w.done {
			continue
		}
		w.done = true
		a.inBudget-- // the place becomes a slot
		close(w.granted)
		return
	}
	a.used--
}

// stop admits nothing more and ends every wait at once.
func (a *admission) stop() {
	a.mu.Lock()
	a.stopping = true
	a.mu.Unlock()
}

// inUse reports the slots held, for tests and metrics.
func (a *admission) inUse() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.used
}
