package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/saguin-edge/saguin/bench/loadgen"
	"github.com/saguin-edge/saguin/bench/proc"
)

func idleConns(p Profile, n int) Case {
	return Case{
		Name:     fmt.Sprintf("conns/%d", n),
		Scenario: "conns",
		Measures: fmt.Sprintf("%d MQTT 5 connections (keepalive %d s) opened (TCP connect, CONNECT, CONNACK, %d at a time) and then held idle for the window; resident memory a connection, connections a second, and the broker's CPU while they are idle", n, idleKeepAlive, p.ConnectConcurrency),
		Metrics: []Metric{
			{Key: "rss_per_conn_kib", Label: "RSS per connection", Unit: "KiB", Better: LowerIsBetter},
			{Key: "connects_per_s", Label: "connect rate", Unit: "/s", Better: HigherIsBetter},
			{Key: "rss_idle_mib", Label: "RSS holding them", Unit: "MiB", Better: LowerIsBetter},
			{Key: "idle_cpu_pct", Label: "broker CPU holding them idle", Unit: "% of a core", Better: LowerIsBetter},
		},
		Connections: n,
		run:         func(ctx context.Context, e *Env) (Values, error) { return runConns(ctx, e, n) },
	}
}

// idleKeepAlive is what the idle connections CONNECT with: a device's usual
// minute, so a broker's keepalive timers are armed for every one of them,
// and longer than any window, so none is due to send a PINGREQ in it.
const idleKeepAlive = 60

// runConns needs no warm-up: what it measures is the opening itself and
// what the open connections then cost. The window covers both, so the
// broker's CPU seconds are those of accepting them; the idle CPU is read
// separately over the hold alone (utime+stime from /proc, so it does not
// depend on a calm machine the way a rate does).
func runConns(ctx context.Context, e *Env, n int) (Values, error) {
	before, err := proc.RSS(e.Pid)
	if err != nil {
		return nil, err
	}
	if err := e.beginWindow(); err != nil {
		return nil, err
	}
	start := time.Now()
	conns, err := dialMany(ctx, n, e.Profile.ConnectConcurrency, "idle", loadgen.Options{Addr: e.Addr, TLS: e.TLS, ReadBuffer: 512, KeepAlive: idleKeepAlive}, nil)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	opening := time.Since(start)
	idle0, err := proc.Read(e.Pid)
	if err != nil {
		return nil, err
	}
	held := time.Now()
	if err := pause(ctx, e.Profile.Window); err != nil {
		return nil, err
	}
	idle1, err := proc.Read(e.Pid)
	if err != nil {
		return nil, err
	}
	idleCPU := float64(idle1.CPU-idle0.CPU) / float64(time.Since(held)) * 100
	holding, err := proc.RSS(e.Pid)
	if err != nil {
		return nil, err
	}
	if _, err := e.endWindow(); err != nil {
		return nil, err
	}
	growth := float64(holding) - float64(before)
	return Values{
		"rss_per_conn_kib": growth / float64(n) / 1024,
		"connects_per_s":   perSecond(uint64(n), opening),
		"rss_idle_mib":     float64(holding) / mib,
		"idle_cpu_pct":     idleCPU,
	}, nil
}
