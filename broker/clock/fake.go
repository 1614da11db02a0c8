package clock

import (
	"sync"
	"time"
)

// Fake is a Clock that moves only when told to (Advance). Tests use it to
// reach a deadline exactly, and one millisecond before it, without waiting.
//
// Unlike the package time, it fires synchronously, so that when Advance
// returns everything due has happened: an AfterFunc's f has returned, and
// each tick due has been received by its reader (or the ticker stopped) -
// every tick, none dropped, in order of their moments. Now, during a call of
// f or while a tick is taken, is that timer's moment.
type Fake struct {
	mu    sync.Mutex
	armed sync.Cond // signalled whenever a timer or ticker is armed
	now   time.Time
	// timers are the armed timers and tickers, in the order armed.
	timers []*fakeTimer
}

// NewFake returns a Fake reading start.
func NewFake(start time.Time) *Fake {
	f := &Fake{now: start}
	f.armed.L = &f.mu
	return f
}

type fakeTimer struct {
	f      *Fake
	at     time.Time
	period time.Duration // a ticker's; 0 for an AfterFunc
	fn     func()
	c      chan time.Time // a ticker's, unbuffered: a tick is handed over, never queued
	done   chan struct{}  // a ticker's, closed by Stop: a tick waiting to be taken is given up
}

func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// AfterFunc arms f to run d from now (d <= 0: at the next Advance, even by 0).
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	t := &fakeTimer{f: f, fn: fn}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.arm(t, d)
	return t
}

// NewTicker panics on d <= 0, as time.NewTicker does.
func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	t := &fakeTimer{f: f, period: d, c: make(chan time.Time), done: make(chan struct{})}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.arm(t, d)
	return fakeTicker{t}
}

// fakeTicker is a ticker's fakeTimer with Ticker's Stop, which reports nothing.
type fakeTicker struct{ t *fakeTimer }

func (k fakeTicker) C() <-chan time.Time { return k.t.c }
func (k fakeTicker) Stop()               { k.t.Stop() }

// arm puts t in the armed list at now+d; f.mu held.
func (f *Fake) arm(t *fakeTimer, d time.Duration) {
	t.at = f.now.Add(d)
	f.timers = append(f.timers, t)
	f.armed.Broadcast()
}

// disarm takes t out of the armed list, reporting whether it was there;
// f.mu held.
func (f *Fake) disarm(t *fakeTimer) bool {
	for i, o := range f.timers {
		if o == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			return true
		}
	}
	return false
}

// Armed is how many timers and tickers are armed now.
func (f *Fake) Armed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// WaitArmed blocks until at least n timers and tickers are armed: what a test
// waits for before Advance, so the code under test has armed what it will.
func (f *Fake) WaitArmed(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.timers) < n {
		f.armed.Wait()
	}
}

// Advance moves the clock d forward, firing in order every timer and tick
// due by then, each at its own moment; timers those arm are fired too if
// due within d.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	end := f.now.Add(d)
	for {
		t := f.next(end)
		if t == nil {
			break
		}
		f.now = t.at
		if t.period > 0 {
			t.at = t.at.Add(t.period)
		} else {
			f.disarm(t)
		}
		at := f.now
		f.mu.Unlock()
		if t.period > 0 {
			select {
			case t.c <- at:
			case <-t.done:
			}
		} else {
			t.fn()
		}
		f.mu.Lock()
	}
	f.now = end
	f.mu.Unlock()
}

// next is the armed timer due first by end (the earliest armed of equals),
// nil if none; f.mu held.
func (f *Fake) next(end time.Time) *fakeTimer {
	var first *fakeTimer
	for _, t := range f.timers {
		if !t.at.After(end) && (first == nil || t.at.Before(first.at)) {
			first = t
		}
	}
	return first
}

// Stop disarms t. On a ticker it also gives up a tick waiting to be taken.
func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := t.f.disarm(t)
	if t.done != nil && was {
		close(t.done)
	}
	return was
}

// Reset re-arms t to fire d from now, reporting whether it was armed.
func (t *fakeTimer) Reset(d time.Duration) bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := t.f.disarm(t)
	t.f.arm(t, d)
	return was
}

var (
	_ Timer  = (*fakeTimer)(nil)
	_ Ticker = fakeTicker{}
	_ Clock  = (*Fake)(nil)
)
