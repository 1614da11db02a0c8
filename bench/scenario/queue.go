package scenario

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saguin-edge/saguin/bench/loadgen"
	"github.com/saguin-edge/saguin/bench/peer"
	"github.com/saguin-edge/saguin/bench/stats"
	"github.com/saguin-edge/saguin/codec"
)

// The queue scenarios (issue 13) publish into the queues peer.saguinConfig
// declares: benchjobs over bench/queue/#, benchdlq over bench/dlq/# (one
// attempt), benchfull over bench/full/# (a small max_bytes).

// jobBacklog is how many jobs the producer may be ahead of the workers: the
// figure is the workers' rate, with a bounded backlog, not how fast a queue
// fills.
const jobBacklog = 64

var saguinBrokers = []string{peer.Saguin, peer.SaguinSQLite}

func isSaguin(name string) bool { return name == peer.Saguin || name == peer.SaguinSQLite }

// queueJobs is work handed to workers: on Sagüin each worker (Receive
// Maximum 1) takes a job from $saguin/queue/benchjobs, PUBACKs it and
// answers ack on its Response Topic - two round trips a job, and the next
// job offered at its answer. On the other peers the same workers take the
// same messages from a shared subscription at QoS 1 and only PUBACK them,
// what people use as a work queue today (no answer, no retry).
func queueJobs(workers int) Case {
	return Case{
		Name:     fmt.Sprintf("queue-jobs/%d", workers),
		Scenario: "queue-jobs",
		Measures: fmt.Sprintf("%d worker(s) with Receive Maximum 1 taking %d-byte jobs a producer publishes at QoS 1 (at most %d ahead): on Sagüin from a queue, each PUBACKed and answered ack on its Response Topic; elsewhere from a shared subscription, PUBACKed; jobs finished a second", workers, pubQ1Payload, jobBacklog),
		Metrics: []Metric{
			{Key: "jobs_per_s", Label: "jobs", Unit: "/s", Better: HigherIsBetter},
			{Key: "cycle_us", Label: "one worker's cycle a job", Unit: "µs", Better: LowerIsBetter},
			{Key: "cpu_us_per_job", Label: "broker CPU per job", Unit: "µs", Better: LowerIsBetter},
		},
		Connections: workers + 1,
		run: func(ctx context.Context, e *Env) (Values, error) {
			filter, topic := "$share/bench/bench/queue/#", "bench/queue/job"
			if isSaguin(e.Broker) {
				filter = "$saguin/queue/benchjobs"
			}
			return runJobs(ctx, e, workers, filter, topic, "ack", "")
		},
	}
}

// dlqMove is the dead-letter move rate: every job of benchdlq (one attempt)
// is returned by its worker, so each is moved to benchdlq__dlq in one store
// operation, and a reader of the dead-letter channel counts them. Sagüin
// alone: the peers have no dead letters.
func dlqMove() Case {
	return Case{
		Name:     "dlq-move/8",
		Scenario: "dlq-move",
		Measures: fmt.Sprintf("8 workers returning every %d-byte job of a queue with one attempt, so each is moved to its dead-letter channel; dead letters a reader of that channel receives a second", pubQ1Payload),
		Metrics: []Metric{
			{Key: "moves_per_s", Label: "dead-letter moves", Unit: "/s", Better: HigherIsBetter},
			{Key: "cpu_us_per_move", Label: "broker CPU per job and move", Unit: "µs", Better: LowerIsBetter},
		},
		Connections: 10,
		Only:        saguinBrokers,
		run: func(ctx context.Context, e *Env) (Values, error) {
			return runJobs(ctx, e, 8, "$saguin/queue/benchdlq", "bench/dlq/job", "return", "bench/dlq/__dlq/#")
		},
	}
}

// runJobs is the load of queue-jobs and dlq-move: workers on filter, each
// answering answer on a job's Response Topic where the offer names one, a
// producer publishing to topic at most jobBacklog ahead of what is finished.
// A job is finished when a worker has it, or, with reader set, when a
// reader subscribed there receives its dead letter.
func runJobs(ctx context.Context, e *Env, n int, filter, topic, answer, reader string) (Values, error) {
	credit := make(chan struct{}, jobBacklog)
	for range jobBacklog {
		credit <- struct{}{}
	}
	var finished, published atomic.Uint64
	first := make(chan struct{})
	var once sync.Once
	finish := func() {
		once.Do(func() { close(first) })
		finished.Add(1)
		select {
		case credit <- struct{}{}:
		default: // a job offered again after a restart of its attempt: no new credit
		}
	}
	reply := []byte(answer)
	opt := loadgen.Options{Addr: e.Addr, ReadBuffer: 8 << 10, ReceiveMaximum: 1,
		Reply: func(p *codec.Publish, out []byte) []byte {
			if len(p.Properties.ResponseTopic) == 0 {
				return out
			}
			a := codec.Publish{Topic: p.Properties.ResponseTopic, Payload: reply}
			a.Properties.CorrelationData = p.Properties.CorrelationData
			a.Properties.Present.Set(codec.PropCorrelationData)
			return a.Append(out, codec.Version5)
		}}
	if reader == "" {
		opt.OnPublish = func(*codec.Publish) { finish() }
	}
	workers, err := dialMany(ctx, n, e.Profile.ConnectConcurrency, "worker", opt, func(_ int, c *loadgen.Conn) error {
		return c.Subscribe(filter, 1)
	})
	if err != nil {
		return nil, err
	}
	defer closeAll(workers)
	conns := workers
	if reader != "" {
		readers, err := dialMany(ctx, 1, 1, "dlq-reader", loadgen.Options{Addr: e.Addr, OnPublish: func(*codec.Publish) { finish() }},
			func(_ int, c *loadgen.Conn) error { return c.Subscribe(reader, 1) })
		if err != nil {
			return nil, err
		}
		defer closeAll(readers)
		conns = append(conns[:len(conns):len(conns)], readers...)
	}
	for _, c := range conns {
		c.Start(0)
	}
	pubs, err := dialMany(ctx, 1, 1, "producer", loadgen.Options{Addr: e.Addr, ReadBuffer: 8 << 10}, nil)
	if err != nil {
		return nil, err
	}
	defer closeAll(pubs)
	pub := pubs[0]
	pub.Start(16)
	load, stop := context.WithCancel(ctx)
	defer stop()
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		payload := make([]byte, pubQ1Payload)
		for {
			select {
			case <-credit:
			case <-load.Done():
				return
			}
			if err := pub.PublishQoS1(load, []byte(topic), payload); err != nil {
				if !isStopped(err) {
					errs <- err
				}
				return
			}
			published.Add(1)
		}
	})
	// New work is first offered at the queue's 200 ms tick, then at each
	// answer: the warm-up begins once a job is through.
	select {
	case <-first:
	case <-time.After(10 * time.Second):
	case <-ctx.Done():
	}
	var f0, jobs uint64
	v := Values{}
	err = e.measure(ctx, func() { f0 = finished.Load() }, func(elapsed time.Duration) {
		jobs = finished.Load() - f0
		if reader == "" {
			v["jobs_per_s"] = perSecond(jobs, elapsed)
			v["cpu_us_per_job"] = cpuPer(e.brokerCPU, jobs)
			v["cycle_us"] = math.NaN()
			if jobs > 0 {
				// Each worker finishes its jobs one after another.
				v["cycle_us"] = float64(elapsed.Microseconds()) * float64(n) / float64(jobs)
			}
		} else {
			v["moves_per_s"] = perSecond(jobs, elapsed)
			v["cpu_us_per_move"] = cpuPer(e.brokerCPU, jobs)
		}
	})
	if err := joinLoad(stop, &wg, err, errs, "producer"); err != nil {
		return nil, err
	}
	if err := firstError(append(conns, pub)); err != nil {
		return nil, err
	}
	// Every job published is finished once the broker has caught up: one
	// that never is was dropped, and the producer, held to jobBacklog ahead
	// of what is finished, stalled on it - a rate that would read as a slow
	// broker rather than a lossy one.
	drained := time.Now().Add(e.Profile.DrainTimeout)
	for finished.Load() < published.Load() && time.Now().Before(drained) {
		if err := pause(ctx, 10*time.Millisecond); err != nil {
			return nil, err
		}
	}
	if f, p := finished.Load(), published.Load(); f < p {
		return nil, fmt.Errorf("%d of %d jobs never reached a worker (or their dead letters a reader) within %s: the broker dropped them (mochi drops a QoS 1 delivery a Receive Maximum of 1 has no room for)", p-f, p, e.Profile.DrainTimeout)
	}
	return v, nil
}

// queueFull is a producer held at a queue's max_bytes (benchfull, with no
// worker): every publish is answered 0x97 with nothing dropped, and the
// figure is that answer's round trip, beside a QoS 1 publisher on a
// broadcast topic at the same time, whose PUBACKs the full queue must not
// slow. Sagüin alone: the peers have no bounded queue to be refused by.
func queueFull() Case {
	return Case{
		Name:     "queue-full/1",
		Scenario: "queue-full",
		Measures: fmt.Sprintf("a producer publishing %d-byte QoS 1 jobs one at a time into a queue at its max_bytes, each refused 0x97, beside a QoS 1 publisher on a broadcast topic; the 0x97's round trip, and the other publisher's", pubQ1Payload),
		Metrics: []Metric{
			{Key: "refused_rtt_p50_ms", Label: "0x97 round trip p50", Unit: "ms", Better: LowerIsBetter},
			{Key: "refused_rtt_p99_ms", Label: "0x97 round trip p99", Unit: "ms", Better: LowerIsBetter},
			{Key: "refusals_per_s", Label: "0x97 answers", Unit: "/s", Better: HigherIsBetter},
			{Key: "other_rtt_p50_ms", Label: "other publisher's round trip p50", Unit: "ms", Better: LowerIsBetter},
			{Key: "other_rtt_p99_ms", Label: "other publisher's round trip p99", Unit: "ms", Better: LowerIsBetter},
		},
		Connections: 2,
		Only:        saguinBrokers,
		run:         runQueueFull,
	}
}

func runQueueFull(ctx context.Context, e *Env) (Values, error) {
	var refusedRTT, otherRTT stats.Histogram
	full, err := dialMany(ctx, 1, 1, "full", loadgen.Options{Addr: e.Addr, ReadBuffer: 4 << 10, RefusedLatency: &refusedRTT}, nil)
	if err != nil {
		return nil, err
	}
	defer closeAll(full)
	other, err := dialMany(ctx, 1, 1, "other", loadgen.Options{Addr: e.Addr, ReadBuffer: 4 << 10, AckLatency: &otherRTT}, nil)
	if err != nil {
		return nil, err
	}
	defer closeAll(other)
	conns := append(full[:1:1], other...)
	load, stop := context.WithCancel(ctx)
	defer stop()
	errs := make(chan error, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		c.Start(1)
		topic := []byte("bench/full/job")
		if i == 1 {
			topic = []byte("bench/pubq1/other")
		}
		wg.Go(func() {
			payload := make([]byte, pubQ1Payload)
			for {
				if err := c.PublishQoS1(load, topic, payload); err != nil {
					if !isStopped(err) {
						errs <- err
					}
					return
				}
			}
		})
	}
	var r0 uint64
	v := Values{}
	err = e.measure(ctx, func() { r0 = full[0].Refused(); refusedRTT.Reset(); otherRTT.Reset() }, func(elapsed time.Duration) {
		v["refusals_per_s"] = perSecond(full[0].Refused()-r0, elapsed)
		v["refused_rtt_p50_ms"] = ms(refusedRTT.Quantile(0.50))
		v["refused_rtt_p99_ms"] = ms(refusedRTT.Quantile(0.99))
		v["other_rtt_p50_ms"] = ms(otherRTT.Quantile(0.50))
		v["other_rtt_p99_ms"] = ms(otherRTT.Quantile(0.99))
	})
	if err := joinLoad(stop, &wg, err, errs, "publisher"); err != nil {
		return nil, err
	}
	if err := firstError(conns); err != nil {
		return nil, err
	}
	return v, nil
}
