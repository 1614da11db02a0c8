package ops

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker"
	"github.com/saguin-edge/saguin/broker/brokertest"
	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// sink is a connection that takes every delivery and keeps nothing.
type sink struct{ id string }

func (s *sink) ClientID() string                                  { return s.id }
func (s *sink) Version() byte                                     { return codec.Version5 }
func (s *sink) Deliver(*delivery.Message, delivery.Delivery) bool { return true }
func (s *sink) Kick(codec.ReasonCode)                             {}
func (s *sink) CanTake(*delivery.Message, delivery.Delivery) bool { return true }
func (s *sink) Fits(*delivery.Message, delivery.Delivery) bool    { return true }

// testSource is a broker with sessions connected, and an unstarted netloop
// server for the wire's counters.
func testSource(tb testing.TB, sessions int) *Source {
	tb.Helper()
	ss, rs := brokertest.Stores(tb, 0)
	b, err := broker.New(broker.Options{Sessions: ss, Retained: rs, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(b.Close)
	for i := range sessions {
		c := &sink{id: fmt.Sprintf("device-%d", i)}
		b.Connect(c, &netloop.ConnectRequest{Version: 5, ClientID: c.id, CleanStart: true, SessionExpiry: 3600})
		b.Subscribe(c, []byte("fleet/+/cmd"), delivery.SubscribeOptions{QoS: 1})
	}
	n, err := netloop.New(netloop.Options{Handler: b, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	return &Source{BrokerID: "t\"e\\st\n", Version: "devel", Started: time.Now(), Broker: b, Net: n,
		Providers: []Provider{{Name: "mem", Type: "memory", Bytes: func() int64 { return 768 }, Errors: func() uint64 { return 0 }}}}
}

// TestScrapeWritesOnlyCatalogueNamesEachWithHelpAndTypeFirst reads a scrape
// line by line: every series is a catalogue name with that name's labels,
// and its HELP and TYPE come before its first series, once.
func TestScrapeWritesOnlyCatalogueNamesEachWithHelpAndTypeFirst(t *testing.T) {
	var buf bytes.Buffer
	testSource(t, 3).collect(time.Now()).write(&buf)
	text := buf.String()
	seen := map[string]int{} // 1: HELP seen, 2: TYPE seen
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# HELP "):
			name := strings.Fields(line)[2]
			if seen[name] != 0 {
				t.Errorf("HELP for %s twice", name)
			}
			seen[name] = 1
		case strings.HasPrefix(line, "# TYPE "):
			f := strings.Fields(line)
			i, ok := familyIndex[f[2]]
			if !ok || Catalogue[i].Type != f[3] || seen[f[2]] != 1 {
				t.Errorf("TYPE line %q", line)
			}
			seen[f[2]] = 2
		default:
			name, _, _ := strings.Cut(line, " ")
			name, labels, _ := strings.Cut(name, "{")
			i, ok := familyIndex[name]
			if !ok {
				t.Errorf("%s is not in the catalogue", name)
				continue
			}
			if seen[name] != 2 {
				t.Errorf("%s has a series before its HELP and TYPE", name)
			}
			if n := strings.Count(labels, `="`); n != len(Catalogue[i].Labels) {
				t.Errorf("%q carries %d labels, the catalogue %d", line, n, len(Catalogue[i].Labels))
			}
		}
	}
	if !strings.Contains(text, `broker_id="t\"e\\st\n"`) {
		t.Errorf("a label value is not escaped:\n%s", text)
	}
	if !strings.Contains(text, "\nsaguin_subscriptions 3\n") {
		t.Errorf("three sessions subscribed, the scrape says otherwise:\n%s", text)
	}
}

func TestScrapeIsComputedOncePerIntervalOnTheInjectedClock(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	sc := &scraper{src: testSource(t, 1), interval: time.Minute, now: fake.Now}
	first := sc.get(false)
	fake.Advance(59 * time.Second)
	if sc.get(true) != first || first.gz == nil {
		t.Fatal("a scrape inside the interval was recomputed, or its gzip not kept with it")
	}
	fake.Advance(time.Second)
	if sc.get(false) == first {
		t.Fatal("a scrape a whole interval later was answered from the old computation")
	}
}

func TestScopesMatchAtASegmentBoundary(t *testing.T) {
	cases := []struct {
		scopes []string
		path   string
		want   bool
	}{
		{nil, "/v1/operations/config", true},
		{[]string{"/metrics"}, "/metrics", true},
		{[]string{"/metrics"}, "/v1/operations/sessions", false},
		{[]string{"/v1/operations"}, "/v1/operations/consumers", true},
		{[]string{"/v1/operations"}, "/v1/operationsomething", false},
		{[]string{"/v1"}, "/v1/operations/queues/jobs", true},
		{[]string{"/v1/operations/queues/jobs"}, "/v1/operations/queues/jobs2", false},
	}
	for _, c := range cases {
		if got := reaches(c.scopes, c.path); got != c.want {
			t.Errorf("reaches(%v, %s) = %v", c.scopes, c.path, got)
		}
	}
}

func TestHostRuleTakesIPLiteralsAndLocalhostOnly(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.0.0.1:9090": true, "[::1]:9090": true, "::1": true, "localhost": true, "LocalHost:80": true,
		"10.1.2.3:9090": true, "rebound.example": false, "localhost.example:9090": false, "": false, "saguin": false,
	} {
		if got := addressedByIP(host); got != want {
			t.Errorf("addressedByIP(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestControlCharactersMakeANameNobodys(t *testing.T) {
	for name, want := range map[string]bool{"alice": false, "alice smith": false, "al\x00ice": true, "al\tice": true, "al\u0085ice": true, "ålice": false} {
		if got := bad(name); got != want {
			t.Errorf("bad(%q) = %v", name, got)
		}
	}
}

// BenchmarkScrape is one recomputation of the catalogue, plain and gzipped,
// over a broker holding n sessions (the channel families are absent until
// the channel engines keep their counters, so sessions are the size that
// grows a scrape today).
func BenchmarkScrape(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10000} {
		src := testSource(b, n)
		for _, gz := range []bool{false, true} {
			name := fmt.Sprintf("sessions=%d/plain", n)
			if gz {
				name = fmt.Sprintf("sessions=%d/gzip", n)
			}
			b.Run(name, func(b *testing.B) {
				sc := &scraper{src: src, interval: 0, now: time.Now}
				var size int
				b.ReportAllocs()
				for range b.N {
					s := sc.get(gz)
					size = len(s.plain)
					if gz {
						size = len(s.gz)
					}
				}
				b.ReportMetric(float64(size), "bytes/scrape")
			})
		}
	}
}

// BenchmarkPublishBesideScrapes is a broadcast publish to 100 subscribers
// while another goroutine recomputes the catalogue every 10 ms (a hundred
// times what a Prometheus at its 15 s default asks), against the same with
// no scraper, in one run. allocs/op with the scraper on are the scraper's
// own allocations spread over the publishes (the counter is process-wide):
// the publish path's are the scraper=off row's, 0.
func BenchmarkPublishBesideScrapes(b *testing.B) {
	for _, scraping := range []bool{false, true} {
		b.Run(fmt.Sprintf("scraper=%v", map[bool]string{false: "off", true: "on"}[scraping]), func(b *testing.B) {
			src := testSource(b, 100)
			pub := &sink{id: "publisher"}
			src.Broker.Connect(pub, &netloop.ConnectRequest{Version: 5, ClientID: pub.id, CleanStart: true})
			stop := make(chan struct{})
			var wg sync.WaitGroup
			if scraping {
				sc := &scraper{src: src, interval: 0, now: time.Now}
				wg.Add(1)
				go func() {
					defer wg.Done()
					tick := time.NewTicker(10 * time.Millisecond)
					defer tick.Stop()
					for {
						select {
						case <-stop:
							return
						case <-tick.C:
							sc.get(false)
						}
					}
				}()
			}
			p := &codec.Publish{QoS: 0, Topic: []byte("fleet/dev-17/cmd"), Payload: []byte("reboot")}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if code, _ := src.Broker.Publish(pub, p); code != codec.Success {
					b.Fatal(code)
				}
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
		})
	}
}
