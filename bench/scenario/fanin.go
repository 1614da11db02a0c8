package scenario

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/saguin-edge/saguin/bench/loadgen"
	"github.com/saguin-edge/saguin/codec"
)

// faninBatch is how many QoS 0 publishes one write carries.
const faninBatch = 32

func faninQ0(p Profile) Case {
	return Case{
		Name:     "fanin-q0",
		Scenario: "fanin-q0",
		Measures: fmt.Sprintf("%d publishers send %d-byte QoS 0 messages to one wildcard subscriber, at most %d ahead of what it has received; messages received a second", p.FaninPublishers, p.FaninPayload, p.FaninWindow),
		Metrics: []Metric{
			{Key: "received_per_s", Label: "received", Unit: "msg/s", Better: HigherIsBetter},
			{Key: "lost_pct", Label: "lost", Unit: "%", Better: LowerIsBetter},
		},
		Connections: p.FaninPublishers + 1,
		run:         runFanin,
	}
}

// runFanin: the publishers stay at most a window ahead of the subscriber
// (credit), each write carrying a batch; the subscriber counts what arrives.
func runFanin(ctx context.Context, e *Env) (Values, error) {
	p := e.Profile
	flow := newCredit(int64(p.FaninWindow), time.Second)
	sub, err := loadgen.Dial(ctx, loadgen.Options{Addr: e.Addr, TLS: e.TLS, ClientID: "fanin-sub",
		OnPublish: func(*codec.Publish) { flow.delivered() }})
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	if err := sub.Subscribe("bench/fanin/#", 0); err != nil {
		return nil, err
	}
	sub.Start(0)
	pubs, err := dialMany(ctx, p.FaninPublishers, p.FaninPublishers, "fanin-pub", loadgen.Options{Addr: e.Addr, TLS: e.TLS, ReadBuffer: 4 << 10}, nil)
	if err != nil {
		return nil, err
	}
	defer closeAll(pubs)

	load, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, len(pubs))
	for i, c := range pubs {
		c.Start(0)
		topic := fmt.Appendf(nil, "bench/fanin/%d", i)
		payload := make([]byte, p.FaninPayload)
		wg.Go(func() {
			for {
				if err := flow.take(load, faninBatch); err != nil {
					return
				}
				if err := c.PublishQoS0(topic, payload, faninBatch); err != nil {
					if load.Err() == nil {
						errs <- err
					}
					return
				}
			}
		})
	}
	var got0 int64
	v := Values{}
	err = e.measure(ctx, func() { got0 = flow.got.Load() }, func(elapsed time.Duration) {
		v["received_per_s"] = perSecond(uint64(flow.got.Load()-got0), elapsed)
	})
	if err := joinLoad(stop, &wg, err, errs, "publisher"); err != nil {
		return nil, err
	}
	sent := uint64(flow.sent.Load())
	got := drain(ctx, func() uint64 { return uint64(flow.got.Load()) }, sent, p.DrainTimeout)
	if got > sent {
		return nil, fmt.Errorf("%d deliveries of %d publishes: the broker duplicated QoS 0 messages", got, sent)
	}
	v["lost_pct"] = 100 * float64(sent-min(got, sent)) / float64(max(sent, 1))
	if err := firstError(append(pubs, sub)); err != nil {
		return nil, err
	}
	return v, nil
}
