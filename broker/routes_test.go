package broker

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/memory"
)

// channel is a stand-in channel engine: an append channel's store for its
// holds, and a record of what the broker handed it, so the broker's side of
// the seam - routing, holds, restore - is tested before any real channel
// engine exists.
type channel struct {
	name    string
	filters []string
	log     store.AppendLog

	mu        sync.Mutex
	published []string // topics of what Publish took
	released  []string // payloads of what Released delivered
	subs      []string // filters Subscribe was handed
	acks      []ack
	carried   []delivery.Ref // Refs Resume was handed back
	restored  int
	onDisk    bool // what Waits answers
	// loseReceipts: Ack answers that a PUBREC's receipt was not stored.
	loseReceipts bool
}

type ack struct {
	client   string
	ref      delivery.Ref
	stage    engine.AckStage
	packetID uint16
}

func newChannel(t *testing.T, p store.Provider, name string, filters ...string) *channel {
	t.Helper()
	log, err := p.Append(name, store.ChannelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &channel{name: name, filters: filters, log: log}
}

func (c *channel) Kind() delivery.Kind  { return delivery.KindAppend }
func (c *channel) Name() string         { return c.name }
func (c *channel) Filters() []string    { return c.filters }
func (c *channel) Holder() store.Holder { return c.log }
func (c *channel) Waits(string, *codec.Publish) bool {
	return c.onDisk
}

func (c *channel) Publish(_ string, p *codec.Publish) (codec.ReasonCode, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.published = append(c.published, string(p.Topic))
	return codec.Success, ""
}

func (c *channel) Release(h store.Held) (engine.Released, codec.ReasonCode, string, error) {
	rec, err := c.log.ReleaseHeld(h.ClientID, h.PacketID)
	return engine.Released{Publisher: h.ClientID, Record: rec, Live: true}, codec.Success, "", err
}

func (c *channel) Released(r engine.Released) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.released = append(c.released, string(r.Record.Payload))
}

func (c *channel) Subscribe(_ engine.Session, f engine.Filter) (codec.ReasonCode, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.subs = append(c.subs, f.Filter)
	return codec.ReasonCode(f.Options.QoS), ""
}

func (c *channel) Unsubscribe(engine.Session, string) {}
func (c *channel) Resume(_ engine.Session, _ delivery.Client, u []delivery.Unfinished) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, x := range u {
		c.carried = append(c.carried, x.Delivery.Ref)
	}
}

func (c *channel) Detach(engine.Session) {}
func (c *channel) End(engine.Session)    {}
func (c *channel) Ack(s engine.Session, r delivery.Ref, stage engine.AckStage, packetID uint16) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.acks = append(c.acks, ack{s.ClientID(), r, stage, packetID})
	return !c.loseReceipts
}

func (c *channel) Close() error   { return nil }
func (c *channel) Restore() error { c.mu.Lock(); c.restored++; c.mu.Unlock(); return nil }
func (c *channel) took() (published, released, subs []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.published), slices.Clone(c.released), slices.Clone(c.subs)
}

// channelBroker is a broker on st with the channels plugged, then restored.
func channelBroker(t *testing.T, st stores, channels ...*channel) *Broker {
	t.Helper()
	b, err := New(Options{Sessions: st.sessions, Retained: st.retained, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	for _, c := range channels {
		if err := b.Plug(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Restore(); err != nil {
		t.Fatal(err)
	}
	return b
}

func openMemory(t *testing.T) store.Provider {
	t.Helper()
	p, err := memory.Open(store.MemoryOptions{Name: "channels"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAPublishToAChannelsTopicGoesToItsEngineAndNotToBroadcast(t *testing.T) {
	ch := newChannel(t, openMemory(t), "orders", "orders/#")
	b := channelBroker(t, newStores(t, 0), ch)
	sub := &ackClient{id: "sub"}
	connectAs(t, b, sub, true, 0, nil)
	if code, _ := b.Subscribe(sub, []byte("#"), delivery.SubscribeOptions{QoS: 1}); code != 1 {
		t.Fatalf("SUBACK 0x%02x", byte(code))
	}
	if code := publish(b, "pub", "orders/1", "to the channel", 1, false); code != codec.Success {
		t.Fatalf("PUBACK 0x%02x", byte(code))
	}
	publish(b, "pub", "fleet/1", "to broadcast", 1, false)
	published, _, subs := ch.took()
	if !slices.Equal(published, []string{"orders/1"}) {
		t.Fatalf("the channel took %v, want [orders/1] alone", published)
	}
	if got := sub.payloads(); !slices.Equal(got, []string{"to broadcast"}) {
		t.Fatalf("broadcast delivered %v, want the unclaimed topic's publish alone", got)
	}
	if !slices.Equal(subs, []string{"#"}) {
		t.Fatalf("the channel was handed the subscriptions %v, want the # that reaches it", subs)
	}
}

func TestTheMostExactChannelFilterHoldsATopic(t *testing.T) {
	p := openMemory(t)
	wide := newChannel(t, p, "orders", "orders/#")
	paid := newChannel(t, p, "paid", "orders/+/paid")
	b := channelBroker(t, newStores(t, 0), wide, paid)
	publish(b, "pub", "orders/7/paid", "x", 1, false)
	publish(b, "pub", "orders/7/new", "y", 0, false)
	w, _, _ := wide.took()
	n, _, _ := paid.took()
	if !slices.Equal(n, []string{"orders/7/paid"}) || !slices.Equal(w, []string{"orders/7/new"}) {
		t.Fatalf("orders/+/paid took %v and orders/# took %v; want the paid topic in the more exact filter", n, w)
	}
}

func TestPluggingTwoChannelsOnOneFilterOrAfterRestoreIsRefused(t *testing.T) {
	p := openMemory(t)
	first := newChannel(t, p, "a", "x/#")
	second := newChannel(t, p, "b", "y/#", "x/#") // y/# would be free: the whole Plug is refused
	late := newChannel(t, p, "c", "z/#")
	st := newStores(t, 0)
	b, err := New(Options{Sessions: st.sessions, Retained: st.retained, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	if err := b.Plug(first); err != nil {
		t.Fatal(err)
	}
	if err := b.Plug(second); !errors.Is(err, ErrPlugged) {
		t.Fatalf("a second channel on x/#: %v, want ErrPlugged", err)
	}
	if err := b.Restore(); err != nil {
		t.Fatal(err)
	}
	if err := b.Plug(late); !errors.Is(err, ErrPlugged) {
		t.Fatalf("a channel plugged after Restore: %v, want ErrPlugged", err)
	}
	for _, tp := range []string{"x/1", "y/1", "z/1"} {
		publish(b, "pub", tp, "m", 1, false)
	}
	f, _, _ := first.took()
	s, _, _ := second.took()
	l, _, _ := late.took()
	if !slices.Equal(f, []string{"x/1"}) || len(s) != 0 || len(l) != 0 {
		t.Fatalf("took: a %v, b %v, c %v; want x/1 in a and nothing in the refused ones", f, s, l)
	}
	if first.restored != 1 {
		t.Fatalf("the plugged channel restored %d times, want 1", first.restored)
	}
}

func TestAQoS2PublishToAChannelIsHeldInTheChannelsStoreAndReleasedThere(t *testing.T) {
	ch := newChannel(t, openMemory(t), "orders", "orders/#")
	st := newStores(t, 0)
	b := channelBroker(t, st, ch)
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, nil)
	code, _ := b.Publish(c, &codec.Publish{QoS: 2, PacketID: 7, Topic: []byte("orders/1"), Payload: []byte("once")})
	if code != codec.Success {
		t.Fatalf("PUBREC 0x%02x", byte(code))
	}
	held, err := ch.log.Held()
	if err != nil || len(held) != 1 || held[0].PacketID != 7 {
		t.Fatalf("the channel's store holds %v (%v), want the exchange 7", held, err)
	}
	if inLog, _ := st.sessions.Log().Held(); len(inLog) != 0 {
		t.Fatalf("the broadcast log holds %d exchanges, want none", len(inLog))
	}
	if !b.Holds(c, 7) {
		t.Fatal("the broker does not know the exchange is held")
	}
	if code, why := b.Release(c, 7); code != codec.Success {
		t.Fatalf("PUBCOMP 0x%02x %s", byte(code), why)
	}
	if held, _ := ch.log.Held(); len(held) != 0 {
		t.Fatalf("still held in the channel's store after the release: %v", held)
	}
	if next := ch.log.Next(); next != 2 {
		t.Fatalf("the channel's next offset is %d, want 2: the release writes the record at 1", next)
	}
	if _, released, _ := ch.took(); !slices.Equal(released, []string{"once"}) {
		t.Fatalf("the channel delivered %v at the release, want [once]", released)
	}
	if published, _, _ := ch.took(); len(published) != 0 {
		t.Fatalf("a held publish went through Publish too: %v", published)
	}
	if code, _ := b.Release(c, 7); code != codec.PacketIdentifierNotFound {
		t.Fatalf("a second PUBREL answered 0x%02x, want 0x92", byte(code))
	}
}

func TestAChannelsHeldExchangeComesBackWithItsSessionAtAStart(t *testing.T) {
	p := openMemory(t)
	st := newStores(t, 0)
	b := channelBroker(t, st, newChannel(t, p, "orders", "orders/#"))
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, nil)
	if code, _ := b.Publish(c, &codec.Publish{QoS: 2, PacketID: 3, Topic: []byte("orders/9"), Payload: []byte("kept")}); code != codec.Success {
		t.Fatalf("PUBREC 0x%02x", byte(code))
	}
	gone := &ackClient{id: "gone"} // its session ends with it: its hold does not come back
	connectAs(t, b, gone, true, 0, nil)
	if code, _ := b.Publish(gone, &codec.Publish{QoS: 2, PacketID: 4, Topic: []byte("orders/9"), Payload: []byte("dropped")}); code != codec.Success {
		t.Fatalf("PUBREC 0x%02x", byte(code))
	}
	b.Stop()
	b.Close()

	// The same channel store, a new engine on it: a restart.
	again := newChannel(t, p, "orders", "orders/#")
	b = channelBroker(t, st, again)
	back := &ackClient{id: "dev"}
	if present, _, _ := connectAs(t, b, back, false, 60, nil); !present {
		t.Fatal("session not present after the restart")
	}
	if !b.Holds(back, 3) {
		t.Fatal("the channel's held exchange did not come back with its session")
	}
	if code, why := b.Release(back, 3); code != codec.Success {
		t.Fatalf("PUBCOMP 0x%02x %s", byte(code), why)
	}
	if _, released, _ := again.took(); !slices.Equal(released, []string{"kept"}) {
		t.Fatalf("released into the channel: %v, want [kept]", released)
	}
	if held, _ := again.log.Held(); len(held) != 0 {
		t.Fatalf("the channel's store still holds %v: the other session's hold is dropped at the start, this one released", held)
	}
}

func TestAnEnginesHostFindsTheConnectionThatOwnsASessionNow(t *testing.T) {
	b := newTestBroker(t, Options{})
	h := b.Host("orders")
	c := &ackClient{id: "w"}
	if h.Client("w") != nil {
		t.Fatal("a client id with no session has a connection")
	}
	connectAs(t, b, c, true, 60, nil)
	if got := h.Client("w"); got != delivery.Client(c) {
		t.Fatalf("host gives %v, want the connected client", got)
	}
	b.Disconnected(c, 60, false)
	if h.Client("w") != nil {
		t.Fatal("an away session still has a connection")
	}
	if h.Clock() == nil || h.Logger() == nil {
		t.Fatal("the host gives no clock or no logger")
	}
	if code, _ := h.CheckTopic([]byte("$SYS/x")); code != codec.NotAuthorized {
		t.Fatalf("the host's topic check answered 0x%02x for $SYS, want the broker's 0x87", byte(code))
	}
}

func TestAnAcknowledgementFindsTheChannelEngineItsRefNames(t *testing.T) {
	ch := newChannel(t, openMemory(t), "orders", "orders/#")
	b := channelBroker(t, newStores(t, 0), ch)
	c := &ackClient{id: "w"}
	connectAs(t, b, c, true, 60, nil)
	mine := delivery.Ref{Kind: delivery.KindAppend, Name: "orders", N: 5, Attempt: 1}
	if !b.Received(c, mine, 11) {
		t.Fatal("the owning connection is told not to send the PUBREL")
	}
	b.Acked(c, mine)
	b.Acked(c, delivery.Ref{Kind: delivery.KindAppend, Name: "other", N: 5}) // no such channel
	b.Acked(c, delivery.Ref{Kind: delivery.KindQueue, Name: "orders", N: 5}) // not the kind it is
	newer := &ackClient{id: "w"}
	connectAs(t, b, newer, false, 60, nil)
	b.Acked(c, mine) // from the connection taken over: changes nothing (invariant 17)
	ch.mu.Lock()
	got := slices.Clone(ch.acks)
	ch.mu.Unlock()
	want := []ack{{"w", mine, engine.AckReceived, 11}, {"w", mine, engine.AckFinished, 0}}
	if !slices.Equal(got, want) {
		t.Fatalf("the channel was handed %v, want %v", got, want)
	}
}

func TestAReceiptTheChannelCouldNotStoreSendsNoPUBREL(t *testing.T) {
	ch := newChannel(t, openMemory(t), "orders", "orders/#")
	ch.loseReceipts = true
	b := channelBroker(t, newStores(t, 0), ch)
	c := &ackClient{id: "w"}
	connectAs(t, b, c, true, 60, nil)
	if b.Received(c, delivery.Ref{Kind: delivery.KindAppend, Name: "orders", N: 5, Attempt: 1}, 7) {
		t.Fatal("a PUBREC the channel could not store is answered with its PUBREL")
	}
}

func TestWhatAConnectionLeftUnfinishedGoesBackToTheEngineThatMadeIt(t *testing.T) {
	ch := newChannel(t, openMemory(t), "orders", "orders/#")
	b := channelBroker(t, newStores(t, 0), ch)
	c := &ackClient{id: "w"}
	connectAs(t, b, c, true, 60, nil)
	m := delivery.NewMessage(&codec.Publish{Topic: []byte("orders/1"), Payload: []byte("job")}, time.Now)
	mine := delivery.Ref{Kind: delivery.KindAppend, Name: "orders", N: 3}
	b.Unfinished(c, []delivery.Unfinished{{Msg: m, Delivery: delivery.Delivery{QoS: 1, PacketID: 4, Ref: mine}}})
	b.Disconnected(c, 60, false)
	back := &ackClient{id: "w"}
	connectAs(t, b, back, false, 60, nil)
	ch.mu.Lock()
	carried := slices.Clone(ch.carried)
	ch.mu.Unlock()
	if !slices.Equal(carried, []delivery.Ref{mine}) {
		t.Fatalf("the channel was handed back %v, want its own delivery", carried)
	}
	if got := back.payloads(); len(got) != 0 {
		t.Fatalf("the broker sent a channel's delivery itself: %v", got)
	}
}

// queueKind is a channel fake of another kind, for a Ref whose Name is
// another engine's.
type queueKind struct{ *channel }

func (queueKind) Kind() delivery.Kind { return delivery.KindQueue }

func TestCarriedByHandsEachEngineOnlyItsOwnDeliveries(t *testing.T) {
	p := openMemory(t)
	orders, jobs := newChannel(t, p, "orders", "orders/#"), newChannel(t, p, "jobs", "jobs/#")
	ordersQueue := queueKind{newChannel(t, p, "orders-q", "oq/#")}
	ordersQueue.name = "orders" // same Name as orders, another Kind
	b := channelBroker(t, newStores(t, 0), orders, jobs)
	ref := func(k delivery.Kind, name string, n uint64) delivery.Unfinished {
		return delivery.Unfinished{Delivery: delivery.Delivery{QoS: 1, Ref: delivery.Ref{Kind: k, Name: name, N: n}}}
	}
	u := []delivery.Unfinished{
		ref(delivery.KindBroadcast, "", 1),
		ref(delivery.KindAppend, "orders", 2),
		ref(delivery.KindBroadcast, "$share/g/a/#", 3), // a shared group's: broadcast's
		ref(delivery.KindAppend, "jobs", 4),
		ref(delivery.KindAppend, "orders", 5),
	}
	ns := func(u []delivery.Unfinished) (out []uint64) {
		for _, x := range u {
			out = append(out, x.Delivery.Ref.N)
		}
		return out
	}
	for _, c := range []struct {
		name string
		e    engine.Engine
		want []uint64
	}{
		{"broadcast", b.routes.broadcast, []uint64{1, 3}},
		{"orders", orders, []uint64{2, 5}},
		{"jobs", jobs, []uint64{4}},
		{"a queue named orders", ordersQueue, nil},
	} {
		if got := ns(carriedBy(c.e, u)); !slices.Equal(got, c.want) {
			t.Errorf("%s is handed %v, want %v", c.name, got, c.want)
		}
	}
	if got := ns(carriedBy(b.routes.broadcast, u[:1])); !slices.Equal(got, []uint64{1}) {
		t.Errorf("broadcast alone is handed %v, want [1]", got)
	}
}

func TestAResumeHandsBroadcastAndEachChannelTheirOwnUnfinished(t *testing.T) {
	p := openMemory(t)
	orders, jobs := newChannel(t, p, "orders", "orders/#"), newChannel(t, p, "jobs", "jobs/#")
	b := channelBroker(t, newStores(t, 0), orders, jobs)
	c := &ackClient{id: "w"}
	connectAs(t, b, c, true, 60, nil)
	msg := func(topic, payload string) *delivery.Message {
		return delivery.NewMessage(&codec.Publish{Topic: []byte(topic), Payload: []byte(payload)}, time.Now)
	}
	o := delivery.Ref{Kind: delivery.KindAppend, Name: "orders", N: 3}
	j := delivery.Ref{Kind: delivery.KindAppend, Name: "jobs", N: 8}
	b.Unfinished(c, []delivery.Unfinished{
		{Msg: msg("orders/1", "o"), Delivery: delivery.Delivery{QoS: 1, PacketID: 4, Ref: o}},
		{Msg: msg("fleet/1", "live"), Delivery: delivery.Delivery{QoS: 1, PacketID: 5}}, // broadcast, from memory
		{Msg: msg("jobs/1", "j"), Delivery: delivery.Delivery{QoS: 1, PacketID: 6, Ref: j}},
	})
	b.Disconnected(c, 60, false)
	back := &ackClient{id: "w"}
	connectAs(t, b, back, false, 60, nil)
	for _, x := range []struct {
		ch   *channel
		want delivery.Ref
	}{{orders, o}, {jobs, j}} {
		x.ch.mu.Lock()
		carried := slices.Clone(x.ch.carried)
		x.ch.mu.Unlock()
		if !slices.Equal(carried, []delivery.Ref{x.want}) {
			t.Errorf("channel %s was handed back %v, want its own %v", x.ch.name, carried, x.want)
		}
	}
	if got := back.payloads(); !slices.Equal(got, []string{"live"}) {
		t.Fatalf("broadcast sent again %v, want its own [live] only", got)
	}
}

func TestWhetherAPublishToAChannelWaitsOnDiskIsItsEngines(t *testing.T) {
	ch := newChannel(t, openMemory(t), "orders", "orders/#")
	ch.onDisk = true
	st := newStores(t, 0)
	b, err := New(Options{Sessions: st.sessions, Retained: st.retained, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	if err := b.Plug(ch); err != nil {
		t.Fatal(err)
	}
	if err := b.Restore(); err != nil {
		t.Fatal(err)
	}
	c := &ackClient{id: "p"}
	for _, qos := range []byte{0, 1, 2} {
		if !b.Waits(c, delivery.CallPublish, &codec.Publish{QoS: qos, Topic: []byte("orders/1")}, delivery.Ref{}) {
			t.Fatalf("QoS %d to a channel on disk stays on the loop", qos)
		}
		// Broadcast on memory stores: never off the loop.
		if b.Waits(c, delivery.CallPublish, &codec.Publish{QoS: qos, Topic: []byte("fleet/1")}, delivery.Ref{}) {
			t.Fatalf("QoS %d broadcast on memory stores leaves the loop", qos)
		}
	}
}

func TestAPointReadOfATopicNoChannelClaimsIsRefusedAsBroadcast(t *testing.T) {
	ch := newChannel(t, openMemory(t), "orders", "orders/#")
	b := channelBroker(t, newStores(t, 0), ch)
	c := &ackClient{id: "asker"}
	connectAs(t, b, c, true, 0, nil)
	p := &codec.Publish{QoS: 1, PacketID: 1, Topic: []byte(PointReadTopic), Payload: []byte("fleet/1")}
	p.Properties.ResponseTopic = []byte("reply/me")
	p.Properties.Present.Set(codec.PropResponseTopic)
	code, why := b.Publish(c, p)
	if code != codec.TopicNameInvalid || !strings.Contains(why, "names no latest channel") {
		t.Fatalf("a point read of a broadcast topic answered 0x%02x %q, want 0x90 naming no latest channel", byte(code), why)
	}
}
