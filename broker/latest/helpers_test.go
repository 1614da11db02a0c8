package latest

import (
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker/acl"
	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/memory"
)

var epoch = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// testHost is the broker as an engine sees it, with clients by id.
type testHost struct {
	clk     *clock.Fake
	mu      sync.Mutex
	clients map[string]delivery.Client
	denied  map[string]bool // "<client id> <topic>": read and delete refused
	// regrant is what the engine registered to run after a re-read.
	regrant []func()
}

func (h *testHost) Clock() clock.Clock   { return h.clk }
func (h *testHost) Logger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
func (h *testHost) CheckTopic([]byte) (codec.ReasonCode, string) {
	return codec.Success, ""
}
func (h *testHost) Allows(id, t string, v acl.Verb) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.denied[id+" "+t]
}
func (h *testHost) OnGrantsChanged(f func()) { h.regrant = append(h.regrant, f) }
func (h *testHost) WithRoom(_, _ string, write func() error) error {
	return write()
}
func (h *testHost) Client(id string) delivery.Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.clients[id]; ok {
		return c
	}
	return nil
}

// got is one delivery as the client received it.
type got struct {
	topic, payload string
	offset         uint64
	retain         bool
	qos            uint8
	ids            []uint32
}

// testClient is a connection: a window of Receive Maximum, a Maximum Packet
// Size (0 none), and the deliveries it took.
type testClient struct {
	id      string
	version byte
	mu      sync.Mutex
	window  int // Receive Maximum; 0 takes nothing at QoS > 0
	maxPkt  int
	onWire  int
	got     []got
	kicked  codec.ReasonCode
}

func (c *testClient) ClientID() string { return c.id }
func (c *testClient) Version() byte    { return c.version }
func (c *testClient) Kick(r codec.ReasonCode) {
	c.mu.Lock()
	c.kicked = r
	c.mu.Unlock()
}
func (c *testClient) CanTake(m *delivery.Message, d delivery.Delivery) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d.QoS > 0 && c.onWire >= c.window {
		return false
	}
	return c.fits(m, d)
}

// Fits counts topic, payload and, at QoS 1 or 2, the packet identifier's 2
// bytes, against maxPkt.
func (c *testClient) Fits(m *delivery.Message, d delivery.Delivery) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fits(m, d)
}

func (c *testClient) fits(m *delivery.Message, d delivery.Delivery) bool {
	size := len(m.Topic) + len(m.Payload)
	if d.QoS > 0 {
		size += 2
	}
	return c.maxPkt == 0 || size <= c.maxPkt
}
func (c *testClient) Deliver(m *delivery.Message, d delivery.Delivery) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d.QoS > 0 {
		c.onWire++
	}
	c.got = append(c.got, got{topic: string(m.Topic), payload: string(m.Payload), offset: d.Ref.N,
		retain: d.Retain, qos: d.QoS, ids: d.SubscriptionIDs})
	return true
}

// take returns what arrived since the last take.
func (c *testClient) take() []got {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.got
	c.got = nil
	return g
}

func (c *testClient) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.got)
}

func (c *testClient) setWindow(n int) {
	c.mu.Lock()
	c.window = n
	c.mu.Unlock()
}

func (c *testClient) kick() codec.ReasonCode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kicked
}

// testSession is a session lent for one call.
type testSession struct {
	id        string
	kept      bool
	restoring bool
}

func (s testSession) ClientID() string { return s.id }
func (s testSession) Kept() bool       { return s.kept }
func (s testSession) Restoring() bool  { return s.restoring }

// testBuilder labels nothing: topic, payload, RETAIN as published when asked.
type testBuilder struct{ p codec.Publish }

func (b *testBuilder) Build(r *store.Record, _, qos uint8, rap bool, _ string, _ time.Time) *codec.Publish {
	b.p = codec.Publish{QoS: qos, Retain: rap && r.Retain, Topic: []byte(r.Topic), Payload: r.Payload}
	if b.p.Payload == nil {
		b.p.Payload = []byte{}
	}
	return &b.p
}

func testRecord(p *codec.Publish, publisher string, now time.Time) store.Record {
	return store.Record{Topic: string(p.Topic), Payload: append([]byte(nil), p.Payload...), Time: now,
		ClientID: publisher, QoS: p.QoS, Retain: p.Retain, MessageID: "id-" + strconv.Itoa(len(p.Payload))}
}

type rig struct {
	t    *testing.T
	clk  *clock.Fake
	host *testHost
	e    *Engine
	st   store.Latest
}

func newRig(t *testing.T, mod func(*Config)) *rig {
	t.Helper()
	p, err := memory.Open(store.MemoryOptions{Name: "mem"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	st, err := p.Latest("state", store.ChannelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(epoch)
	h := &testHost{clk: clk, clients: map[string]delivery.Client{}, denied: map[string]bool{}}
	cfg := Config{Name: "state", Filters: []string{"state/#"}, Store: st, SessionQueueBytes: 1 << 20,
		Record: testRecord, NewBuilder: func() Builder { return &testBuilder{} }}
	if mod != nil {
		mod(&cfg)
	}
	e, err := New(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return &rig{t: t, clk: clk, host: h, e: e, st: st}
}

// connect makes a connected client the host knows, with a window of 100.
func (g *rig) connect(id string) *testClient {
	c := &testClient{id: id, version: 5, window: 100}
	g.host.mu.Lock()
	g.host.clients[id] = c
	g.host.mu.Unlock()
	return c
}

func (g *rig) publish(topic, payload string, retain bool) {
	g.t.Helper()
	code, why := g.e.Publish("pub", &codec.Publish{QoS: 1, Retain: retain, Topic: []byte(topic), Payload: []byte(payload)})
	if code != codec.Success {
		g.t.Fatalf("publish %s=%q: %v %s", topic, payload, code, why)
	}
}

func (g *rig) subscribe(s testSession, filter string, opts delivery.SubscribeOptions, isNew bool, props ...codec.UserProperty) {
	g.t.Helper()
	f := filterOf(filter, opts, isNew, props)
	if code, why := g.e.Subscribe(s, f); code != codec.Success {
		g.t.Fatalf("subscribe %s: %v %s", filter, code, why)
	}
}

// waitCount waits for c to have taken n deliveries, advancing the fake
// clock by the routine's poll whenever it waits for room.
func waitCount(t *testing.T, c *testClient, n int) []got {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.count() < n {
		if time.Now().After(deadline) {
			t.Fatalf("waited for %d deliveries, have %d: %+v", n, c.count(), c.take())
		}
		time.Sleep(time.Millisecond)
	}
	return c.take()
}

// settled waits until the reader of id has no routine running: everything it
// could send is sent (or waits for room).
func (g *rig) settled(id string) {
	g.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		g.e.mu.Lock()
		r := g.e.readers[id]
		g.e.mu.Unlock()
		idle := true
		if r != nil {
			r.mu.Lock()
			idle = r.runEra == 0
			r.mu.Unlock()
		}
		if idle {
			return
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("reader %s never settled", id)
		}
		time.Sleep(time.Millisecond)
	}
}

func (g *rig) ack(s testSession, c *testClient, offsets ...uint64) {
	for _, o := range offsets {
		c.mu.Lock()
		c.onWire--
		c.mu.Unlock()
		g.e.Ack(s, delivery.Ref{Kind: delivery.KindLatest, N: o, Name: "state"}, engine.AckFinished, 0)
	}
}
