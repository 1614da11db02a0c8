package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/saguin-edge/saguin/bench/loadgen"
	"github.com/saguin-edge/saguin/bench/stats"
	"github.com/saguin-edge/saguin/codec"
)

const fanoutPayload = 128

func fanout(p Profile, qos uint8, subscribers int) Case {
	rate := max(p.FanoutDeliveries/subscribers, 1)
	return Case{
		Name:     fmt.Sprintf("fanout-q%d/%d", qos, subscribers),
		Scenario: fmt.Sprintf("fanout-q%d", qos),
		Measures: fmt.Sprintf("one publisher at %d msg/s (QoS %d, %d bytes) to %d subscribers (QoS %d); deliveries per CPU second the broker spent (at a fixed rate, what separates brokers that keep up), deliveries a second, and the share that arrived", rate, qos, fanoutPayload, subscribers, qos),
		Metrics: []Metric{
			{Key: "deliveries_per_cpu_s", Label: "deliveries per broker CPU second", Unit: "", Better: HigherIsBetter},
			{Key: "deliveries_per_s", Label: "deliveries", Unit: "/s", Better: HigherIsBetter},
			{Key: "arrived_pct", Label: "arrived", Unit: "%", Better: HigherIsBetter},
			{Key: "latency_p50_ms", Label: "delivery p50", Unit: "ms", Better: LowerIsBetter},
			{Key: "latency_p99_ms", Label: "delivery p99", Unit: "ms", Better: LowerIsBetter},
		},
		Connections: subscribers + 1,
		run: func(ctx context.Context, e *Env) (Values, error) {
			return runFanout(ctx, e, qos, subscribers, rate, "bench/fanout")
		},
	}
}

func runFanout(ctx context.Context, e *Env, qos uint8, n, rate int, topicName string) (Values, error) {
	var lat stats.Histogram
	topic := []byte(topicName)
	subs, err := dialMany(ctx, n, e.Profile.ConnectConcurrency, "fanout-sub",
		loadgen.Options{Addr: e.Addr, ReadBuffer: 8 << 10, OnPublish: func(p *codec.Publish) { lat.Record(loadgen.Age(p.Payload)) }},
		func(_ int, c *loadgen.Conn) error { return c.Subscribe(string(topic), qos) })
	if err != nil {
		return nil, err
	}
	defer closeAll(subs)
	for _, c := range subs {
		c.Start(0)
	}
	pub, err := loadgen.Dial(ctx, loadgen.Options{Addr: e.Addr, ClientID: "fanout-pub"})
	if err != nil {
		return nil, err
	}
	defer pub.Close()
	pub.Start(0)

	delivered := func() (sum uint64) {
		for _, c := range subs {
			sum += c.Delivered()
		}
		return sum
	}
	load, stop := context.WithCancel(ctx)
	defer stop()
	payload := make([]byte, fanoutPayload)
	var published uint64
	done := make(chan error, 1)
	go func() {
		done <- pace(load, rate, func(due int) error {
			if qos == 0 {
				if err := pub.PublishQoS0(topic, payload, due); err != nil {
					return err
				}
				published += uint64(due)
				return nil
			}
			for range due {
				if err := pub.PublishQoS1(load, topic, payload); err != nil {
					return err
				}
				published++
			}
			return nil
		})
	}()
	var d0 uint64
	v := Values{}
	err = e.measure(ctx, func() { d0 = delivered(); lat.Reset() }, func(elapsed time.Duration) {
		n := delivered() - d0
		v["deliveries_per_s"] = perSecond(n, elapsed)
		v["deliveries_per_cpu_s"] = perSecond(n, e.brokerCPU)
		v["latency_p50_ms"] = ms(lat.Quantile(0.50))
		v["latency_p99_ms"] = ms(lat.Quantile(0.99))
	})
	stop()
	if perr := <-done; perr != nil && err == nil {
		err = fmt.Errorf("publisher: %w", perr)
	}
	if err != nil {
		return nil, err
	}
	want := published * uint64(n)
	got := drain(ctx, delivered, want, e.Profile.DrainTimeout)
	if got > want {
		return nil, fmt.Errorf("%d deliveries of %d publishes to %d subscribers: more than one copy each", got, published, n)
	}
	v["arrived_pct"] = 100 * float64(min(got, want)) / float64(max(want, 1))
	if err := firstError(append(subs, pub)); err != nil {
		return nil, err
	}
	return v, nil
}
