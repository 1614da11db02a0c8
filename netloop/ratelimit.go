package netloop

import (
	"sync"
	"time"

	"github.com/saguin-edge/saguin/broker/clock"
)

// acceptPacer is max_connect_rate for one door: a token bucket holding up to
// twice the rate. The accept loop takes a token before it accepts, so a
// connection over the rate waits in the operating system's accept queue
// rather than being refused (RFC 0002 "How fast connections are accepted").
type acceptPacer struct {
	mu     sync.Mutex
	rate   float64 // tokens a second
	burst  float64
	tokens float64
	last   time.Time
	clock  clock.Clock
}

// newAcceptPacer returns nil for no limit (rate 0).
func newAcceptPacer(rate int, clk clock.Clock) *acceptPacer {
	if rate <= 0 {
		return nil
	}
	return &acceptPacer{rate: float64(rate), burst: 2 * float64(rate), tokens: 2 * float64(rate), last: clk.Now(), clock: clk}
}

// take waits until a token is available or stop closes; it reports whether a
// token was taken.
func (p *acceptPacer) take(stop <-chan struct{}) bool {
	if p == nil {
		return true
	}
	for {
		p.mu.Lock()
		now := p.clock.Now()
		p.tokens = min(p.burst, p.tokens+now.Sub(p.last).Seconds()*p.rate)
		p.last = now
		if p.tokens >= 1 {
			p.tokens--
			p.mu.Unlock()
			return true
		}
		wait := time.Duration((1 - p.tokens) / p.rate * float64(time.Second))
		p.mu.Unlock()
		refilled := make(chan struct{})
		t := p.clock.AfterFunc(wait, func() { close(refilled) })
		select {
		case <-refilled:
		case <-stop:
			t.Stop()
			return false
		}
	}
}
