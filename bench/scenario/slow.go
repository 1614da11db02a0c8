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

func slowSubscriber(p Profile) Case {
	return Case{
		Name:     "slow-subscriber",
		Scenario: "slow-subscriber",
		Measures: fmt.Sprintf("a QoS 1 publisher at %d msg/s (%d bytes) and a QoS 1 subscriber that reads, then stops reading while the publisher carries on; PUBACKs a second while it is deaf, the publisher's PUBACK round trip before and after, and how much the broker's RSS grows while the subscriber is deaf (invariant 16)", p.SlowRate, p.SlowPayload),
		Metrics: []Metric{
			{Key: "pubacks_deaf_per_s", Label: "PUBACKs, subscriber deaf", Unit: "/s", Better: HigherIsBetter},
			{Key: "puback_p99_deaf_ms", Label: "PUBACK p99, subscriber deaf", Unit: "ms", Better: LowerIsBetter},
			{Key: "puback_p99_reading_ms", Label: "PUBACK p99, subscriber reading", Unit: "ms", Better: LowerIsBetter},
			{Key: "rss_growth_mib", Label: "RSS growth in the deaf window", Unit: "MiB", Better: LowerIsBetter},
			{Key: "rss_deaf_end_mib", Label: "RSS at the window's end", Unit: "MiB", Better: LowerIsBetter},
			{Key: "deaf_connected", Label: "deaf subscriber still connected (1 yes, 0 no)", Unit: "", Better: HigherIsBetter},
		},
		Connections: 2,
		run:         runSlow,
	}
}

// runSlow has two phases on one broker. Reading: warm-up and a window with
// the subscriber keeping up, for the PUBACK baseline. Deaf: the subscriber
// stops reading its socket (it stays connected), SlowFill passes so the
// kernel's buffers and then the broker's fill, and a second window counts the
// PUBACKs, measures their round trip again and samples the broker's RSS every
// 100 ms. A broker keeping invariant 16 acknowledges at the publisher's rate
// in both windows with the same round trip, and does not grow in the second.
// One that stops acknowledging shows it as PUBACKs a second well under the
// rate, and no round trip at all when none came back.
func runSlow(ctx context.Context, e *Env) (Values, error) {
	p := e.Profile
	topic := []byte("bench/slow")
	sub, err := loadgen.Dial(ctx, loadgen.Options{Addr: e.Addr, ClientID: "slow-sub", SocketReceiveBuffer: 16 << 10})
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	if err := sub.Subscribe(string(topic), 1); err != nil {
		return nil, err
	}
	sub.Start(0)
	var rtt stats.Histogram
	pub, err := loadgen.Dial(ctx, loadgen.Options{Addr: e.Addr, ClientID: "slow-pub", AckLatency: &rtt})
	if err != nil {
		return nil, err
	}
	defer pub.Close()
	pub.Start(0)

	load, stop := context.WithCancel(ctx)
	defer stop()
	payload := make([]byte, p.SlowPayload)
	done := make(chan error, 1)
	go func() {
		done <- pace(load, p.SlowRate, func(due int) error {
			for range due {
				if err := pub.PublishQoS1(load, topic, payload); err != nil {
					return err
				}
			}
			return nil
		})
	}()
	v := Values{}
	finish := func(err error) (Values, error) {
		stop()
		if perr := <-done; perr != nil && err == nil {
			err = fmt.Errorf("publisher: %w", perr)
		}
		if err == nil {
			err = pub.Err()
		}
		if err != nil {
			return nil, err
		}
		return v, nil
	}

	// Reading.
	if err := pause(ctx, p.Warmup); err != nil {
		return finish(err)
	}
	rtt.Reset()
	if err := pause(ctx, p.Window); err != nil {
		return finish(err)
	}
	v["puback_p99_reading_ms"] = ms(rtt.Quantile(0.99))

	// Deaf.
	sub.Pause()
	if err := pause(ctx, p.SlowFill); err != nil {
		return finish(err)
	}
	sampler := sampleRSS(e.Pid, 100*time.Millisecond)
	var acked0 uint64
	err = e.measure(ctx, func() { rtt.Reset(); acked0 = pub.Acked() }, func(elapsed time.Duration) {
		v["pubacks_deaf_per_s"] = perSecond(pub.Acked()-acked0, elapsed)
		v["puback_p99_deaf_ms"] = ms(rtt.Quantile(0.99))
	})
	samples := sampler.stop()
	if err == nil && len(samples) >= 2 {
		v["rss_growth_mib"] = (float64(samples[len(samples)-1]) - float64(samples[0])) / mib
		v["rss_deaf_end_mib"] = float64(samples[len(samples)-1]) / mib
	}
	// Whether the broker hung up on the deaf subscriber (write_timeout, or a
	// queue limit) rather than holding it within its bounds.
	if err == nil {
		var closed bool
		if closed, err = sub.PeerClosed(); err == nil {
			v["deaf_connected"] = 1
			if closed {
				v["deaf_connected"] = 0
			}
		}
	}
	return finish(err)
}

// rssSampler reads a process's RSS on a period until stopped.
type rssSampler struct {
	quit    chan struct{}
	wg      sync.WaitGroup
	samples []uint64
}

func sampleRSS(pid int, every time.Duration) *rssSampler {
	s := &rssSampler{quit: make(chan struct{})}
	s.wg.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			if rss, err := proc.RSS(pid); err == nil {
				s.samples = append(s.samples, rss)
			}
			select {
			case <-s.quit:
				return
			case <-tick.C:
			}
		}
	})
	return s
}

func (s *rssSampler) stop() []uint64 {
	close(s.quit)
	s.wg.Wait()
	return s.samples
}
