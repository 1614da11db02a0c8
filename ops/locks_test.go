package ops

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker"
	"github.com/saguin-edge/saguin/broker/brokertest"
	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// stalledDisk is a session store whose writes, once armed, wait at a gate
// the test opens: a disk that has stopped answering. Each write that reaches
// the gate says which it is on entered.
type stalledDisk struct {
	store.Sessions
	armed   atomic.Bool
	entered chan string
	gate    chan struct{}
}

func (d *stalledDisk) stall(op string) {
	if d.armed.Load() {
		d.entered <- op
		<-d.gate
	}
}

func (d *stalledDisk) Put(s store.Session) error { d.stall("Put"); return d.Sessions.Put(s) }
func (d *stalledDisk) Subscribe(id string, sub store.Subscription, cursor uint64) error {
	d.stall("Subscribe")
	return d.Sessions.Subscribe(id, sub, cursor)
}
func (d *stalledDisk) Log() store.BroadcastLog { return stalledLog{d.Sessions.Log(), d} }

type stalledLog struct {
	store.BroadcastLog
	d *stalledDisk
}

func (l stalledLog) Append(e store.BroadcastEntry) (store.BroadcastEntry, error) {
	l.d.stall("Append")
	return l.BroadcastLog.Append(e)
}

// stalledSource is a broker whose session store is d and which, like a
// sqlite provider, runs the calls that write to it off the caller's loop.
func stalledSource(t *testing.T, d *stalledDisk) *Source {
	t.Helper()
	ss, rs := brokertest.Stores(t, 0)
	d.Sessions = ss
	b, err := broker.New(broker.Options{Sessions: d, Retained: rs, SessionsWaitOnDisk: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	n, err := netloop.New(netloop.Options{Handler: b, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return &Source{BrokerID: "t", Version: "devel", Started: time.Now(), Broker: b, Net: n,
		Providers: []Provider{{Name: "mem", Type: "memory", Bytes: func() int64 { return 0 }, Errors: func() uint64 { return 0 }}}}
}

// answersWhileStalled checks what an operator sees while a write is stuck:
// /health 200, a scrape answered, and another client's publish delivered.
// Every wait is bounded: a lock held across the stuck write turns into a
// failure rather than a hang.
func answersWhileStalled(t *testing.T, s *Server, pub delivery.Client, sub *recorder, why string) {
	t.Helper()
	done := make(chan int, 1)
	go func() {
		w := httptest.NewRecorder()
		s.health(w, httptest.NewRequest("GET", "/health", nil))
		done <- w.Code
	}()
	select {
	case code := <-done:
		if code != http.StatusOK {
			t.Errorf("%s: /health %d, want 200 (a publish-path lock is held across the write)", why, code)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: /health did not answer", why)
	}
	go func() {
		w := httptest.NewRecorder()
		s.metrics(w, httptest.NewRequest("GET", "/metrics", nil))
		done <- w.Code
	}()
	select {
	case code := <-done:
		if code != http.StatusOK {
			t.Errorf("%s: /metrics %d", why, code)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: a scrape did not answer", why)
	}
	before := sub.n.Load()
	published := make(chan codec.ReasonCode, 1)
	go func() {
		code, _ := s.opts.Source.Broker.Publish(pub, &codec.Publish{QoS: 0, Topic: []byte("live/x"), Payload: []byte("v")})
		published <- code
	}()
	select {
	case code := <-published:
		if code != codec.Success || sub.n.Load() != before+1 {
			t.Errorf("%s: a publish answered 0x%02x and reached %d subscribers", why, byte(code), sub.n.Load()-before)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: another client's publish did not complete", why)
	}
}

// recorder is a connection that counts what it is delivered.
type recorder struct {
	sink
	n atomic.Int64
}

func (r *recorder) Deliver(*delivery.Message, delivery.Delivery) bool { r.n.Add(1); return true }

// Checklist D4.45 (RFC 0005 "The health endpoint"): no path holds a
// publish-path lock across disk I/O. Each write a client can make the session
// store wait on - a new kept session's record, a kept session's
// subscription, a message an away session is owed - is stalled in turn, and
// while it waits /health answers 200, a scrape answers and another client's
// publish is delivered.
func TestD4_45NoPublishPathLockIsHeldAcrossAStalledWrite(t *testing.T) {
	d := &stalledDisk{entered: make(chan string)}
	src := stalledSource(t, d)
	b := src.Broker
	s := &Server{opts: Options{Source: src}, clk: clock.Real, log: slog.New(slog.DiscardHandler),
		scraper: &scraper{src: src, interval: 0, now: time.Now}}
	live := &recorder{sink: sink{id: "live"}}
	b.Connect(live, &netloop.ConnectRequest{Version: 5, ClientID: live.id, CleanStart: true})
	b.Subscribe(live, []byte("live/#"), delivery.SubscribeOptions{QoS: 0})
	pub := &sink{id: "publisher"}
	b.Connect(pub, &netloop.ConnectRequest{Version: 5, ClientID: pub.id, CleanStart: true})
	away := &sink{id: "away"}
	b.Connect(away, &netloop.ConnectRequest{Version: 5, ClientID: away.id, CleanStart: true, SessionExpiry: 3600})
	b.Subscribe(away, []byte("owed/#"), delivery.SubscribeOptions{QoS: 1})
	b.Disconnected(away, 3600, true)

	kept := &sink{id: "kept"}
	steps := []struct {
		op  string
		run func()
	}{
		{"Put", func() {
			b.Connect(kept, &netloop.ConnectRequest{Version: 5, ClientID: kept.id, CleanStart: true, SessionExpiry: 3600})
		}},
		{"Subscribe", func() { b.Subscribe(kept, []byte("kept/#"), delivery.SubscribeOptions{QoS: 1}) }},
		{"Append", func() {
			b.Publish(pub, &codec.Publish{QoS: 1, PacketID: 1, Topic: []byte("owed/1"), Payload: []byte("v")})
		}},
	}
	for _, step := range steps {
		d.gate = make(chan struct{})
		d.armed.Store(true)
		finished := make(chan struct{})
		go func() { step.run(); close(finished) }()
		select {
		case op := <-d.entered:
			if op != step.op {
				t.Fatalf("the %s step stalled at %s", step.op, op)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("the %s step never reached the store", step.op)
		}
		d.armed.Store(false)
		answersWhileStalled(t, s, pub, live, "a stalled "+step.op)
		close(d.gate)
		<-finished
	}
}

// stalledScraper is a scraper's connection that has stopped reading: the
// answer's Write waits at gate.
type stalledScraper struct {
	header  http.Header
	entered chan struct{}
	gate    chan struct{}
}

func (w *stalledScraper) Header() http.Header { return w.header }
func (w *stalledScraper) WriteHeader(int)     {}
func (w *stalledScraper) Write(b []byte) (int, error) {
	close(w.entered)
	<-w.gate
	return len(b), nil
}

// Checklist D5.50 (RFC 0005 "What a metric is allowed to cost"): a scrape's
// numbers are copied under the broker's locks and formatted and written
// outside them. A scraper that stops reading its answer leaves /health
// answering 200, another scrape answered and publishes delivered.
func TestD5_50AScrapeHoldsNoBrokerLockWhileItsAnswerIsWritten(t *testing.T) {
	src := testSource(t, 10)
	s := &Server{opts: Options{Source: src}, clk: clock.Real, log: slog.New(slog.DiscardHandler),
		scraper: &scraper{src: src, interval: 0, now: time.Now}}
	live := &recorder{sink: sink{id: "live"}}
	src.Broker.Connect(live, &netloop.ConnectRequest{Version: 5, ClientID: live.id, CleanStart: true})
	src.Broker.Subscribe(live, []byte("live/#"), delivery.SubscribeOptions{QoS: 0})
	pub := &sink{id: "publisher"}
	src.Broker.Connect(pub, &netloop.ConnectRequest{Version: 5, ClientID: pub.id, CleanStart: true})

	w := &stalledScraper{header: http.Header{}, entered: make(chan struct{}), gate: make(chan struct{})}
	finished := make(chan struct{})
	go func() { s.metrics(w, httptest.NewRequest("GET", "/metrics", nil)); close(finished) }()
	select {
	case <-w.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the scrape never wrote its answer")
	}
	answersWhileStalled(t, s, pub, live, "a scraper not reading")
	close(w.gate)
	<-finished
}
