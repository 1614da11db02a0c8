package appendch

import (
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker/acl"
	"github.com/saguin-edge/saguin/broker/channel"
	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/memory"
)

type host struct{ clk clock.Clock }

func (h host) Clock() clock.Clock                             { return h.clk }
func (h host) Logger() *slog.Logger                           { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
func (h host) Client(string) delivery.Client                  { return nil }
func (h host) CheckTopic([]byte) (codec.ReasonCode, string)   { return codec.Success, "" }
func (h host) Allows(string, string, acl.Verb) bool           { return true }
func (h host) OnGrantsChanged(func())                         {}
func (h host) WithRoom(_, _ string, write func() error) error { return write() }

type session struct {
	id        string
	kept      bool
	restoring bool
}

func (s session) ClientID() string { return s.id }
func (s session) Kept() bool       { return s.kept }
func (s session) Restoring() bool  { return s.restoring }

// client is a connection with a Receive Maximum window: it takes what
// fits and hands every delivery to the test.
type client struct {
	id     string
	window int
	mu     sync.Mutex
	out    int // QoS 1 deliveries not yet acknowledged
	got    chan delivered
	kicked chan codec.ReasonCode
}

type delivered struct {
	m *delivery.Message
	d delivery.Delivery
}

func newClient(id string, window int) *client {
	return &client{id: id, window: window, got: make(chan delivered, 1024), kicked: make(chan codec.ReasonCode, 1)}
}

func (c *client) ClientID() string { return c.id }
func (c *client) Version() byte    { return codec.Version5 }
func (c *client) Deliver(m *delivery.Message, d delivery.Delivery) bool {
	m.Retain() // kept for the test past the call, as a connection keeps what it queues
	c.mu.Lock()
	if d.QoS > 0 {
		c.out++
	}
	c.mu.Unlock()
	c.got <- delivered{m, d}
	return true
}
func (c *client) CanTake(m *delivery.Message, d delivery.Delivery) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return d.QoS == 0 || c.out < c.window
}
func (c *client) Kick(r codec.ReasonCode)                        { c.kicked <- r }
func (c *client) Fits(*delivery.Message, delivery.Delivery) bool { return true }

func (c *client) next(t *testing.T) delivered {
	t.Helper()
	select {
	case x := <-c.got:
		return x
	case <-time.After(5 * time.Second):
		t.Fatal("no delivery")
	}
	return delivered{}
}

func (c *client) none(t *testing.T) {
	t.Helper()
	select {
	case x := <-c.got:
		t.Fatalf("unexpected delivery %q", x.m.Payload)
	case <-time.After(50 * time.Millisecond):
	}
}

func (c *client) ack(e *Engine, s engine.Session, x delivered) {
	c.mu.Lock()
	c.out--
	c.mu.Unlock()
	e.Ack(s, x.d.Ref, engine.AckFinished, 0)
	x.m.Release() // finished: the connection lets go of it, as netloop does
}

func newEngine(t *testing.T, p store.Provider, clk *clock.Fake, tail bool) *Engine {
	t.Helper()
	log, err := p.Append("events", store.ChannelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := New(Options{Name: "events", Filters: []string{"ev/#"}, Log: log, Host: host{clk}, Tail: tail, AckCommitInterval: 100 * time.Millisecond})
	if err := e.Restore(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func memProvider(t *testing.T, dir string) store.Provider {
	t.Helper()
	p, err := memory.Open(store.MemoryOptions{Name: "m", SnapshotDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func publish(t *testing.T, e *Engine, publisher, payload string) {
	t.Helper()
	if code, why := e.Publish(publisher, &codec.Publish{QoS: 1, Topic: []byte("ev/a"), Payload: []byte(payload)}); code != codec.Success {
		t.Fatalf("Publish: 0x%02x %s", byte(code), why)
	}
}

func plainSub(qos byte) engine.Filter {
	return engine.Filter{Filter: "ev/#", Inner: "ev/#", New: true, Options: delivery.SubscribeOptions{QoS: qos}}
}

// In flight is bounded by the client's window: the record after it waits at
// its position, never dropped, and goes once an acknowledgement makes room,
// in offset order (A2.11, A2.16).
func TestDeliveriesWaitForTheWindowInOffsetOrder(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	e := newEngine(t, memProvider(t, ""), clk, false)
	for i := 1; i <= 5; i++ {
		publish(t, e, "pub", strconv.Itoa(i))
	}
	s := session{id: "c"}
	cl := newClient("c", 2)
	e.Resume(s, cl, nil)
	e.Subscribe(s, plainSub(1))
	a, b := cl.next(t), cl.next(t)
	if string(a.m.Payload) != "1" || string(b.m.Payload) != "2" {
		t.Fatalf("got %q %q", a.m.Payload, b.m.Payload)
	}
	cl.none(t) // the window is full
	cl.ack(e, s, a)
	if x := cl.next(t); string(x.m.Payload) != "3" || x.d.Ref.N != 3 {
		t.Fatalf("after one ack: %q (ref %+v)", x.m.Payload, x.d.Ref)
	}
}

// A durable consumer's position is the lowest unacknowledged offset, taken
// for writing within ack_commit_interval (here on the fake clock), and a new
// engine on the same store resumes there (A3.6, A3.10, A4.4).
func TestPositionStoredWithinAckCommitInterval(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	p := memProvider(t, "")
	e := newEngine(t, p, clk, false)
	for i := 1; i <= 4; i++ {
		publish(t, e, "pub", strconv.Itoa(i))
	}
	s := session{id: "d", kept: true}
	cl := newClient("d", 10)
	e.Resume(s, cl, nil)
	e.Subscribe(s, plainSub(1))
	for i := 0; i < 4; i++ {
		x := cl.next(t)
		if i < 2 {
			cl.ack(e, s, x)
		}
	}
	log, _ := p.Append("events", store.ChannelOptions{})
	clk.WaitArmed(1)
	clk.Advance(100 * time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for {
		pos, ok, err := log.Position(store.ReaderMQTT("d"))
		if err != nil {
			t.Fatal(err)
		}
		if ok && pos.Offset == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stored position %+v %v, want 3 (two of four acknowledged)", pos, ok)
		}
		time.Sleep(time.Millisecond)
	}
	e.Close()
	e2 := newEngine(t, p, clk, false)
	cl2 := newClient("d", 10)
	e2.Resume(s, cl2, nil)
	e2.Subscribe(session{id: "d", kept: true, restoring: true}, plainSub(1))
	if x := cl2.next(t); string(x.m.Payload) != "3" {
		t.Fatalf("resumed at %q, want 3", x.m.Payload)
	}
}

// An acknowledgement from a closed era changes nothing (A6.29): a resume
// starts a new era and serves again from the position.
func TestAckFromAClosedEraIsIgnored(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	e := newEngine(t, memProvider(t, ""), clk, false)
	publish(t, e, "pub", "1")
	publish(t, e, "pub", "2")
	s := session{id: "c", kept: true}
	cl := newClient("c", 10)
	e.Resume(s, cl, nil)
	e.Subscribe(s, plainSub(1))
	first := cl.next(t)
	cl.next(t)
	e.Detach(s)
	cl2 := newClient("c", 10)
	e.Resume(s, cl2, nil)
	e.Ack(s, first.d.Ref, engine.AckFinished, 0) // the old connection's era
	if x := cl2.next(t); string(x.m.Payload) != "1" {
		t.Fatalf("after resume: %q, want 1 again", x.m.Payload)
	}
}

// A record larger than the consumer can take disconnects it with 0x95 and
// is not stepped over (A7.1).
type tinyClient struct{ *client }

func (c tinyClient) CanTake(m *delivery.Message, d delivery.Delivery) bool {
	return c.Fits(m, d)
}
func (c tinyClient) Fits(m *delivery.Message, _ delivery.Delivery) bool { return len(m.Payload) < 10 }

func TestTooLargeKicks0x95AndIsNotSkipped(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	e := newEngine(t, memProvider(t, ""), clk, false)
	publish(t, e, "pub", "small")
	publish(t, e, "pub", "far too large")
	publish(t, e, "pub", "after")
	s := session{id: "c"}
	cl := newClient("c", 10)
	e.Resume(s, tinyClient{cl}, nil)
	e.Subscribe(s, plainSub(0))
	if x := cl.next(t); string(x.m.Payload) != "small" {
		t.Fatalf("%q", x.m.Payload)
	}
	select {
	case r := <-cl.kicked:
		if r != codec.PacketTooLarge {
			t.Fatalf("kicked 0x%02x", byte(r))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not disconnected")
	}
	cl.none(t)
}

// Shared groups over append take turns and replay nothing (A13.1, A13.2).
func TestSharedGroupTakesTurnsLiveOnly(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	e := newEngine(t, memProvider(t, ""), clk, false)
	publish(t, e, "pub", "before")
	f := engine.Filter{Filter: "$share/g/ev/#", Inner: "ev/#", Share: "g", New: true, Options: delivery.SubscribeOptions{QoS: 1}}
	a, b := newClient("a", 10), newClient("b", 10)
	e.Resume(session{id: "a"}, a, nil)
	e.Resume(session{id: "b"}, b, nil)
	e.Subscribe(session{id: "a"}, f)
	e.Subscribe(session{id: "b"}, f)
	for i := 0; i < 4; i++ {
		publish(t, e, "pub", strconv.Itoa(i))
	}
	for _, want := range []string{"0", "2"} {
		if x := a.next(t); string(x.m.Payload) != want {
			t.Fatalf("a got %q, want %q", x.m.Payload, want)
		}
	}
	for _, want := range []string{"1", "3"} {
		if x := b.next(t); string(x.m.Payload) != want {
			t.Fatalf("b got %q, want %q", x.m.Payload, want)
		}
	}
}

func BenchmarkPublish(b *testing.B) {
	p, _ := memory.Open(store.MemoryOptions{Name: "m"})
	log, _ := p.Append("events", store.ChannelOptions{})
	e := New(Options{Name: "events", Filters: []string{"ev/#"}, Log: log, Host: host{clock.Real}})
	pub := &codec.Publish{QoS: 1, Topic: []byte("ev/device-1/reading"), Payload: make([]byte, 128)}
	b.ReportAllocs()
	for b.Loop() {
		e.Publish("pub", pub)
	}
}

// A seek discards what is outstanding and ends the era: a PUBACK for a
// delivery made before it does not move the new position (A6.29, A6.33).
func TestSeekEndsTheEraPreSeekAcksIgnored(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	p := memProvider(t, "")
	e := newEngine(t, p, clk, false)
	for i := 1; i <= 3; i++ {
		publish(t, e, "pub", strconv.Itoa(i))
	}
	s := session{id: "c", kept: true}
	cl := newClient("c", 10)
	e.Resume(s, cl, nil)
	e.Subscribe(s, plainSub(1))
	var before []delivered
	for i := 0; i < 3; i++ {
		before = append(before, cl.next(t))
	}
	if a := seek(e, "c", "2"); a.Word != "" || a.Offset != 2 {
		t.Fatalf("seek 2: %+v", a)
	}
	for _, x := range before {
		cl.ack(e, s, x) // all from the closed era
	}
	log, _ := p.Append("events", store.ChannelOptions{})
	if pos, ok, _ := log.Position(store.ReaderMQTT("c")); !ok || pos.Offset != 2 {
		t.Fatalf("stored %+v, want 2 (stored before the answer)", pos)
	}
	if x := cl.next(t); string(x.m.Payload) != "2" || x.d.Ref.Attempt == before[0].d.Ref.Attempt {
		t.Fatalf("after the seek: %q in era %d", x.m.Payload, x.d.Ref.Attempt)
	}
	if a := seek(e, "c", "9"); a.Word != "beyond-end" || a.Next != 4 {
		t.Fatalf("seek 9: %+v", a)
	}
	if a := seek(e, "c", "yesterday"); a.Word != "malformed" {
		t.Fatalf("malformed: %+v", a)
	}
}

func seek(e *Engine, id, payload string) (a channel.SeekAnswer) {
	e.Seek(id, []byte(payload), func(x channel.SeekAnswer) { a = x })
	return a
}

// BenchmarkReplay is a durable consumer with a window of 100 reading records
// already held (the replay scenario without the wire): an op is one record
// delivered and acknowledged, the acknowledgement making room for the next.
func BenchmarkReplay(b *testing.B) {
	p, _ := memory.Open(store.MemoryOptions{Name: "m"})
	log, _ := p.Append("events", store.ChannelOptions{})
	e := New(Options{Name: "events", Filters: []string{"ev/#"}, Log: log, Host: host{clock.Real}})
	if err := e.Restore(); err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	pub := &codec.Publish{QoS: 1, Topic: []byte("ev/device-1/reading"), Payload: make([]byte, 128)}
	for range b.N {
		e.Publish("pub", pub)
	}
	s := session{id: "c", kept: true}
	cl := newClient("c", 100)
	b.ReportAllocs()
	b.ResetTimer()
	e.Resume(s, cl, nil)
	e.Subscribe(s, plainSub(1))
	for range b.N {
		cl.ack(e, s, <-cl.got)
	}
}

// BenchmarkFanout is one append channel read live by 100 consumers with a
// window of 1,000 each, acknowledging what they receive: an op is one record
// published and delivered to every consumer.
func BenchmarkFanout(b *testing.B) {
	const consumers = 100
	p, _ := memory.Open(store.MemoryOptions{Name: "m"})
	log, _ := p.Append("events", store.ChannelOptions{})
	e := New(Options{Name: "events", Filters: []string{"ev/#"}, Log: log, Host: host{clock.Real}})
	if err := e.Restore(); err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	var wg sync.WaitGroup
	for i := range consumers {
		var s engine.Session = session{id: "c" + strconv.Itoa(i)} // boxed once, not per acknowledgement
		cl := newClient(s.ClientID(), 1000)
		e.Resume(s, cl, nil)
		e.Subscribe(s, plainSub(1))
		wg.Go(func() {
			for range b.N {
				cl.ack(e, s, <-cl.got)
			}
		})
	}
	pub := &codec.Publish{QoS: 1, Topic: []byte("ev/device-1/reading"), Payload: make([]byte, 128)}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		e.Publish("pub", pub)
	}
	wg.Wait()
}
