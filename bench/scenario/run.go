package scenario

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	"github.com/saguin-edge/saguin/bench/machine"
	"github.com/saguin-edge/saguin/bench/peer"
	"github.com/saguin-edge/saguin/bench/proc"
)

// Run is one case on one broker, one repetition.
type Run struct {
	Case    string  `json:"case"`
	Broker  string  `json:"broker"`
	Rep     int     `json:"rep"`
	Values  Values  `json:"values,omitempty"`
	Err     string  `json:"error,omitempty"`
	Seconds float64 `json:"seconds"` // wall time, broker start to stop
	// Load1 is the machine's one-minute load average as the run began: above
	// the core count, other work was competing with broker and generator.
	Load1 float64 `json:"load1"`
}

// Progress is told about each run as it ends.
type Progress func(r Run)

// Execute runs every case on every broker, Repetitions times, brokers
// alternating inside each repetition (A B C, A B C, ...): a drift in the
// machine over the run - another process waking, the disk warming - lands on
// each broker alike rather than on whichever ran last. Each run is a fresh
// broker process with a directory of its own under scratch, removed after.
func Execute(ctx context.Context, p Profile, cases []Case, brokers []*peer.Broker, scratch string, progress Progress) []Run {
	var runs []Run
	for _, c := range cases {
		for rep := 1; rep <= p.Repetitions; rep++ {
			for _, b := range brokers {
				if ctx.Err() != nil {
					return runs
				}
				if !c.runsOn(b.Name) || c.TLS && !b.ServesTLS() {
					continue
				}
				r := runOne(ctx, p, c, b, rep, scratch)
				runs = append(runs, r)
				if progress != nil {
					progress(r)
				}
			}
		}
	}
	return runs
}

// runsOn: c runs on the broker called name.
func (c Case) runsOn(name string) bool {
	return len(c.Only) == 0 || slices.Contains(c.Only, name)
}

func runOne(ctx context.Context, p Profile, c Case, b *peer.Broker, rep int, scratch string) Run {
	began, load := time.Now(), machine.Load1()
	r := runBroker(ctx, p, c, b, rep, scratch)
	r.Seconds, r.Load1 = time.Since(began).Seconds(), load
	return r
}

func runBroker(ctx context.Context, p Profile, c Case, b *peer.Broker, rep int, scratch string) Run {
	r := Run{Case: c.Name, Broker: b.Name, Rep: rep}
	dir, err := os.MkdirTemp(scratch, b.Name+"-")
	if err != nil {
		r.Err = fmt.Sprintf("making the run's directory: %v", err)
		return r
	}
	defer os.RemoveAll(dir)
	running, err := b.Start(ctx, dir)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer running.Stop()
	values, err := measureOn(ctx, p, c, running)
	if err == nil && !running.Alive() {
		err = fmt.Errorf("%s exited during the run: %s", b.Name, running.LogTail(400))
	}
	if err != nil {
		r.Err = err.Error()
		return r
	}
	r.Values = values
	return r
}

func measureOn(ctx context.Context, p Profile, c Case, broker *peer.Process) (Values, error) {
	e := &Env{Broker: broker.Broker.Name, Addr: broker.Addr, Pid: broker.Pid, OpsAddr: broker.OpsAddr, Profile: p}
	if c.TLS {
		e.Addr, e.TLS = broker.TLSAddr, broker.ClientTLS
	}
	v, err := c.run(ctx, e)
	if err != nil {
		return nil, err
	}
	u, err := proc.Read(broker.Pid)
	if err != nil {
		return nil, err
	}
	v["peak_rss_mib"] = float64(u.PeakRSS) / mib
	v["broker_cpu_s"] = e.brokerCPU.Seconds()
	v["gen_cpu_s"] = e.genCPU.Seconds()
	if e.windowLength == 0 {
		v["broker_cpu_s"], v["gen_cpu_s"] = math.NaN(), math.NaN()
	}
	return v, nil
}
