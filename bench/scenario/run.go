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
	// OthersCores is the CPU every other process took during the measured
	// window, in cores (CPU seconds a second): the whole machine's busy time
	// less the broker's and the generator's. -1 for a case with no window.
	OthersCores float64 `json:"others_cores"`
	// Attempts is how many times the run was made: more than one when
	// Profile.Calm sent a busy window round again (the calmest is kept).
	Attempts int `json:"attempts"`
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

// calmAttempts bounds how often a busy run is made again: on a machine
// that is never calm the harness still ends, with the calmest run it saw.
const calmAttempts = 3

func runOne(ctx context.Context, p Profile, c Case, b *peer.Broker, rep int, scratch string) Run {
	return calmest(ctx, p, func() Run {
		began, load := time.Now(), machine.Load1()
		r := runBroker(ctx, p, c, b, rep, scratch)
		r.Seconds, r.Load1 = time.Since(began).Seconds(), load
		return r
	})
}

// calmest makes a run with attempt, again while its window was busy (up to
// calmAttempts), and keeps the calmest run that did not fail.
func calmest(ctx context.Context, p Profile, attempt func() Run) Run {
	var best Run
	for n := 1; ; n++ {
		r := attempt()
		if n == 1 || r.Err == "" && (best.Err != "" || r.OthersCores < best.OthersCores) {
			best = r
		}
		best.Attempts = n
		if !busy(p, r) || n == calmAttempts || ctx.Err() != nil {
			return best
		}
	}
}

// busy: run r's window had other processes taking more of the machine than
// Profile.Calm allows, so its figures say as much about them as about the
// broker. A failed run or one with no window is never repeated for it.
func busy(p Profile, r Run) bool {
	return p.Calm > 0 && r.Err == "" && r.OthersCores > p.Calm
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
	values, others, err := measureOn(ctx, p, c, running)
	r.OthersCores = others
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

func measureOn(ctx context.Context, p Profile, c Case, broker *peer.Process) (Values, float64, error) {
	e := &Env{Broker: broker.Broker.Name, Addr: broker.Addr, Pid: broker.Pid, OpsAddr: broker.OpsAddr, Profile: p}
	if c.TLS {
		e.Addr, e.TLS = broker.TLSAddr, broker.ClientTLS
	}
	v, err := c.run(ctx, e)
	if err != nil {
		return nil, -1, err
	}
	u, err := proc.Read(broker.Pid)
	if err != nil {
		return nil, -1, err
	}
	v["peak_rss_mib"] = float64(u.PeakRSS) / mib
	v["broker_cpu_s"] = e.brokerCPU.Seconds()
	v["gen_cpu_s"] = e.genCPU.Seconds()
	if e.windowLength == 0 {
		v["broker_cpu_s"], v["gen_cpu_s"] = math.NaN(), math.NaN()
		return v, -1, nil
	}
	others := max(0, (e.machineBusy-e.brokerCPU-e.genCPU).Seconds()) / e.windowLength.Seconds()
	return v, others, nil
}
