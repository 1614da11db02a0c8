// Package clock is where the broker and netloop read the time and arm their
// timers, so that one injected Clock decides every expiry, delay, timeout and
// rate: Real in the binary, Fake in tests, which then advance time instead of
// waiting for it.
package clock

import "time"

// Clock is the time source: the moment, one-shot timers and periodic tickers.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
	NewTicker(d time.Duration) Ticker
}

// Timer is a pending AfterFunc; Stop and Reset report whether it was still
// armed, as time.Timer's do.
type Timer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

// Ticker sends the time on C every period until stopped.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// Real is the wall clock, the package time.
var Real Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// AfterFunc returns the *time.Timer itself: it already is a Timer.
func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

func (realClock) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

// realTicker gives *time.Ticker's field C as the method Ticker asks for.
type realTicker struct{ *time.Ticker }

func (t realTicker) C() <-chan time.Time { return t.Ticker.C }

// Or returns c, or Real when c is nil: what an Options field left unset means.
func Or(c Clock) Clock {
	if c == nil {
		return Real
	}
	return c
}
