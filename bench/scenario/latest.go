package scenario

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/saguin-edge/saguin/bench/loadgen"
	"github.com/saguin-edge/saguin/bench/stats"
)

// latestTopics is how many topics each latest-q1 publisher replaces in turn.
const latestTopics = 100

// latestSet is set/replace through the wire: each connection publishes
// retained QoS 1 values to its own 100 topics under bench/latest/, waiting
// for each PUBACK. On Sagüin a latest channel holds those topics; on the
// other peers they are retained messages, the plain-MQTT way to keep state.
func latestSet(conns int) Case {
	return Case{
		Name:     fmt.Sprintf("latest-q1/%d", conns),
		Scenario: "latest-q1",
		Measures: fmt.Sprintf("%d connection(s), each replacing the values of its own %d topics with %d-byte retained QoS 1 publishes, waiting for each PUBACK (Sagüin: a latest channel; the others: retained messages); PUBACKs a second", conns, latestTopics, pubQ1Payload),
		Metrics: []Metric{
			{Key: "pubacks_per_s", Label: "PUBACKs", Unit: "/s", Better: HigherIsBetter},
			{Key: "rtt_p50_ms", Label: "round trip p50", Unit: "ms", Better: LowerIsBetter},
			{Key: "rtt_p99_ms", Label: "round trip p99", Unit: "ms", Better: LowerIsBetter},
		},
		Connections: conns,
		run:         func(ctx context.Context, e *Env) (Values, error) { return runLatestSet(ctx, e, conns) },
	}
}

func runLatestSet(ctx context.Context, e *Env, n int) (Values, error) {
	var rtt stats.Histogram
	conns, err := dialMany(ctx, n, e.Profile.ConnectConcurrency, "latestq1", loadgen.Options{Addr: e.Addr, ReadBuffer: 4 << 10, AckLatency: &rtt, Retain: true}, nil)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	return publishQoS1(ctx, e, conns, 1, &rtt, false, func(i int) [][]byte {
		topics := make([][]byte, latestTopics)
		for k := range topics {
			topics[k] = fmt.Appendf(nil, "bench/latest/set/%d/%d", i, k)
		}
		return topics
	})
}

// catchUp is a new subscriber receiving the current values of n topics:
// Sagüin's latest state pass against the retained messages a plain-MQTT
// subscriber to a # filter is sent. The values are set once (retained QoS 1
// publishes under bench/latest/catch/); then, for the measured window, one
// new QoS 1 subscriber after another takes the whole set.
func catchUp(n int) Case {
	return Case{
		Name:     fmt.Sprintf("catchup/%d", n),
		Scenario: "catchup",
		Measures: fmt.Sprintf("a new QoS 1 subscriber to a filter reaching %d topics, each holding a %d-byte current value (Sagüin: a latest channel; the others: retained messages), receiving them all; one after another for the window", n, pubQ1Payload),
		Metrics: []Metric{
			{Key: "catchup_p50_ms", Label: "catch-up p50", Unit: "ms", Better: LowerIsBetter},
			{Key: "values_per_s", Label: "values", Unit: "/s", Better: HigherIsBetter},
			{Key: "received_pct", Label: "received", Unit: "%", Better: HigherIsBetter},
		},
		Connections: 2,
		run:         func(ctx context.Context, e *Env) (Values, error) { return runCatchUp(ctx, e, n) },
	}
}

func runCatchUp(ctx context.Context, e *Env, n int) (Values, error) {
	pubs, err := dialMany(ctx, 1, 1, "catchpub", loadgen.Options{Addr: e.Addr, Retain: true}, nil)
	if err != nil {
		return nil, err
	}
	defer closeAll(pubs)
	pub := pubs[0]
	pub.Start(64)
	payload := make([]byte, pubQ1Payload)
	for i := 0; i < n; i++ {
		if err := pub.PublishQoS1(ctx, fmt.Appendf(nil, "bench/latest/catch/%d", i), payload); err != nil {
			return nil, fmt.Errorf("setting the values: %w", err)
		}
	}
	for pub.InFlight() > 0 {
		if err := pause(ctx, time.Millisecond); err != nil {
			return nil, err
		}
	}
	var mu sync.Mutex
	var took []time.Duration
	var values, wanted uint64
	load, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() {
		for k := 0; load.Err() == nil; k++ {
			subs, err := dialMany(load, 1, 1, fmt.Sprintf("catchsub%d", k), loadgen.Options{Addr: e.Addr}, func(_ int, c *loadgen.Conn) error {
				return c.Subscribe("bench/latest/catch/#", 1)
			})
			if err != nil {
				if load.Err() == nil {
					done <- err
				}
				break
			}
			c := subs[0]
			start := time.Now()
			c.Start(0)
			deadline := start.Add(20 * time.Second)
			for c.Delivered() < uint64(n) && time.Now().Before(deadline) && load.Err() == nil {
				time.Sleep(100 * time.Microsecond)
			}
			got := c.Delivered()
			closeAll(subs)
			if load.Err() != nil {
				break
			}
			mu.Lock()
			took = append(took, time.Since(start))
			values += got
			wanted += uint64(n)
			mu.Unlock()
		}
		close(done)
	}()
	var v0 uint64
	var t0 int
	v := Values{}
	err = e.measure(ctx, func() {
		mu.Lock()
		v0, t0 = values, len(took)
		mu.Unlock()
	}, func(elapsed time.Duration) {
		// A window shorter than one catch-up (a small profile on a busy
		// machine) would report nothing: wait for the catch-up in progress
		// and report it alone, at its own rate (each gives up after 20 s).
		waitUntil := time.Now().Add(25 * time.Second)
		for {
			mu.Lock()
			if len(took) > t0 || load.Err() != nil || time.Now().After(waitUntil) {
				break
			}
			mu.Unlock()
			if pause(ctx, time.Millisecond) != nil {
				mu.Lock()
				break
			}
		}
		defer mu.Unlock()
		window := append([]time.Duration(nil), took[t0:]...)
		sort.Slice(window, func(i, j int) bool { return window[i] < window[j] })
		if len(window) > 0 {
			v["catchup_p50_ms"] = ms(window[len(window)/2])
		}
		v["values_per_s"] = perSecond(values-v0, elapsed)
		if len(window) == 1 && window[0] > elapsed {
			v["values_per_s"] = perSecond(values-v0, window[0])
		}
		if wanted > 0 {
			v["received_pct"] = 100 * float64(values) / float64(wanted)
		}
	})
	stop()
	if e2 := <-done; e2 != nil && err == nil {
		err = e2
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}
