package netloop

import (
	"context"
	"sync"

	"github.com/panjf2000/gnet/v2"
)

// loopWaker runs the wakes of one event loop's connections in batches. A
// publish fanned out to a thousand subscribers wakes a thousand connections;
// gnet's Conn.Wake queues a task (two allocations) per call. Here a wake
// joins the loop's pending list, and the loop runs the whole list:
//   - at the end of the callback it is in (busy), when the loop is already
//     running one of ours - the common case of a publisher and its
//     subscribers on one loop, which then costs no task at all;
//   - otherwise in one task queued for the first wake of a batch.
type loopWaker struct {
	el gnet.EventLoop

	mu        sync.Mutex
	pending   []*gnetConn
	busy      bool // the loop is inside enter..leave and runs pending before it returns
	scheduled bool // a task is queued that will run pending

	spare []*gnetConn // loop only: the list drained last, reused
}

// wakerOf is the waker of el, made at its first connection.
func (s *Server) wakerOf(el gnet.EventLoop) *loopWaker {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.wakers[el]
	if w == nil {
		w = &loopWaker{el: el}
		s.wakers[el] = w
	}
	return w
}

// wake asks the loop to serve g soon (read what waits, then OnWake); any goroutine, never blocks.
// The Conn's woken flag keeps a connection in the list at most once.
func (w *loopWaker) wake(g *gnetConn) {
	w.mu.Lock()
	w.pending = append(w.pending, g)
	queue := !w.busy && !w.scheduled
	if queue {
		w.scheduled = true
	}
	w.mu.Unlock()
	if queue {
		w.schedule()
	}
}

// schedule queues the task that runs the pending list; the caller has set
// scheduled.
func (w *loopWaker) schedule() {
	if err := w.el.Execute(context.Background(), w); err != nil {
		// The loops are stopping: nothing will run the list.
		w.mu.Lock()
		w.scheduled = false
		w.mu.Unlock()
	}
}

// Run is the queued task (gnet.Runnable), on the loop.
func (w *loopWaker) Run(context.Context) error {
	w.mu.Lock()
	w.scheduled = false
	w.busy = true
	w.mu.Unlock()
	w.leave()
	return nil
}

// enter marks the loop as inside one of our callbacks: wakes that arrive
// until leave are run by leave. Loop only.
func (w *loopWaker) enter() {
	w.mu.Lock()
	w.busy = true
	w.mu.Unlock()
}

// leaveRounds bounds how many batches leave runs before it lets the loop go
// back to its sockets: wakes that keep arriving from other loops go on in a
// queued task rather than starve this loop's reads.
const leaveRounds = 4

// leave serves every pending wake, including those the wakes themselves cause,
// and marks the loop as no longer busy once none is left. Loop only.
func (w *loopWaker) leave() {
	for round := 0; ; round++ {
		w.mu.Lock()
		if len(w.pending) == 0 || round == leaveRounds {
			w.busy = false
			queue := len(w.pending) > 0 && !w.scheduled
			if queue {
				w.scheduled = true
			}
			w.mu.Unlock()
			if queue {
				w.schedule()
			}
			return
		}
		batch := w.pending
		w.pending = w.spare[:0]
		w.mu.Unlock()
		for _, g := range batch {
			g.serve()
		}
		clear(batch)
		w.spare = batch[:0]
	}
}
