package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/saguin-edge/saguin/bench/loadgen"
	"github.com/saguin-edge/saguin/bench/stats"
	"github.com/saguin-edge/saguin/codec"
)

const latencyPayload = 128

func latencyQ1(p Profile) Case {
	return Case{
		Name:     "latency-q1",
		Scenario: "latency-q1",
		Measures: fmt.Sprintf("one QoS 1 publisher at %d msg/s (%d bytes), one QoS 1 subscriber; time from the publisher's write to the subscriber's read", p.LatencyRate, latencyPayload),
		Metrics: []Metric{
			{Key: "p50_ms", Label: "p50", Unit: "ms", Better: LowerIsBetter},
			{Key: "p99_ms", Label: "p99", Unit: "ms", Better: LowerIsBetter},
			{Key: "p999_ms", Label: "p99.9", Unit: "ms", Better: LowerIsBetter},
			{Key: "samples", Label: "samples", Unit: "", Better: HigherIsBetter},
		},
		Connections: 2,
		run:         runLatency,
	}
}

func runLatency(ctx context.Context, e *Env) (Values, error) {
	var lat stats.Histogram
	topic := []byte("bench/latency")
	sub, err := loadgen.Dial(ctx, loadgen.Options{Addr: e.Addr, ClientID: "latency-sub",
		OnPublish: func(p *codec.Publish) { lat.Record(loadgen.Age(p.Payload)) }})
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	if err := sub.Subscribe(string(topic), 1); err != nil {
		return nil, err
	}
	sub.Start(0)
	pub, err := loadgen.Dial(ctx, loadgen.Options{Addr: e.Addr, ClientID: "latency-pub"})
	if err != nil {
		return nil, err
	}
	defer pub.Close()
	pub.Start(0)

	load, stop := context.WithCancel(ctx)
	defer stop()
	payload := make([]byte, latencyPayload)
	done := make(chan error, 1)
	go func() {
		done <- pace(load, e.Profile.LatencyRate, func(due int) error {
			for range due {
				if err := pub.PublishQoS1(load, topic, payload); err != nil {
					return err
				}
			}
			return nil
		})
	}()
	v := Values{}
	err = e.measure(ctx, lat.Reset, func(time.Duration) {
		v["p50_ms"] = ms(lat.Quantile(0.50))
		v["p99_ms"] = ms(lat.Quantile(0.99))
		v["p999_ms"] = ms(lat.Quantile(0.999))
		v["samples"] = float64(lat.Count())
	})
	stop()
	if perr := <-done; perr != nil && err == nil {
		err = fmt.Errorf("publisher: %w", perr)
	}
	if err != nil {
		return nil, err
	}
	if err := firstError([]*loadgen.Conn{sub, pub}); err != nil {
		return nil, err
	}
	return v, nil
}
