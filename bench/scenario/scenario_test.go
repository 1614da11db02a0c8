package scenario

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/bench/peer"
)

func TestCreditHoldsPublishersWithinTheWindow(t *testing.T) {
	c := newCredit(8, time.Hour)
	ctx := context.Background()
	for range 2 {
		if err := c.take(ctx, 4); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan error, 1)
	go func() { got <- c.take(ctx, 4) }()
	deadline := time.Now().Add(10 * time.Second)
	for !c.waiting.Load() {
		if time.Now().After(deadline) {
			t.Fatal("a publisher went past a full window instead of waiting")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-got:
		t.Fatalf("a publisher went past a full window (%v)", err)
	default:
	}
	// The publisher is woken from the low-water mark (6 outstanding) on, and
	// goes once there is room for its whole batch: after the fourth arrival.
	for range 4 {
		c.delivered()
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if out := c.sent.Load() - c.got.Load(); out != 8 {
		t.Fatalf("%d outstanding, want the window, 8", out)
	}
}

func TestCreditWritesOffWhatAStalledBrokerDropped(t *testing.T) {
	c := newCredit(4, 10*time.Millisecond)
	ctx := context.Background()
	if err := c.take(ctx, 4); err != nil {
		t.Fatal(err)
	}
	// Nothing is ever delivered: the stall gives the 4 up and lets 1 more go.
	if err := c.take(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if c.written.Load() != 4 {
		t.Fatalf("written off %d, want the 4 outstanding", c.written.Load())
	}
}

func TestCreditWaitEndsWithTheRun(t *testing.T) {
	c := newCredit(1, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	if err := c.take(ctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := c.take(ctx, 1); err == nil {
		t.Fatal("a cancelled run's publisher kept publishing")
	}
}

func TestPaceNeverSendsAheadOfTheRate(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	const rate = 2000
	var sent int
	start := time.Now()
	err := pace(ctx, rate, func(n int) error {
		sent += n
		if elapsed := time.Since(start); float64(sent) > elapsed.Seconds()*rate+1 {
			t.Errorf("%d sent after %v: ahead of %d a second", sent, elapsed, rate)
		}
		if sent >= 100 {
			cancel()
		}
		return nil
	})
	if err != nil || sent < 100 {
		t.Fatalf("pace ended with %v after %d", err, sent)
	}
}

func TestSelectTakesAScenarioOrOneCase(t *testing.T) {
	cases := Cases(Profiles["short"])
	got, err := Select(cases, []string{"pub-q1", "conns/1000"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range got {
		names = append(names, c.Name)
	}
	want := []string{"pub-q1/1", "pub-q1/8", "pub-q1/32", "pub-q1/256", "conns/1000"}
	if !slices.Equal(names, want) {
		t.Fatalf("selected %v, want %v", names, want)
	}
	if _, err := Select(cases, []string{"fanin-q2"}); err == nil {
		t.Fatal("an unknown scenario was accepted")
	}
}

func TestShortProfileRunsTheIssuesSizes(t *testing.T) {
	p := Profiles["short"]
	var names []string
	for _, c := range Cases(p) {
		names = append(names, c.Name)
	}
	for _, want := range []string{"fanin-q0", "pub-q1/1", "pub-q1/8", "pub-q1/32", "pub-q1/256", "fanout-q0/100", "fanout-q0/1000",
		"fanout-q1/100", "fanout-q1/1000", "latency-q1", "conns/1000", "conns/10000", "slow-subscriber",
		"append-window/64", "append-fanout-q1/100", "replay/200000", "tls-handshakes", "conns-tls/1000", "conns-tls/10000", "fanin-q0-tls"} {
		if !slices.Contains(names, want) {
			t.Errorf("short profile lacks %s", want)
		}
	}
	if p.Repetitions < 3 || p.LatencyRate != 1000 || p.FaninPublishers != 8 || p.FaninPayload != 128 {
		t.Fatalf("short profile %+v departs from the issue", p)
	}
}

// 100,000 idle connections take a minute and 200,000 descriptors: the full
// profile holds them, the short one stops at 10,000.
func TestOnlyTheFullProfileHoldsAHundredThousandConnections(t *testing.T) {
	has := func(p Profile) bool {
		return slices.ContainsFunc(Cases(p), func(c Case) bool { return c.Name == "conns/100000" && c.Connections == 100000 })
	}
	if !has(Profiles["full"]) || has(Profiles["short"]) || has(Profiles["smoke"]) {
		t.Fatal("conns/100000 belongs to the full profile alone")
	}
}

// A TLS case leaves out a peer with no TLS door (mochi) rather than
// reporting it failed.
func TestATLSCaseLeavesOutAPeerWithNoTLSDoor(t *testing.T) {
	var tlsCases []Case
	for _, c := range Cases(tiny) {
		if c.TLS {
			tlsCases = append(tlsCases, c)
		}
	}
	if len(tlsCases) != 3 {
		t.Fatalf("%d TLS cases, want tls-handshakes, conns-tls and fanin-q0-tls", len(tlsCases))
	}
	if runs := Execute(context.Background(), tiny, tlsCases, []*peer.Broker{{Name: "plain"}}, t.TempDir(), nil); len(runs) != 0 {
		t.Fatalf("a peer with no TLS door ran %d TLS cases: %+v", len(runs), runs)
	}
}

// tiny is a profile small enough to run every scenario inside a unit test.
var tiny = Profile{
	Name: "tiny", Warmup: 50 * time.Millisecond, Window: 150 * time.Millisecond, Repetitions: 1,
	PubQ1Conns: []int{2}, FanoutSubscribers: []int{10}, FanoutDeliveries: 5000, LatencyRate: 1000,
	IdleConns: []int{50}, SlowRate: 500, SlowPayload: 1024, SlowFill: 100 * time.Millisecond,
	FaninPublishers: 2, FaninPayload: 128, FaninWindow: 1024, ReplayRecords: 2000, StormValues: 1000, StormSubscribers: 2,
	DrainTimeout: 5 * time.Second, ConnectConcurrency: 8,
}

func TestEveryScenarioProducesItsFiguresAgainstMosquitto(t *testing.T) {
	brokers, failed := peer.Prepare(context.Background(), peer.Options{BinDir: t.TempDir()}, []string{peer.Mosquitto})
	if err := failed[peer.Mosquitto]; err != nil {
		t.Skipf("no mosquitto: %v", err)
	}
	checkEveryCaseOn(t, brokers[peer.Mosquitto], Cases(tiny))
}

// TestQueueScenariosProduceTheirFiguresAgainstSaguin runs the queue cases on
// a Sagüin built from the tree: the ones only Sagüin serves (dead-letter
// moves, a queue at max_bytes) and the jobs case on its queue form.
func TestQueueScenariosProduceTheirFiguresAgainstSaguin(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	brokers, failed := peer.Prepare(context.Background(), peer.Options{RepoRoot: root, BinDir: t.TempDir()}, []string{peer.Saguin})
	if err := failed[peer.Saguin]; err != nil {
		t.Fatal(err)
	}
	cases, err := Select(Cases(tiny), []string{"queue-jobs", "dlq-move", "queue-full"})
	if err != nil {
		t.Fatal(err)
	}
	checkEveryCaseOn(t, brokers[peer.Saguin], cases)
}

// checkEveryCaseOn runs every case b serves once and wants each of its
// figures; a case that leaves b out has no run.
func checkEveryCaseOn(t *testing.T, b *peer.Broker, all []Case) {
	t.Helper()
	var cases []Case
	for _, c := range all {
		if c.runsOn(b.Name) {
			cases = append(cases, c)
		}
	}
	runs := Execute(context.Background(), tiny, all, []*peer.Broker{b}, t.TempDir(), nil)
	if len(runs) != len(cases) {
		t.Fatalf("%d runs for the %d cases %s serves", len(runs), len(cases), b.Name)
	}
	for i, r := range runs {
		if r.Err != "" {
			t.Errorf("%s: %s", r.Case, r.Err)
			continue
		}
		for _, m := range cases[i].AllMetrics() {
			if _, ok := r.Values[m.Key]; !ok {
				t.Errorf("%s reported no %s", r.Case, m.Key)
			}
		}
		if r.Values["peak_rss_mib"] <= 0 {
			t.Errorf("%s: broker peak RSS %v", r.Case, r.Values["peak_rss_mib"])
		}
	}
}
