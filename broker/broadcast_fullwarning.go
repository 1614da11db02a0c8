package broker

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/saguin-edge/saguin/broker/clock"
)

// fullWarnEvery is how often at most a full provider's losses are logged
// (RFC 0002 "Every session's state").
const fullWarnEvery = 10 * time.Second

// fullLoss is what one give-way, or one message no room was found for, cost.
type fullLoss struct {
	what       string   // what the room was for
	gone       uint64   // messages the log gave up for room
	notKept    uint64   // messages not kept: nothing in the log could go
	deliveries uint64   // deliveries away sessions lost (storage_full)
	shared     uint64   // deliveries shared groups lost (shares storage_full)
	sessions   []string // the client ids of the sessions that lost some
}

// fullWarning gathers a full provider's losses until their warning is due:
// RFC 0002 logs them at most every ten seconds with the totals since the
// last - messages, sessions, deliveries - and the remedy. Losses inside the
// quiet time wait for a timer on the broker's clock, so the last of them are
// told too, not only the first after each quiet time.
type fullWarning struct {
	b *Broker

	mu       sync.Mutex // a leaf: taken under roomMu and shard locks, nothing taken under it
	warnedAt time.Time
	timer    clock.Timer // armed while totals wait for their warning
	stopped  bool
	pending  fullLoss
	sessions map[string]struct{} // distinct sessions in pending
	what     []string            // what the room was for, each once
}

// add counts l and logs the totals when the warning is due.
func (w *fullWarning) add(l fullLoss) {
	now := w.b.now()
	w.mu.Lock()
	p := &w.pending
	p.gone += l.gone
	p.notKept += l.notKept
	p.deliveries += l.deliveries
	p.shared += l.shared
	if w.sessions == nil {
		w.sessions = make(map[string]struct{})
	}
	for _, id := range l.sessions {
		w.sessions[id] = struct{}{}
	}
	if !slices.Contains(w.what, l.what) {
		w.what = append(w.what, l.what)
	}
	if wait := w.warnedAt.Add(fullWarnEvery).Sub(now); wait > 0 {
		if w.timer == nil && !w.stopped {
			w.timer = w.b.opts.Clock.AfterFunc(wait, w.flush)
		}
		w.mu.Unlock()
		return
	}
	args := w.takeLocked(now)
	w.mu.Unlock()
	w.log(args)
}

// flush logs what waited out the quiet time.
func (w *fullWarning) flush() {
	w.mu.Lock()
	w.timer = nil
	if w.stopped || len(w.what) == 0 {
		w.mu.Unlock()
		return
	}
	args := w.takeLocked(w.b.now())
	w.mu.Unlock()
	w.log(args)
}

// stop disarms the timer; losses after it are counted, no longer logged late.
func (w *fullWarning) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
}

// takeLocked returns the pending totals as log arguments and starts a new
// quiet time at now.
func (w *fullWarning) takeLocked(now time.Time) []any {
	p := w.pending
	args := []any{"for", strings.Join(w.what, ", "), "messages", p.gone + p.notKept, "messages_given_way", p.gone,
		"messages_not_kept", p.notKept, "sessions", len(w.sessions), "deliveries", p.deliveries,
		"shared_deliveries", p.shared}
	w.pending = fullLoss{}
	clear(w.sessions)
	w.what = w.what[:0]
	w.warnedAt = now
	return args
}

func (w *fullWarning) log(args []any) {
	w.b.log.Warn("the broadcast log's provider is full: messages owed to sessions that are away went",
		append(args, "remedy", "a provider of its own for broker.session.storage, or a larger max_bytes")...)
}
