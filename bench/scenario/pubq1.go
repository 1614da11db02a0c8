package scenario

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/saguin-edge/saguin/bench/loadgen"
	"github.com/saguin-edge/saguin/bench/stats"
)

const pubQ1Payload = 128

func pubQ1(conns int) Case {
	return Case{
		Name:     fmt.Sprintf("pub-q1/%d", conns),
		Scenario: "pub-q1",
		Measures: fmt.Sprintf("%d connection(s), each publishing %d-byte QoS 1 messages and waiting for the PUBACK before the next, nobody subscribed; PUBACKs a second and the broker's CPU time per PUBACK", conns, pubQ1Payload),
		Metrics: []Metric{
			{Key: "pubacks_per_s", Label: "PUBACKs", Unit: "/s", Better: HigherIsBetter},
			{Key: "cpu_us_per_puback", Label: "broker CPU per PUBACK", Unit: "µs", Better: LowerIsBetter},
			{Key: "rtt_p50_ms", Label: "round trip p50", Unit: "ms", Better: LowerIsBetter},
			{Key: "rtt_p99_ms", Label: "round trip p99", Unit: "ms", Better: LowerIsBetter},
		},
		Connections: conns,
		run:         func(ctx context.Context, e *Env) (Values, error) { return runPubQ1(ctx, e, conns, "bench/pubq1/%d") },
	}
}

// appendPubQ1 is pub-q1 into an append channel: on Sagüin every PUBACK
// waits for the record to be stored in the channel benchlog (bench/append/#,
// peer.saguinConfig); on the other peers the same topics are ordinary MQTT,
// so the peers' row is their pub-q1.
func appendPubQ1(conns int) Case {
	c := pubQ1(conns)
	c.Name = fmt.Sprintf("append-pub-q1/%d", conns)
	c.Scenario = "append-pub-q1"
	c.Measures = fmt.Sprintf("%d connection(s), each publishing %d-byte QoS 1 messages into an append channel (Sagüin; plain topics elsewhere) and waiting for the PUBACK before the next; PUBACKs a second and, on sqlite, records per commit", conns, pubQ1Payload)
	c.Metrics = append(c.Metrics[:2:2], append([]Metric{{Key: "records_per_commit", Label: "records per sqlite commit", Unit: "", Better: HigherIsBetter}}, c.Metrics[2:]...)...)
	c.run = func(ctx context.Context, e *Env) (Values, error) {
		v, err := runPubQ1(ctx, e, conns, "bench/append/%d")
		if err != nil {
			return nil, err
		}
		if v["records_per_commit"], err = recordsPerCommit(ctx, e); err != nil {
			return nil, err
		}
		return v, nil
	}
	return c
}

func runPubQ1(ctx context.Context, e *Env, n int, topicFormat string) (Values, error) {
	var rtt stats.Histogram
	conns, err := dialMany(ctx, n, e.Profile.ConnectConcurrency, "pubq1", loadgen.Options{Addr: e.Addr, ReadBuffer: 4 << 10, AckLatency: &rtt}, nil)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	return publishQoS1(ctx, e, conns, 1, &rtt, true, func(i int) [][]byte {
		return [][]byte{fmt.Appendf(nil, topicFormat, i)}
	})
}

// publishQoS1 is the measured load of pub-q1, latest-q1 and append-window:
// every connection publishes pubQ1Payload-byte QoS 1 messages to its topics
// (topicsOf(i)) in turn, with up to window unacknowledged (1: waiting for
// each PUBACK before the next), until the window ends. It
// reports PUBACKs a second and the round trip from rtt, and, where withCPU,
// the broker's CPU time per PUBACK.
func publishQoS1(ctx context.Context, e *Env, conns []*loadgen.Conn, window int, rtt *stats.Histogram, withCPU bool, topicsOf func(i int) [][]byte) (Values, error) {
	load, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, len(conns))
	for i, c := range conns {
		c.Start(window)
		topics := topicsOf(i)
		payload := make([]byte, pubQ1Payload)
		wg.Go(func() {
			for k := 0; ; k++ {
				if err := c.PublishQoS1(load, topics[k%len(topics)], payload); err != nil {
					if !isStopped(err) {
						errs <- err
					}
					return
				}
			}
		})
	}
	acked := func() (sum uint64) {
		for _, c := range conns {
			sum += c.Acked()
		}
		return sum
	}
	var a0 uint64
	v := Values{}
	err := e.measure(ctx, func() { a0 = acked(); rtt.Reset() }, func(elapsed time.Duration) {
		v["pubacks_per_s"] = perSecond(acked()-a0, elapsed)
		if withCPU {
			v["cpu_us_per_puback"] = cpuPer(e.brokerCPU, acked()-a0)
		}
		v["rtt_p50_ms"] = ms(rtt.Quantile(0.50))
		v["rtt_p99_ms"] = ms(rtt.Quantile(0.99))
	})
	if err := joinLoad(stop, &wg, err, errs, "publisher"); err != nil {
		return nil, err
	}
	if err := firstError(conns); err != nil {
		return nil, err
	}
	return v, nil
}
