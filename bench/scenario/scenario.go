// Package scenario holds what the harness measures: each scenario drives one
// broker through the load generator, with a warm-up, then a fixed measured
// window, and reports its figures together with the broker's CPU seconds and
// peak resident memory. Execute runs a list of cases over several brokers,
// alternating brokers within each repetition (A B A B), a fresh broker
// process for every run.
package scenario

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"syscall"
	"time"

	"github.com/saguin-edge/saguin/bench/proc"
)

// Better says which way a figure improves, for ratios and the chart.
type Better int

const (
	HigherIsBetter Better = iota
	LowerIsBetter
)

// Metric is one figure a case reports.
type Metric struct {
	Key    string `json:"key"`
	Label  string `json:"label"`
	Unit   string `json:"unit"`
	Better Better `json:"better"` // 0 higher, 1 lower
}

// Values are one run's figures by Metric.Key.
type Values map[string]float64

// Case is one named measurement: a scenario at one size ("pub-q1/8").
type Case struct {
	Name     string   `json:"name"`
	Scenario string   `json:"scenario"`
	Measures string   `json:"measures"` // one sentence: what the headline figure is
	Metrics  []Metric `json:"metrics"`  // the first is the headline, the one the chart shows
	// Connections is the most the case holds open at once, which the
	// open-file limit must allow on each side.
	Connections int `json:"connections"`
	// Only names the brokers the case runs on, none meaning every one: a
	// figure only Sagüin's channels have (a dead-letter move) has no peer
	// to stand beside.
	Only []string `json:"only,omitempty"`
	// TLS runs the case on each peer's TLS door (Env.Addr is that door's,
	// Env.TLS what to dial it with); a peer with none is left out of it.
	TLS bool `json:"tls,omitempty"`
	run func(ctx context.Context, e *Env) (Values, error)
}

// The figures every run reports besides its own, measured by the runner.
var commonMetrics = []Metric{
	{Key: "broker_cpu_s", Label: "broker CPU", Unit: "s", Better: LowerIsBetter},
	{Key: "peak_rss_mib", Label: "broker peak RSS", Unit: "MiB", Better: LowerIsBetter},
	{Key: "gen_cpu_s", Label: "generator CPU", Unit: "s", Better: LowerIsBetter},
}

// AllMetrics is the case's own figures followed by the common ones.
func (c Case) AllMetrics() []Metric {
	return append(append([]Metric(nil), c.Metrics...), commonMetrics...)
}

// Env is what a case is given to run against one broker.
type Env struct {
	Broker  string // the broker's name (peer.Names): a case serving a channel asks it
	Addr    string // the broker's host:port
	Pid     int    // the broker's process, for /proc
	OpsAddr string // its operations listener (/metrics), "" for a peer with none
	// TLS is what a client dials Addr with on a TLS case; nil otherwise.
	TLS     *tls.Config
	Profile Profile

	windowStart  time.Time
	brokerCPU0   time.Duration
	genCPU0      time.Duration
	machineBusy0 time.Duration
	brokerCPU    time.Duration // over the measured window, once closed
	genCPU       time.Duration
	machineBusy  time.Duration // every process's, the broker's and the generator's included
	windowLength time.Duration
}

// beginWindow marks the start of the measured window: the broker's, the
// generator's and the whole machine's CPU time are read here and again at
// endWindow.
func (e *Env) beginWindow() error {
	u, err := proc.Read(e.Pid)
	if err != nil {
		return fmt.Errorf("reading the broker at the window's start: %w", err)
	}
	busy, err := proc.MachineBusy()
	if err != nil {
		return err
	}
	e.brokerCPU0, e.genCPU0, e.machineBusy0, e.windowStart = u.CPU, selfCPU(), busy, time.Now()
	return nil
}

// endWindow closes the window and returns its length.
func (e *Env) endWindow() (time.Duration, error) {
	u, err := proc.Read(e.Pid)
	if err != nil {
		return 0, fmt.Errorf("reading the broker at the window's end: %w", err)
	}
	busy, err := proc.MachineBusy()
	if err != nil {
		return 0, err
	}
	e.windowLength = time.Since(e.windowStart)
	e.brokerCPU, e.genCPU, e.machineBusy = u.CPU-e.brokerCPU0, selfCPU()-e.genCPU0, busy-e.machineBusy0
	return e.windowLength, nil
}

// measure runs the warm-up and then the measured window, while the load the
// caller started keeps running; begin and end are called at the window's
// edges to take the case's own readings.
func (e *Env) measure(ctx context.Context, begin func(), end func(elapsed time.Duration)) error {
	if err := pause(ctx, e.Profile.Warmup); err != nil {
		return err
	}
	if err := e.beginWindow(); err != nil {
		return err
	}
	begin()
	if err := pause(ctx, e.Profile.Window); err != nil {
		return err
	}
	elapsed, err := e.endWindow()
	if err != nil {
		return err
	}
	end(elapsed)
	return nil
}

// joinLoad ends a case's load once its window is over: it stops the load's
// goroutines and waits for them, then returns the window's own error, else
// the first error one of them reported (as who's).
func joinLoad(stop context.CancelFunc, wg *sync.WaitGroup, windowErr error, errs <-chan error, who string) error {
	stop()
	wg.Wait()
	if windowErr != nil {
		return windowErr
	}
	select {
	case err := <-errs:
		return fmt.Errorf("%s: %w", who, err)
	default:
		return nil
	}
}

// pause waits d: the length of a warm-up or a window is what is being timed,
// not a guess at when something else has finished.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// selfCPU is the generator's own CPU time, user and system.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// perSecond is n over elapsed.
func perSecond(n uint64, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return math.NaN()
	}
	return float64(n) / elapsed.Seconds()
}

// cpuPer is CPU time per event in microseconds: what one message cost the
// broker, a figure of its own beside the rate since on a shared machine the
// rate moves with the load and the cost per message much less.
func cpuPer(cpu time.Duration, n uint64) float64 {
	if n == 0 {
		return math.NaN()
	}
	return float64(cpu.Microseconds()) / float64(n)
}

// ms is a duration in milliseconds, NaN for the histogram's "nothing recorded".
func ms(d time.Duration) float64 {
	if d < 0 {
		return math.NaN()
	}
	return float64(d) / float64(time.Millisecond)
}

const mib = 1 << 20

// MarshalJSON writes a figure a run could not produce (NaN) as null, which
// encoding/json would otherwise refuse.
func (v Values) MarshalJSON() ([]byte, error) {
	out := make(map[string]*float64, len(v))
	for k, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			out[k] = nil
			continue
		}
		out[k] = &x
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads null back as NaN.
func (v *Values) UnmarshalJSON(b []byte) error {
	var in map[string]*float64
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*v = make(Values, len(in))
	for k, x := range in {
		if x == nil {
			(*v)[k] = math.NaN()
		} else {
			(*v)[k] = *x
		}
	}
	return nil
}
