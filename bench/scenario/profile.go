package scenario

import (
	"fmt"
	"time"
)

// Profile sets how long and how large every case runs.
type Profile struct {
	Name        string
	Warmup      time.Duration // load runs this long before the window opens
	Window      time.Duration // the measured window
	Repetitions int           // runs of each case on each broker
	// Calm is how much CPU other processes may take during a window, in
	// cores, before the run is made again (up to three times, the calmest
	// kept): a figure taken while a build ran beside it says little about
	// the broker. 0 never repeats; benchrun's -calm sets it.
	Calm float64

	PubQ1Conns        []int // pub-q1 sizes: connections each waiting for its PUBACK
	FanoutSubscribers []int // fanout-q0/q1 sizes
	FanoutDeliveries  int   // deliveries a second the fan-out publisher aims at: its rate is this over the subscribers
	LatencyRate       int   // latency-q1 publishes a second
	IdleConns         []int // conns sizes
	SlowRate          int   // slow-subscriber publishes a second
	SlowPayload       int   // slow-subscriber payload bytes
	SlowFill          time.Duration
	FaninPublishers   int
	FaninPayload      int
	// FaninWindow is how many messages the fan-in publishers may be ahead of
	// the subscriber. 2,048 (256 KiB of 128-byte messages) is what every peer
	// carried without loss here; at 8,192 Sagüin and mochi began to shed QoS 0
	// and each loss costs a one-second credit stall, so a larger window
	// measured the stall, not the broker.
	FaninWindow int
	// ReplayRecords is how many records the replay scenario's durable
	// consumer comes back to.
	ReplayRecords int
	// StormValues and StormSubscribers size the retained storm: that many
	// subscribers at once to a filter over that many retained values.
	StormValues, StormSubscribers int
	DrainTimeout                  time.Duration // how long stragglers may take to arrive once publishing stops
	ConnectConcurrency            int           // dials in flight at once in the conns scenario
}

// Profiles are the three the harness ships: smoke proves the harness works
// (CI, one repetition, small sizes), short is `make bench` (a few minutes on
// two cores), full is `make bench-full`.
var Profiles = map[string]Profile{
	"smoke": {
		Name: "smoke", Warmup: 200 * time.Millisecond, Window: 500 * time.Millisecond, Repetitions: 1,
		PubQ1Conns: []int{1, 8}, FanoutSubscribers: []int{100}, FanoutDeliveries: 20000,
		LatencyRate: 1000, IdleConns: []int{1000}, SlowRate: 1000, SlowPayload: 1024, SlowFill: 500 * time.Millisecond,
		FaninPublishers: 8, FaninPayload: 128, FaninWindow: 2048, ReplayRecords: 20000, StormValues: 5000, StormSubscribers: 4, DrainTimeout: 5 * time.Second, ConnectConcurrency: 32,
	},
	"short": {
		Name: "short", Warmup: 500 * time.Millisecond, Window: 1500 * time.Millisecond, Repetitions: 3,
		PubQ1Conns: []int{1, 8, 32, 256}, FanoutSubscribers: []int{100, 1000}, FanoutDeliveries: 50000,
		LatencyRate: 1000, IdleConns: []int{1000, 10000}, SlowRate: 1000, SlowPayload: 1024, SlowFill: 2 * time.Second,
		FaninPublishers: 8, FaninPayload: 128, FaninWindow: 2048, ReplayRecords: 200000, StormValues: 100000, StormSubscribers: 20, DrainTimeout: 10 * time.Second, ConnectConcurrency: 32,
	},
	"full": {
		Name: "full", Warmup: 3 * time.Second, Window: 10 * time.Second, Repetitions: 5,
		PubQ1Conns: []int{1, 8, 32, 256}, FanoutSubscribers: []int{100, 1000}, FanoutDeliveries: 100000,
		LatencyRate: 1000, IdleConns: []int{1000, 10000, 100000}, SlowRate: 1000, SlowPayload: 1024, SlowFill: 6 * time.Second,
		FaninPublishers: 8, FaninPayload: 128, FaninWindow: 2048, ReplayRecords: 1000000, StormValues: 100000, StormSubscribers: 20, DrainTimeout: 20 * time.Second, ConnectConcurrency: 32,
	},
}

// Cases lists every case of the profile, in the order they run and print.
func Cases(p Profile) []Case {
	cs := []Case{faninQ0(p)}
	for _, n := range p.PubQ1Conns {
		cs = append(cs, pubQ1(n))
	}
	for _, n := range p.PubQ1Conns {
		cs = append(cs, appendPubQ1(n))
	}
	// The window the issue names: 64 in flight, as mosquitto_pub -l does.
	cs = append(cs, appendWindow(64))
	for _, qos := range []uint8{0, 1} {
		for _, n := range p.FanoutSubscribers {
			cs = append(cs, fanout(p, qos, n))
		}
	}
	// The live fan-out of one append channel, at the first (smallest) size:
	// the 100 consumers in the shipped profiles.
	cs = append(cs, appendFanout(p, p.FanoutSubscribers[0]))
	cs = append(cs, replay(p.ReplayRecords))
	cs = append(cs, latencyQ1(p))
	for _, n := range p.IdleConns {
		cs = append(cs, idleConns(p, n))
	}
	cs = append(cs, tlsHandshakes())
	// The sizes, 1,000 and 10,000: 100,000 full handshakes would
	// take the full profile several minutes a run for no other figure.
	for _, n := range p.IdleConns {
		if n <= 10000 {
			cs = append(cs, idleConnsTLS(p, n))
		}
	}
	cs = append(cs, faninQ0TLS(p))
	cs = append(cs, slowSubscriber(p))
	for _, n := range []int{1, 8, 32} {
		cs = append(cs, latestSet(n))
	}
	cs = append(cs, catchUp(10000))
	cs = append(cs, retainedStorm(p.StormValues, p.StormSubscribers))
	for _, n := range []int{1, 8} {
		cs = append(cs, queueJobs(n))
	}
	cs = append(cs, dlqMove(), queueFull())
	return cs
}

// Select keeps the cases whose name or scenario is in names; all of them
// when names is empty.
func Select(cases []Case, names []string) ([]Case, error) {
	if len(names) == 0 {
		return cases, nil
	}
	var out []Case
	for _, n := range names {
		found := false
		for _, c := range cases {
			if c.Name == n || c.Scenario == n {
				out = append(out, c)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("no scenario or case named %q", n)
		}
	}
	return out, nil
}
