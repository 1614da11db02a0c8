package scenario

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saguin-edge/saguin/bench/loadgen"
)

// credit keeps QoS 0 publishers at most window messages ahead of what the
// subscriber has received. Without it a fan-in benchmark measures how fast a
// broker can discard: QoS 0 allows a broker to drop, and a generator that
// outruns it only fills buffers. With it, the figure is the rate the broker
// sustains delivering. A broker that does drop would hold the publishers
// forever, so after stall with nothing received the outstanding messages are
// written off and publishing resumes; the loss is reported.
type credit struct {
	window  int64
	stall   time.Duration
	sent    atomic.Int64
	got     atomic.Int64
	written atomic.Int64 // outstanding messages given up as lost by a stall
	waiting atomic.Bool

	mu   sync.Mutex
	wake chan struct{} // closed and replaced whenever a delivery arrives with someone waiting
}

func newCredit(window int64, stall time.Duration) *credit {
	return &credit{window: window, stall: stall, wake: make(chan struct{})}
}

// take waits until n more may be sent, and counts them as sent.
func (c *credit) take(ctx context.Context, n int64) error {
	var timer *time.Timer
	for {
		if c.sent.Load()-c.got.Load()-c.written.Load()+n <= c.window {
			c.sent.Add(n)
			if timer != nil {
				timer.Stop()
			}
			return nil
		}
		c.mu.Lock()
		wake := c.wake
		c.waiting.Store(true)
		c.mu.Unlock()
		if c.sent.Load()-c.got.Load()-c.written.Load()+n <= c.window {
			continue
		}
		if timer == nil {
			timer = time.NewTimer(c.stall)
		} else {
			timer.Reset(c.stall) // Go 1.23 timers: no stale tick survives a Reset
		}
		before := c.got.Load()
		select {
		case <-wake:
		case <-timer.C:
			if c.got.Load() == before {
				c.written.Add(c.sent.Load() - c.got.Load() - c.written.Load())
			}
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		}
	}
}

// delivered counts one arrival and, once what is outstanding has fallen to
// three quarters of the window, wakes the publishers waiting for room. Waking
// them on every arrival would have them wake, find room for less than a
// batch, and wait again, a message at a time; the low-water mark lets them
// refill in batches. A waiting flag left set by a publisher that timed out
// costs one spurious wake, never a missed one.
func (c *credit) delivered() {
	got := c.got.Add(1)
	if c.waiting.Load() && c.sent.Load()-got-c.written.Load() <= c.window*3/4 {
		c.mu.Lock()
		if c.waiting.Swap(false) {
			close(c.wake)
			c.wake = make(chan struct{})
		}
		c.mu.Unlock()
	}
}

// dialMany opens n connections, concurrency at a time, named prefix-<i>.
// setup runs on each right after its CONNACK (a SUBSCRIBE, say). On any
// failure it closes what it opened.
func dialMany(ctx context.Context, n, concurrency int, prefix string, opt loadgen.Options, setup func(i int, c *loadgen.Conn) error) ([]*loadgen.Conn, error) {
	conns := make([]*loadgen.Conn, n)
	var next atomic.Int64
	var firstErr error
	var errOnce sync.Once
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range min(concurrency, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				o := opt
				o.ClientID = fmt.Sprintf("%s-%d", prefix, i)
				o.Source = sourceFor(opt.Addr, i)
				c, err := loadgen.Dial(ctx, o)
				if err == nil && setup != nil {
					if err = setup(i, c); err != nil {
						c.Close()
					}
				}
				if err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("connection %d of %d: %w", i+1, n, err); cancel() })
					return
				}
				conns[i] = c
			}
		})
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		// Ended before every connection was dialled: the slice has holes,
		// which a caller would take for connections.
		firstErr = fmt.Errorf("dialling %d connections: %w", n, ctx.Err())
	}
	if firstErr != nil {
		closeAll(conns)
		return nil, firstErr
	}
	return conns, nil
}

// perSource is how many connections dialMany opens from one loopback source
// address: under the 28,231 ephemeral ports of Linux's default
// ip_local_port_range (32768-60999), with room for what the other cases and
// processes hold.
const perSource = 20000

// sourceFor is the source address connection i dials a loopback broker from:
// the system's choice for the first perSource, then 127.0.0.2, 127.0.0.3 and
// so on for each next perSource (every 127/8 address is the loopback device's,
// nothing to configure), so 100,000 connections to one broker address do not
// run out of ports. A broker off loopback is dialed as the system chooses.
func sourceFor(addr string, i int) net.IP {
	if i < perSource {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() || ip.To4() == nil {
		return nil
	}
	return net.IPv4(127, 0, 0, byte(1+i/perSource))
}

// closeAll closes every connection, in parallel: ten thousand sequential
// closes would be counted against the next run's start.
func closeAll(conns []*loadgen.Conn) {
	var wg sync.WaitGroup
	const workers = 16
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(conns); i += workers {
				if conns[i] != nil {
					conns[i].Close()
				}
			}
		})
	}
	wg.Wait()
}

// firstError is the first connection that ended early, if any.
func firstError(conns []*loadgen.Conn) error {
	for _, c := range conns {
		if c != nil {
			if err := c.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}

// drain waits, once publishing has stopped, until count reaches target or
// stops moving for a second (what is still missing is not coming), bounded
// by limit. It polls: the count is a sum over many connections.
func drain(ctx context.Context, count func() uint64, target uint64, limit time.Duration) uint64 {
	deadline := time.Now().Add(limit)
	last, lastMove := count(), time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		n := count()
		if n >= target || time.Now().After(deadline) || time.Since(lastMove) > time.Second {
			return n
		}
		if n != last {
			last, lastMove = n, time.Now()
		}
		select {
		case <-ctx.Done():
			return count()
		case <-tick.C:
		}
	}
}

// errStopped is a publisher's ordinary end: the run's context was cancelled.
func isStopped(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// pace publishes at rate a second until ctx ends: every tick it sends what
// is due since the start, so a late tick catches up rather than lowering the
// rate. send is handed how many are due.
func pace(ctx context.Context, rate int, send func(n int) error) error {
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	var sent int64
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		due := int64(time.Since(start).Seconds()*float64(rate)) - sent
		if due <= 0 {
			continue
		}
		if err := send(int(due)); err != nil {
			if isStopped(err) {
				return nil
			}
			return err
		}
		sent += due
	}
}
