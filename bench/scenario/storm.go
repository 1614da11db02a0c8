package scenario

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/saguin-edge/saguin/bench/loadgen"
	"github.com/saguin-edge/saguin/bench/proc"
	"github.com/saguin-edge/saguin/bench/stats"
)

// stormPublishers set the retained values, each its share of the topics.
const stormPublishers = 4

// stormStall is how long the storm may deliver nothing before the case
// gives up waiting and reports what arrived.
const stormStall = 10 * time.Second

// retainedStorm is issue 12's retained storm: subs new QoS 1 subscribers at
// once to a # filter over values retained broadcast values (plain retained
// messages on every broker), each to receive all of them, while a canary
// connection keeps one QoS 1 publish in flight on a topic nobody
// subscribes to. What other clients pay is the canary's round trip; what the
// storm costs the broker is its resident memory grown.
func retainedStorm(values, subs int) Case {
	return Case{
		Name:     fmt.Sprintf("retained-storm/%dx%d", subs, values),
		Scenario: "retained-storm",
		Measures: fmt.Sprintf("%d new QoS 1 subscribers at once to bench/storm/# over %d retained %d-byte values, each receiving all of them, beside a canary's QoS 1 round trips; the time until all arrived, the share that arrived, the canary's p99 and the broker's RSS grown during the storm", subs, values, pubQ1Payload),
		Metrics: []Metric{
			{Key: "storm_s", Label: "storm", Unit: "s", Better: LowerIsBetter},
			{Key: "received_pct", Label: "received", Unit: "%", Better: HigherIsBetter},
			{Key: "canary_p99_ms", Label: "canary round trip p99", Unit: "ms", Better: LowerIsBetter},
			{Key: "rss_grown_mib", Label: "RSS grown", Unit: "MiB", Better: LowerIsBetter},
		},
		Connections: subs + stormPublishers + 1,
		run:         func(ctx context.Context, e *Env) (Values, error) { return runRetainedStorm(ctx, e, values, subs) },
	}
}

func runRetainedStorm(ctx context.Context, e *Env, values, subs int) (Values, error) {
	pubs, err := dialMany(ctx, stormPublishers, stormPublishers, "storm-pub", loadgen.Options{Addr: e.Addr, Retain: true}, nil)
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(pubs))
	for i, c := range pubs {
		c.Start(64)
		wg.Go(func() {
			payload := make([]byte, pubQ1Payload)
			for k := i; k < values; k += len(pubs) {
				if err := c.PublishQoS1(ctx, fmt.Appendf(nil, "bench/storm/%d/%d", k%100, k), payload); err != nil {
					errs <- fmt.Errorf("setting the retained values: %w", err)
					return
				}
			}
			for c.InFlight() > 0 && c.Err() == nil {
				if pause(ctx, time.Millisecond) != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	closeAll(pubs)
	select {
	case err := <-errs:
		return nil, err
	default:
	}

	var rtt stats.Histogram
	canaries, err := dialMany(ctx, 1, 1, "storm-canary", loadgen.Options{Addr: e.Addr, AckLatency: &rtt}, nil)
	if err != nil {
		return nil, err
	}
	defer closeAll(canaries)
	canary := canaries[0]
	canary.Start(1)
	load, stop := context.WithCancel(ctx)
	defer stop()
	canaryDone := make(chan struct{})
	go func() {
		defer close(canaryDone)
		payload := make([]byte, pubQ1Payload)
		for load.Err() == nil {
			if canary.PublishQoS1(load, []byte("bench/storm-canary"), payload) != nil {
				return
			}
		}
	}()

	before, err := proc.Read(e.Pid)
	if err != nil {
		return nil, err
	}
	conns, err := dialMany(ctx, subs, subs, "storm-sub", loadgen.Options{Addr: e.Addr}, nil)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	rtt.Reset()
	if err := e.beginWindow(); err != nil {
		return nil, err
	}
	// Each SUBSCRIBE is answered before its subscriber reads anything else,
	// so the subscriptions go out one after another, readers started at once.
	for _, c := range conns {
		if err := c.Subscribe("bench/storm/#", 1); err != nil {
			return nil, err
		}
		c.Start(0)
	}
	want := uint64(values) * uint64(subs)
	var got uint64
	peak := before.RSS
	for last, moved := uint64(0), time.Now(); ; {
		got = 0
		for _, c := range conns {
			got += min(c.Delivered(), uint64(values))
		}
		if u, err := proc.Read(e.Pid); err == nil && u.RSS > peak {
			peak = u.RSS
		}
		if got >= want {
			break
		}
		if got != last {
			last, moved = got, time.Now()
		} else if time.Since(moved) > stormStall {
			break // what did not arrive was dropped: reported as the share received
		}
		if err := pause(ctx, 5*time.Millisecond); err != nil {
			return nil, err
		}
	}
	elapsed, err := e.endWindow()
	if err != nil {
		return nil, err
	}
	stop()
	<-canaryDone
	v := Values{
		"received_pct":  100 * float64(got) / float64(want),
		"canary_p99_ms": ms(rtt.Quantile(0.99)),
		"rss_grown_mib": (float64(peak) - float64(before.RSS)) / (1 << 20),
	}
	if got >= want {
		v["storm_s"] = elapsed.Seconds()
	}
	return v, nil
}
