package scenario

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saguin-edge/saguin/bench/loadgen"
)

// The TLS door's scenarios (issue 15's performance half): each runs on a
// peer's TLS door (Case.TLS), with the certificate the harness makes for
// the run - ECDSA P-256, the same on every peer - and the generator offering
// X25519 alone (peer.tlsFiles.clientTLS says why). A peer with no TLS door
// (mochi) is left out of them. None runs over WebSocket: Debian's Mosquitto
// has no WebSocket door to compare with (docs/performance.md).

// tlsHandshakers is how many clients open connections at once in
// tls-handshakes: two per core of the machine the figures are from, so the
// broker always has a handshake to do while a client waits on its answer.
const tlsHandshakers = 4

func tlsHandshakes() Case {
	return Case{
		Name:     "tls-handshakes",
		Scenario: "tls-handshakes",
		Measures: fmt.Sprintf("%d clients each opening a connection to the TLS door (a full handshake: ECDSA P-256, X25519, no resumption), sending CONNECT, reading CONNACK and closing, over and over; handshakes a second", tlsHandshakers),
		Metrics: []Metric{
			{Key: "handshakes_per_s", Label: "TLS handshakes", Unit: "/s", Better: HigherIsBetter},
			{Key: "cpu_ms_per_handshake", Label: "broker CPU per handshake", Unit: "ms", Better: LowerIsBetter},
		},
		Connections: tlsHandshakers,
		TLS:         true,
		run:         runHandshakes,
	}
}

func runHandshakes(ctx context.Context, e *Env) (Values, error) {
	load, stop := context.WithCancel(ctx)
	defer stop()
	var done atomic.Uint64
	errs := make(chan error, tlsHandshakers)
	var wg sync.WaitGroup
	for i := range tlsHandshakers {
		wg.Go(func() {
			for load.Err() == nil {
				c, err := loadgen.Dial(load, loadgen.Options{Addr: e.Addr, TLS: e.TLS, ClientID: fmt.Sprintf("handshake-%d", i), ReadBuffer: 512})
				if err != nil {
					if load.Err() == nil {
						errs <- err
					}
					return
				}
				c.Close()
				done.Add(1)
			}
		})
	}
	var n0 uint64
	v := Values{}
	err := e.measure(ctx, func() { n0 = done.Load() }, func(elapsed time.Duration) {
		n := done.Load() - n0
		v["handshakes_per_s"] = perSecond(n, elapsed)
		v["cpu_ms_per_handshake"] = e.brokerCPU.Seconds() * 1000 / float64(max(n, 1))
	})
	if err := joinLoad(stop, &wg, err, errs, "handshake"); err != nil {
		return nil, err
	}
	return v, nil
}

// idleConnsTLS is conns over the TLS door: what an idle TLS connection
// costs the broker's memory and CPU beside the same count over tcp.
func idleConnsTLS(p Profile, n int) Case {
	c := idleConns(p, n)
	c.Name, c.Scenario, c.TLS = fmt.Sprintf("conns-tls/%d", n), "conns-tls", true
	c.Measures = fmt.Sprintf("%d MQTT 5 connections over TLS (keepalive %d s; a full handshake each, ECDSA P-256) opened %d at a time and then held idle for the window; resident memory a connection, connections a second, and the broker's CPU while they are idle", n, idleKeepAlive, p.ConnectConcurrency)
	return c
}

// faninQ0TLS is fanin-q0 with every publisher and the subscriber on the
// TLS door: the record layer's cost on the broker's busiest path.
func faninQ0TLS(p Profile) Case {
	c := faninQ0(p)
	c.Name, c.Scenario, c.TLS = "fanin-q0-tls", "fanin-q0-tls", true
	c.Measures = fmt.Sprintf("fanin-q0 over TLS: %d publishers send %d-byte QoS 0 messages to one wildcard subscriber, all on the TLS door, at most %d ahead of what it has received; messages received a second", p.FaninPublishers, p.FaninPayload, p.FaninWindow)
	return c
}
