package ops

import (
	"bytes"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/memory"
)

// Checklist D5.51 (RFC 0005 "What a metric is allowed to cost"):
// saguin_channel_consumer_position_min is asked of the store at every
// recomputation, never kept from one to the next - a minimum that only fell
// would never rise as consumers catch up. Two readers hold positions 3 and 5;
// the laggard catches up to 9 and, the next interval's scrape shows 5 (the
// store asked once, the minimum and the count in one pass); the other to 9
// too, and the one after shows 9. A scrape inside an interval is the
// previous computation's bytes whole (checklist D5.49), the minimum included.
func TestD5_51PositionMinIsAskedAtEveryRecomputationNeverKept(t *testing.T) {
	p, err := memory.Open(store.MemoryOptions{Name: "mem"})
	if err != nil {
		t.Fatal(err)
	}
	log, err := p.Append("events", store.ChannelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := log.Append(store.Record{Topic: "iot/d/events/x", Payload: []byte("v")}); err != nil {
			t.Fatal(err)
		}
	}
	asked := 0
	src := testSource(t, 0)
	src.Channels = []Channel{{Name: "events", Type: "append", Filter: "iot/+/events/+", Provider: "mem", Counts: log,
		Lowest:    func() (uint64, int) { asked++; return log.LowestPosition() },
		Published: func() uint64 { return 0 }, PositionLost: func() uint64 { return 0 },
		RetentionRemoved: func() uint64 { return 0 }, Partitioned: func() int { return 0 }, Positions: log}}
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	sc := &scraper{src: src, interval: time.Minute, now: fake.Now}
	save := func(reader string, offset uint64) {
		t.Helper()
		if err := log.SavePosition(store.Position{Reader: reader, Offset: offset}); err != nil {
			t.Fatal(err)
		}
	}
	lowest := func() string {
		t.Helper()
		body := string(sc.get(false).plain)
		i := strings.Index(body, "\nsaguin_channel_consumer_position_min{")
		if i < 0 {
			t.Fatalf("no saguin_channel_consumer_position_min in\n%s", body)
		}
		line, _, _ := strings.Cut(body[i+1:], "\n")
		return line
	}
	save("mqtt:laggard", 3)
	save("mqtt:keeper", 5)
	if got := lowest(); got != `saguin_channel_consumer_position_min{channel="events"} 3` {
		t.Fatalf("two readers at 3 and 5: %s", got)
	}
	save("mqtt:laggard", 9)
	fake.Advance(30 * time.Second)
	if got := lowest(); got != `saguin_channel_consumer_position_min{channel="events"} 3` {
		t.Fatalf("inside the interval: %s, want the previous computation's 3", got)
	}
	fake.Advance(30 * time.Second)
	if got := lowest(); got != `saguin_channel_consumer_position_min{channel="events"} 5` {
		t.Fatalf("the laggard caught up: %s, want 5", got)
	}
	save("mqtt:keeper", 9)
	fake.Advance(time.Minute)
	if got := lowest(); got != `saguin_channel_consumer_position_min{channel="events"} 9` {
		t.Fatalf("both caught up: %s, want 9", got)
	}
	if asked != 3 {
		t.Errorf("the store was asked %d times over three computations", asked)
	}
}

// Checklist D5.54 (RFC 0005 "The Go runtime"): the saguin_go_ series come
// from runtime/metrics, never runtime.ReadMemStats, which stops the world
// to answer. The runtime counts every stop-the-world pause that is not the
// collector's (/sched/pauses/total/other:seconds): a hundred recomputations
// add none, where a hundred ReadMemStats add a hundred - the second half
// shows the check can see one.
func TestD5_54RuntimeFiguresStopNoWorld(t *testing.T) {
	src := testSource(t, 3)
	pauses := func() uint64 {
		s := []metrics.Sample{{Name: "/sched/pauses/total/other:seconds"}}
		metrics.Read(s)
		var n uint64
		for _, c := range s[0].Value.Float64Histogram().Counts {
			n += c
		}
		return n
	}
	var buf bytes.Buffer
	before := pauses()
	for range 100 {
		buf.Reset()
		src.collect(time.Now()).write(&buf)
	}
	if n := pauses() - before; n != 0 {
		t.Errorf("a hundred recomputations stopped the world %d times", n)
	}
	before = pauses()
	var ms runtime.MemStats
	for range 100 {
		runtime.ReadMemStats(&ms)
	}
	if n := pauses() - before; n < 100 {
		t.Fatalf("a hundred ReadMemStats counted %d pauses: the check cannot see one", n)
	}
}
