package netloop

import (
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/saguin-edge/saguin/broker/clock"
)

// A TLS handshake leaves 50-130 KB of garbage (docs/transports.md "What each
// door costs") and an idle connection keeps about 8 KB of it live. After a
// fleet's reconnect storm the collector has grown the heap to about twice
// what is live (GOGC's default) and the runtime returns the difference to
// the system only slowly, so an idle TLS fleet's RSS is about half garbage.
// Once handshakes stop, the server collects and gives the free memory back
// (debug.FreeOSMemory) - once per burst, not per handshake: a burst is at
// least tidyBurst handshakes and an eighth of the connections open, so that
// the full collection, whose cost grows with the connections held, is paid
// at most once per that many handshakes, a few percent of their own CPU.
const (
	// tidyQuiet is how long no handshake must have started before a burst
	// is over.
	tidyQuiet = 250 * time.Millisecond
	// tidyBurst is the fewest handshakes worth a collection.
	tidyBurst = 64
)

// tidier counts handshakes and frees memory after a burst of them.
type tidier struct {
	clk   clock.Clock
	free  func()     // debug.FreeOSMemory; a test's counter
	held  func() int // the connections open
	log   *slog.Logger
	mu    sync.Mutex
	count int // handshakes since the last tidy
	last  time.Time
	timer clock.Timer // armed while a burst may be ending
	done  bool        // the server is stopping: nothing more is armed
}

func newTidier(clk clock.Clock, held func() int, log *slog.Logger) *tidier {
	return &tidier{clk: clk, free: debug.FreeOSMemory, held: held, log: log}
}

// handshake notes one, finished or failed: either left its garbage.
func (t *tidier) handshake() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.count++
	t.last = t.clk.Now()
	if t.timer == nil && !t.done && t.count >= tidyBurst && t.count >= t.held()/8 {
		t.timer = t.clk.AfterFunc(tidyQuiet, t.fire)
	}
}

// fire frees memory once tidyQuiet has passed since the last handshake, or
// waits for that moment if another came meanwhile.
func (t *tidier) fire() {
	t.mu.Lock()
	if t.done {
		t.mu.Unlock()
		return
	}
	if wait := tidyQuiet - t.clk.Now().Sub(t.last); wait > 0 {
		t.timer = t.clk.AfterFunc(wait, t.fire)
		t.mu.Unlock()
		return
	}
	n := t.count
	t.timer, t.count = nil, 0
	t.mu.Unlock()
	start := time.Now()
	t.free()
	t.log.Debug("a burst of TLS handshakes is over: its garbage collected and the memory given back to the system",
		"handshakes", n, "took", time.Since(start))
}

// stop disarms the timer: a stopping server frees nothing more.
func (t *tidier) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = true
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
}
