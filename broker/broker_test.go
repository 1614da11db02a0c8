package broker

import (
	"hash/maphash"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker/brokertest"
	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// fakeClient records what the broker hands a connection.
type fakeClient struct {
	id      string
	mu      sync.Mutex
	got     []string
	retains []bool
	kicked  codec.ReasonCode
}

func (f *fakeClient) ClientID() string { return f.id }
func (f *fakeClient) Version() byte    { return codec.Version5 }
func (f *fakeClient) Deliver(m *delivery.Message, d delivery.Delivery) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, string(m.Payload))
	f.retains = append(f.retains, d.Retain)
	return true
}
func (f *fakeClient) Kick(r codec.ReasonCode) { f.mu.Lock(); f.kicked = r; f.mu.Unlock() }

// CanTake: a fake takes whatever it is given.
func (f *fakeClient) CanTake(*delivery.Message, delivery.Delivery) bool { return true }
func (f *fakeClient) Fits(*delivery.Message, delivery.Delivery) bool    { return true }

func (f *fakeClient) payloads() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...)
}

// newTestBroker is a broker on memory stores of its own (brokertest) unless
// o names stores, closed at the test's end.
func newTestBroker(t testing.TB, o Options) *Broker {
	t.Helper()
	if o.Sessions == nil && o.Retained == nil {
		o.Sessions, o.Retained = brokertest.Stores(t, 0)
	}
	o.Logger = slog.New(slog.DiscardHandler)
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

func connect(b *Broker, c *fakeClient, clean bool, expiry uint32) bool {
	present, code := b.Connect(c, &netloop.ConnectRequest{Version: 5, ClientID: c.id, CleanStart: clean, SessionExpiry: expiry})
	if code != codec.Success {
		panic(code)
	}
	return present
}

func pub(b *Broker, from *fakeClient, topic, payload string, retain bool) codec.ReasonCode {
	code, _ := b.Publish(from, &codec.Publish{QoS: 1, Topic: []byte(topic), Payload: []byte(payload), Retain: retain})
	return code
}

func subscribe(b *Broker, c *fakeClient, filter string, o delivery.SubscribeOptions) codec.ReasonCode {
	code, _ := b.Subscribe(c, []byte(filter), o)
	return code
}

func TestTakeoverKicksTheOldConnectionWithSessionTakenOver(t *testing.T) {
	b := newTestBroker(t, Options{})
	old, newer := &fakeClient{id: "x"}, &fakeClient{id: "x"}
	connect(b, old, true, 0)
	connect(b, newer, true, 0)
	if old.kicked != codec.SessionTakenOver {
		t.Fatalf("old connection kicked with 0x%02x, want 0x8e", byte(old.kicked))
	}
}

func TestTheTakenOverConnectionsEndChangesNothing(t *testing.T) {
	b := newTestBroker(t, Options{})
	old, newer := &fakeClient{id: "x"}, &fakeClient{id: "x"}
	connect(b, old, true, 0)
	connect(b, newer, true, 0)
	subscribe(b, newer, "t", delivery.SubscribeOptions{QoS: 1})
	b.Disconnected(old, 0, false) // arrives after the takeover
	pub(b, &fakeClient{id: "p"}, "t", "still", false)
	if got := newer.payloads(); len(got) != 1 {
		t.Fatalf("the new connection lost its session to the old one's end: %v", got)
	}
	if code := subscribe(b, old, "u", delivery.SubscribeOptions{}); code != codec.UnspecifiedError {
		t.Fatalf("the old connection changed the session: 0x%02x", byte(code))
	}
}

func TestSessionEndsWhenItsExpiryPasses(t *testing.T) {
	clk := clock.NewFake(time.Now())
	b := newTestBroker(t, Options{Clock: clk})
	c := &fakeClient{id: "brief"}
	connect(b, c, false, 1)
	b.Disconnected(c, 1, true)
	clk.WaitArmed(2) // the commit ticker and the session's expiry
	clk.Advance(time.Second - time.Millisecond)
	if b.Sessions() != 1 {
		t.Fatal("the session did not outlive its connection until its expiry")
	}
	clk.Advance(time.Millisecond)
	if b.Sessions() != 0 {
		t.Fatal("the session outlived its expiry")
	}
}

func TestReconnectInsideTheExpiryResumesTheSession(t *testing.T) {
	b := newTestBroker(t, Options{})
	c := &fakeClient{id: "back"}
	connect(b, c, false, 60)
	subscribe(b, c, "k/#", delivery.SubscribeOptions{QoS: 1})
	b.Disconnected(c, 60, true)
	again := &fakeClient{id: "back"}
	if !connect(b, again, false, 60) {
		t.Fatal("Session Present 0 inside the expiry")
	}
	pub(b, &fakeClient{id: "p"}, "k/1", "kept", false)
	if got := again.payloads(); len(got) != 1 || got[0] != "kept" {
		t.Fatalf("got %v", got)
	}
}

func TestNoLocalWithholdsTheClientsOwnPublishes(t *testing.T) {
	b := newTestBroker(t, Options{})
	c := &fakeClient{id: "self"}
	connect(b, c, true, 0)
	subscribe(b, c, "echo", delivery.SubscribeOptions{QoS: 1, NoLocal: true})
	pub(b, c, "echo", "mine", false)
	if got := c.payloads(); len(got) != 0 {
		t.Fatalf("own publish delivered under No Local: %v", got)
	}
}

func TestRetainedMessageIsSentOnSubscribeAndDeletedByAnEmptyPayload(t *testing.T) {
	b := newTestBroker(t, Options{})
	p := &fakeClient{id: "p"}
	pub(b, p, "r/1", "state", true)
	s := &fakeClient{id: "s"}
	connect(b, s, true, 0)
	subscribe(b, s, "r/#", delivery.SubscribeOptions{QoS: 1})
	if got := s.payloads(); len(got) != 1 || got[0] != "state" || !s.retains[0] {
		t.Fatalf("got %v retain %v, want the retained value with RETAIN", got, s.retains)
	}
	pub(b, p, "r/1", "", true)
	late := &fakeClient{id: "late"}
	connect(b, late, true, 0)
	subscribe(b, late, "r/#", delivery.SubscribeOptions{QoS: 1})
	if got := late.payloads(); len(got) != 0 {
		t.Fatalf("a deleted retained value was sent: %v", got)
	}
}

func TestRetainedStoreFullIsRefusedQuotaExceeded(t *testing.T) {
	b := newTestBroker(t, withStores(t, Options{}, 200))
	p := &fakeClient{id: "p"}
	if code := pub(b, p, "r/1", string(make([]byte, 100)), true); code != codec.Success {
		t.Fatalf("0x%02x", byte(code))
	}
	if code := pub(b, p, "r/2", string(make([]byte, 100)), true); code != codec.QuotaExceeded {
		t.Fatalf("0x%02x, want 0x97", byte(code))
	}
}

func TestPublishTopicRefusals(t *testing.T) {
	b := newTestBroker(t, Options{MaxTopicLength: 16, MaxTopicLevels: 3})
	p := &fakeClient{id: "p"}
	for topic, want := range map[string]codec.ReasonCode{
		"a/b/c":             codec.Success,
		"a/b/c/d":           codec.TopicNameInvalid, // deeper than max_topic_levels
		"aaaaaaaaaaaaaaaaa": codec.TopicNameInvalid, // longer than max_topic_length
		"$saguin/x":         codec.TopicNameInvalid,
		"$share/g/t":        codec.TopicNameInvalid,
		"$SYS/x":            codec.NotAuthorized,
	} {
		if got := pub(b, p, topic, "x", false); got != want {
			t.Errorf("%s: 0x%02x, want 0x%02x", topic, byte(got), byte(want))
		}
	}
}

func TestSubscribeRefusals(t *testing.T) {
	b := newTestBroker(t, Options{MaxTopicLevels: 3, MaxSubscriptions: 2})
	c := &fakeClient{id: "c"}
	connect(b, c, true, 0)
	for filter, want := range map[string]codec.ReasonCode{
		"a/+/c":           codec.GrantedQoS1,
		"a/#/c":           codec.TopicFilterInvalid,
		"a/b/c/d":         codec.TopicFilterInvalid,
		"$saguin/queue/q": codec.TopicFilterInvalid,
		"$saguin/kv/get":  codec.NotAuthorized,
		"$SYS/#":          codec.NotAuthorized,
		"$SHARE/g/a":      codec.TopicFilterInvalid,
	} {
		if got := subscribe(b, c, filter, delivery.SubscribeOptions{QoS: 1}); got != want {
			t.Errorf("%s: 0x%02x, want 0x%02x", filter, byte(got), byte(want))
		}
	}
	subscribe(b, c, "x", delivery.SubscribeOptions{})
	if got := subscribe(b, c, "y", delivery.SubscribeOptions{}); got != codec.QuotaExceeded {
		t.Fatalf("a third filter past max_subscriptions 2: 0x%02x, want 0x97", byte(got))
	}
	if got := subscribe(b, c, "x", delivery.SubscribeOptions{QoS: 2}); got != codec.GrantedQoS2 {
		t.Fatalf("replacing a held filter: 0x%02x, want granted", byte(got))
	}
}

func TestTakeoverOfAConnectionBoundSessionStartsAFreshOne(t *testing.T) {
	b := newTestBroker(t, Options{})
	old := &fakeClient{id: "bound"}
	connect(b, old, true, 0)
	subscribe(b, old, "t", delivery.SubscribeOptions{QoS: 1})
	newer := &fakeClient{id: "bound"}
	if connect(b, newer, false, 60) {
		t.Fatal("Session Present 1 for a session that ended with the connection it took over")
	}
	pub(b, &fakeClient{id: "p"}, "t", "no", false)
	if got := newer.payloads(); len(got) != 0 {
		t.Fatalf("a filter of the ended session was served: %v", got)
	}
}

func TestOverlappingFiltersGetOneCopyAtTheHighestQoSWithEveryIdentifier(t *testing.T) {
	b := newTestBroker(t, Options{})
	c := &recordingClient{fakeClient: fakeClient{id: "over"}}
	b.Connect(c, &netloop.ConnectRequest{Version: 5, ClientID: c.id, CleanStart: true})
	b.Subscribe(c, []byte("o/#"), delivery.SubscribeOptions{QoS: 0, SubscriptionID: 5})
	b.Subscribe(c, []byte("o/+"), delivery.SubscribeOptions{QoS: 1, SubscriptionID: 6})
	pub(b, &fakeClient{id: "p"}, "o/x", "one", false)
	if len(c.deliveries) != 1 {
		t.Fatalf("%d copies, want one", len(c.deliveries))
	}
	d := c.deliveries[0]
	if d.QoS != 1 || len(d.SubscriptionIDs) != 2 {
		t.Fatalf("delivery %+v, want QoS 1 carrying both identifiers", d)
	}
}

func TestFanOutToManySessionsDeliversOneCopyEach(t *testing.T) {
	b := newTestBroker(t, Options{})
	var subs []*fakeClient
	for i := 0; i < 40; i++ {
		c := &fakeClient{id: "s" + string(rune('A'+i))}
		connect(b, c, true, 0)
		subscribe(b, c, "f/#", delivery.SubscribeOptions{QoS: 1})
		subscribe(b, c, "f/+", delivery.SubscribeOptions{QoS: 1})
		subs = append(subs, c)
	}
	pub(b, &fakeClient{id: "p"}, "f/x", "m", false)
	for _, c := range subs {
		if got := c.payloads(); len(got) != 1 {
			t.Fatalf("%s got %d copies, want 1", c.id, len(got))
		}
	}
}

// recordingClient keeps every Delivery it is handed.
type recordingClient struct {
	fakeClient
	deliveries []delivery.Delivery
}

func (r *recordingClient) Deliver(m *delivery.Message, d delivery.Delivery) bool {
	r.deliveries = append(r.deliveries, d)
	return r.fakeClient.Deliver(m, d)
}

func TestPublishRateBudgetBelongsToTheClientIDAndRefusesPastIt(t *testing.T) {
	b := newTestBroker(t, Options{PublishRate: 2})
	c := &fakeClient{id: "fast"}
	codes := []codec.ReasonCode{pub(b, c, "r", "1", false), pub(b, c, "r", "2", false), pub(b, c, "r", "3", false)}
	if codes[0] != codec.Success || codes[1] != codec.Success || codes[2] != codec.QuotaExceeded {
		t.Fatalf("codes %v, want two accepted then 0x97", codes)
	}
	if code := pub(b, &fakeClient{id: "fast"}, "r", "4", false); code != codec.QuotaExceeded {
		t.Fatalf("another connection under the same id: 0x%02x, want 0x97", byte(code))
	}
	if code := pub(b, &fakeClient{id: "other"}, "r", "1", false); code != codec.Success {
		t.Fatalf("another client id: 0x%02x, want its own budget", byte(code))
	}
}

func TestMessageLargerThanTheByteBudgetIsAdmittedIntoDeficit(t *testing.T) {
	b := newTestBroker(t, Options{PublishBytes: 10})
	c := &fakeClient{id: "big"}
	if code := pub(b, c, "r", string(make([]byte, 100)), false); code != codec.Success {
		t.Fatalf("0x%02x: a message over the per-second bytes is a rate, not a ban", byte(code))
	}
	if code := pub(b, c, "r", "x", false); code != codec.QuotaExceeded {
		t.Fatalf("0x%02x, want 0x97 while in deficit", byte(code))
	}
}

func TestRefilledBudgetsAreDropped(t *testing.T) {
	bs := newBudgets()
	now := time.Now()
	bs.take("a", 1, now, figures{rate: 5})
	sh := &bs.shards[maphash.String(bs.seed, "a")%sessionShards]
	bs.sweep(sh, now.Add(2*time.Second))
	if len(sh.m) != 0 {
		t.Fatal("a refilled budget was kept")
	}
}

func TestHeadersPastMaxHeaderCountOrBytesAreRefused(t *testing.T) {
	b := newTestBroker(t, Options{MaxHeaderCount: 1, MaxHeaderBytes: 8})
	c := &fakeClient{id: "h"}
	p := &codec.Publish{Topic: []byte("t")}
	p.Properties.AddUser([]byte("a"), []byte("1"))
	if code, _ := b.Publish(c, p); code != codec.Success {
		t.Fatalf("0x%02x", byte(code))
	}
	p.Properties.AddUser([]byte("b"), []byte("2"))
	if code, _ := b.Publish(c, p); code != codec.QuotaExceeded {
		t.Fatalf("two headers at max_header_count 1: 0x%02x", byte(code))
	}
	q := &codec.Publish{Topic: []byte("t")}
	q.Properties.AddUser([]byte("key"), []byte("valuevalue"))
	if code, _ := b.Publish(c, q); code != codec.QuotaExceeded {
		t.Fatalf("13 header bytes at max_header_bytes 8: 0x%02x", byte(code))
	}
}

// withStores gives o memory stores whose retained provider holds at most
// retainedMaxBytes (0: no bound).
func withStores(t testing.TB, o Options, retainedMaxBytes int64) Options {
	o.Sessions, o.Retained = brokertest.Stores(t, retainedMaxBytes)
	return o
}
