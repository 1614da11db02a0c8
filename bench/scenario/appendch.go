package scenario

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/saguin-edge/saguin/bench/loadgen"
	"github.com/saguin-edge/saguin/bench/proc"
	"github.com/saguin-edge/saguin/bench/stats"
)

// The append channel scenarios (issue 11's performance half). On Sagüin the
// topics are in append channels the harness's configuration declares
// (peer.saguinConfig: benchlog over bench/append/#, benchreplay over
// bench/replay/#); on the other peers they are plain MQTT, so each row says
// what the same client load costs there.

// appendWindow is one connection publishing QoS 1 into an append channel
// with window publishes in flight, as `mosquitto_pub -l` or a Paho client
// granted Receive Maximum 64 does. On a sqlite provider the figure beside the
// rate is how many records share a commit (RFC 0002 "How a sqlite provider
// commits publishes"), read from the broker's own counters on /metrics.
func appendWindow(window int) Case {
	return Case{
		Name:     fmt.Sprintf("append-window/%d", window),
		Scenario: "append-window",
		Measures: fmt.Sprintf("one connection publishing %d-byte QoS 1 messages into an append channel (Sagüin; a plain topic elsewhere) with %d unacknowledged at a time; PUBACKs a second and, on sqlite, records per commit", pubQ1Payload, window),
		Metrics: []Metric{
			{Key: "pubacks_per_s", Label: "PUBACKs", Unit: "/s", Better: HigherIsBetter},
			{Key: "records_per_commit", Label: "records per sqlite commit", Unit: "", Better: HigherIsBetter},
			{Key: "cpu_us_per_puback", Label: "broker CPU per PUBACK", Unit: "µs", Better: LowerIsBetter},
			{Key: "rtt_p50_ms", Label: "round trip p50", Unit: "ms", Better: LowerIsBetter},
			{Key: "rtt_p99_ms", Label: "round trip p99", Unit: "ms", Better: LowerIsBetter},
		},
		Connections: 1,
		run: func(ctx context.Context, e *Env) (Values, error) {
			var rtt stats.Histogram
			conns, err := dialMany(ctx, 1, 1, "window", loadgen.Options{Addr: e.Addr, AckLatency: &rtt}, nil)
			if err != nil {
				return nil, err
			}
			defer closeAll(conns)
			v, err := publishQoS1(ctx, e, conns, window, &rtt, true, func(int) [][]byte { return [][]byte{[]byte("bench/append/window")} })
			if err != nil {
				return nil, err
			}
			// Once what was in flight is answered the counters hold the
			// whole run: warm-up and window alike, this one connection's
			// records and nothing else.
			for conns[0].InFlight() > 0 && conns[0].Err() == nil {
				if err := pause(ctx, time.Millisecond); err != nil {
					return nil, err
				}
			}
			if v["records_per_commit"], err = recordsPerCommit(ctx, e); err != nil {
				return nil, err
			}
			return v, nil
		},
	}
}

// recordsPerCommit is the records a sqlite commit carried over the whole
// run, from the broker's own counters; NaN for a broker with no operations
// listener or no commits (a memory provider).
func recordsPerCommit(ctx context.Context, e *Env) (float64, error) {
	if e.OpsAddr == "" {
		return math.NaN(), nil
	}
	m, err := scrape(ctx, e.OpsAddr, "saguin_storage_commits_total", "saguin_storage_committed_records_total")
	if err != nil {
		return 0, err
	}
	commits := m["saguin_storage_commits_total"]
	if commits == 0 {
		return math.NaN(), nil
	}
	return m["saguin_storage_committed_records_total"] / commits, nil
}

// scrape reads the broker's /metrics once and sums each named family's
// samples over their labels. The operations listener caches a scrape for
// min_scrape_interval (60 s at least), so a scenario reads it once, at its
// end, never as a difference of two readings.
func scrape(ctx context.Context, addr string, families ...string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, fmt.Errorf("asking for /metrics: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics answered %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, f := range families {
			rest, ok := strings.CutPrefix(line, f)
			if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
				continue
			}
			i := strings.LastIndexByte(rest, ' ')
			x, err := strconv.ParseFloat(rest[i+1:], 64)
			if err != nil {
				return nil, fmt.Errorf("/metrics line %q: %w", line, err)
			}
			out[f] += x
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading /metrics: %w", err)
	}
	return out, nil
}

// appendFanout is fanout-q1 from an append channel: on Sagüin each
// subscriber is a consumer of benchlog served by its own delivery routine,
// reading every record from the log at its own position, beside the
// broadcast fan-out of the same run.
func appendFanout(p Profile, subscribers int) Case {
	c := fanout(p, 1, subscribers)
	rate := max(p.FanoutDeliveries/subscribers, 1)
	c.Name = fmt.Sprintf("append-fanout-q1/%d", subscribers)
	c.Scenario = "append-fanout-q1"
	c.Measures = fmt.Sprintf("one publisher at %d msg/s (QoS 1, %d bytes) into an append channel (Sagüin; a plain topic elsewhere) read live by %d QoS 1 consumers; deliveries per CPU second the broker spent, deliveries a second, and the share that arrived", rate, fanoutPayload, subscribers)
	c.run = func(ctx context.Context, e *Env) (Values, error) {
		return runFanout(ctx, e, 1, subscribers, rate, "bench/append/fanout")
	}
	return c
}

// replay is a durable consumer reading records held for it: it subscribes
// (Clean Start 0, a Session Expiry, QoS 1) and goes away, records are
// published meanwhile, and it comes back with Receive Maximum 100 and reads
// them all. On Sagüin they are records of the append channel benchreplay,
// read from the consumer's stored position; on Mosquitto they are the
// persistent session's queued messages (max_queued_messages 1,000,000 in the
// harness's configuration), the MQTT way to do it. The fill is timed too, and
// the broker's resident memory grown over it, per record held, is the cost of
// holding one (128 bytes of payload each).
func replay(records int) Case {
	return Case{
		Name:     fmt.Sprintf("replay/%d", records),
		Scenario: "replay",
		Measures: fmt.Sprintf("a durable QoS 1 consumer (Receive Maximum 100) coming back to %d %d-byte records held for it (an append channel on Sagüin, a persistent session's queue elsewhere); records a second replayed, the broker's CPU per record, and the resident memory each record held took", records, pubQ1Payload),
		Metrics: []Metric{
			{Key: "replayed_per_s", Label: "records replayed", Unit: "/s", Better: HigherIsBetter},
			{Key: "cpu_us_per_record", Label: "broker CPU per replayed record", Unit: "µs", Better: LowerIsBetter},
			{Key: "fill_per_s", Label: "records stored (8 publishers, 64 in flight each)", Unit: "/s", Better: HigherIsBetter},
			{Key: "rss_bytes_per_record", Label: "RSS grown per record held", Unit: "B", Better: LowerIsBetter},
		},
		Connections: replayPublishers + 1,
		run:         func(ctx context.Context, e *Env) (Values, error) { return runReplay(ctx, e, records) },
	}
}

const (
	replayPublishers = 8
	replayWindow     = 64
	replayReceiveMax = 100
	// replayStall fails a replay that stops moving: a record the broker
	// lost, not a slow machine.
	replayStall = 20 * time.Second
)

func runReplay(ctx context.Context, e *Env, records int) (Values, error) {
	consumer := loadgen.Options{Addr: e.Addr, ClientID: "replay-consumer", SessionExpiry: 3600, ReceiveMaximum: replayReceiveMax}
	first, err := loadgen.Dial(ctx, consumer)
	if err != nil {
		return nil, err
	}
	if err := first.Subscribe("bench/replay/#", 1); err != nil {
		first.Close()
		return nil, err
	}
	first.Close() // a normal DISCONNECT: the session, and what it is owed, stay

	before, err := proc.Read(e.Pid)
	if err != nil {
		return nil, err
	}
	pubs, err := dialMany(ctx, replayPublishers, replayPublishers, "replay-pub", loadgen.Options{Addr: e.Addr}, nil)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := fill(ctx, pubs, records); err != nil {
		closeAll(pubs)
		return nil, err
	}
	filled := time.Since(start)
	closeAll(pubs)
	after, err := proc.Read(e.Pid)
	if err != nil {
		return nil, err
	}

	back, err := loadgen.Dial(ctx, consumer)
	if err != nil {
		return nil, err
	}
	defer back.Close()
	if err := e.beginWindow(); err != nil {
		return nil, err
	}
	back.Start(0)
	last, moved := uint64(0), time.Now()
	for back.Delivered() < uint64(records) {
		if err := back.Err(); err != nil {
			return nil, fmt.Errorf("the consumer after %d of %d records: %w", back.Delivered(), records, err)
		}
		if n := back.Delivered(); n != last {
			last, moved = n, time.Now()
		} else if time.Since(moved) > replayStall {
			return nil, fmt.Errorf("the replay stopped at %d of %d records", n, records)
		}
		if err := pause(ctx, time.Millisecond); err != nil {
			return nil, err
		}
	}
	elapsed, err := e.endWindow()
	if err != nil {
		return nil, err
	}
	if got := back.Delivered(); got > uint64(records) {
		return nil, fmt.Errorf("%d deliveries of %d records: a record came twice", got, records)
	}
	return Values{
		"replayed_per_s":       perSecond(uint64(records), elapsed),
		"cpu_us_per_record":    cpuPer(e.brokerCPU, uint64(records)),
		"fill_per_s":           perSecond(uint64(records), filled),
		"rss_bytes_per_record": (float64(after.RSS) - float64(before.RSS)) / float64(records),
	}, nil
}

// fill publishes records QoS 1 messages over pubs, each connection with
// replayWindow in flight on a topic of its own, and returns once every one
// is acknowledged.
func fill(ctx context.Context, pubs []*loadgen.Conn, records int) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(pubs))
	for i, c := range pubs {
		c.Start(replayWindow)
		n := records / len(pubs)
		if i < records%len(pubs) {
			n++
		}
		topic := fmt.Appendf(nil, "bench/replay/%d", i)
		wg.Go(func() {
			payload := make([]byte, pubQ1Payload)
			for range n {
				if err := c.PublishQoS1(ctx, topic, payload); err != nil {
					errs <- fmt.Errorf("filling: %w", err)
					return
				}
			}
			for c.InFlight() > 0 && c.Err() == nil {
				if err := pause(ctx, time.Millisecond); err != nil {
					errs <- err
					return
				}
			}
			if err := c.Err(); err != nil {
				errs <- fmt.Errorf("filling: %w", err)
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}
