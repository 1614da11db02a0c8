package broker

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/memory"
)

// ackClient records deliveries with the log offsets they carry.
type ackClient struct {
	id      string
	mu      sync.Mutex
	got     []string
	offsets []uint64       // the log offsets (Ref.N)
	refs    []delivery.Ref // what netloop would hand back on the acknowledgement
	retains []bool
	rels    []bool   // only the PUBREL was owed
	pids    []uint16 // the packet identifier asked for
}

func (f *ackClient) ClientID() string { return f.id }
func (f *ackClient) Version() byte    { return codec.Version5 }
func (f *ackClient) Deliver(m *delivery.Message, d delivery.Delivery) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, string(m.Payload))
	f.offsets = append(f.offsets, d.Ref.N)
	f.refs = append(f.refs, d.Ref)
	f.retains = append(f.retains, d.Retain)
	f.rels = append(f.rels, d.Released)
	f.pids = append(f.pids, d.PacketID)
	return true
}
func (f *ackClient) Kick(codec.ReasonCode)                             {}
func (f *ackClient) CanTake(*delivery.Message, delivery.Delivery) bool { return true }
func (f *ackClient) Fits(*delivery.Message, delivery.Delivery) bool    { return true }

func (f *ackClient) payloads() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

// waitPayloads waits until the client holds want, in order.
func (f *ackClient) waitPayloads(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		got := f.payloads()
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivered %q, want %q", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stores is one memory provider's session and retained stores, shared by
// the brokers a test starts one after another as a restart would.
type stores struct {
	sessions store.Sessions
	retained store.Retained
}

func newStores(t *testing.T, maxBytes int64) stores {
	t.Helper()
	p, err := memory.Open(store.MemoryOptions{Name: "test", MaxBytes: maxBytes})
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Retained(0)
	if err != nil {
		t.Fatal(err)
	}
	return stores{s, r}
}

func (st stores) broker(t *testing.T, o Options) *Broker {
	t.Helper()
	o.Sessions, o.Retained = st.sessions, st.retained
	o.Logger = slog.New(slog.DiscardHandler)
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Restore(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// restart stops b gracefully and starts a broker on the same stores.
func (st stores) restart(t *testing.T, b *Broker, o Options) *Broker {
	t.Helper()
	b.Stop()
	b.Close()
	return st.broker(t, o)
}

func connectAs(t *testing.T, b *Broker, c delivery.Client, clean bool, expiry uint32, will *codec.Publish) (bool, codec.ReasonCode, *netloop.ConnectRequest) {
	t.Helper()
	req := &netloop.ConnectRequest{Version: 5, ClientID: c.ClientID(), CleanStart: clean, SessionExpiry: expiry, Will: will}
	present, code := b.Connect(c, req)
	return present, code, req
}

func publish(b *Broker, from, topic, payload string, qos byte, retain bool) codec.ReasonCode {
	code, _ := b.Publish(&ackClient{id: from}, &codec.Publish{QoS: qos, Topic: []byte(topic), Payload: []byte(payload), Retain: retain})
	return code
}

func TestSessionIsPresentAfterARestartOnTheSameStore(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{})
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, nil)
	b.Subscribe(c, []byte("t/#"), delivery.SubscribeOptions{QoS: 1})
	b.Disconnected(c, 60, true)
	b = st.restart(t, b, Options{})
	c2 := &ackClient{id: "dev"}
	if present, _, _ := connectAs(t, b, c2, false, 60, nil); !present {
		t.Fatal("Session Present 0 after a restart on a store that kept the session")
	}
	publish(b, "p", "t/x", "live", 1, false)
	c2.waitPayloads(t, "live")
}

func TestAwaySessionIsSentWhatItMissedOnResumeInOrder(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{})
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, nil)
	b.Subscribe(c, []byte("t"), delivery.SubscribeOptions{QoS: 2})
	b.Disconnected(c, 60, false)
	for _, p := range []string{"1", "2", "3"} {
		if code := publish(b, "p", "t", p, 1, false); code != codec.Success {
			t.Fatalf("publish answered 0x%02x", byte(code))
		}
	}
	if n := st.sessions.Log().Len(); n != 3 {
		t.Fatalf("the broadcast log holds %d messages, want 3 (one write per message)", n)
	}
	c2 := &ackClient{id: "dev"}
	connectAs(t, b, c2, false, 60, nil)
	c2.waitPayloads(t, "1", "2", "3")
}

func TestQoS0IsNotKeptForAnAwaySession(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{})
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, nil)
	b.Subscribe(c, []byte("t"), delivery.SubscribeOptions{QoS: 1})
	b.Disconnected(c, 60, false)
	publish(b, "p", "t", "q0", 0, false)
	if n := st.sessions.Log().Len(); n != 0 {
		t.Fatalf("a QoS 0 broadcast was written to the log (%d messages)", n)
	}
}

func TestAwaySessionIsOwedItsMessagesAcrossARestart(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{})
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, nil)
	b.Subscribe(c, []byte("t"), delivery.SubscribeOptions{QoS: 1})
	b.Disconnected(c, 60, false)
	publish(b, "p", "t", "a", 1, false)
	publish(b, "p", "t", "b", 1, false)
	b = st.restart(t, b, Options{})
	c2 := &ackClient{id: "dev"}
	connectAs(t, b, c2, false, 60, nil)
	c2.waitPayloads(t, "a", "b")
}

func TestAcknowledgedLogMessagesAreNotSentAgainAfterARestart(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{})
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, nil)
	b.Subscribe(c, []byte("t"), delivery.SubscribeOptions{QoS: 1})
	b.Disconnected(c, 60, false)
	for _, p := range []string{"a", "b", "c"} {
		publish(b, "p", "t", p, 1, false)
	}
	c2 := &ackClient{id: "dev"}
	connectAs(t, b, c2, false, 60, nil)
	c2.waitPayloads(t, "a", "b", "c")
	b.Acked(c2, c2.refs[0])
	b.Acked(c2, c2.refs[1])
	b.Disconnected(c2, 60, false) // the acknowledgements are stored as it leaves
	b = st.restart(t, b, Options{})
	c3 := &ackClient{id: "dev"}
	connectAs(t, b, c3, false, 60, nil)
	c3.waitPayloads(t, "c")
	b.Acked(c3, c3.refs[0])
	b.Close()
	if n := st.sessions.Log().Len(); n != 0 {
		t.Fatalf("the log still holds %d messages nobody owes", n)
	}
}

func TestAcknowledgementsAreCommittedWithinTheAckCommitInterval(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{AckCommitInterval: 20 * time.Millisecond})
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, nil)
	b.Subscribe(c, []byte("t"), delivery.SubscribeOptions{QoS: 1})
	b.Disconnected(c, 60, false)
	publish(b, "p", "t", "a", 1, false)
	c2 := &ackClient{id: "dev"}
	connectAs(t, b, c2, false, 60, nil)
	c2.waitPayloads(t, "a")
	b.Acked(c2, c2.refs[0])
	deadline := time.Now().Add(3 * time.Second)
	for {
		cur, _, _ := st.sessions.Cursor("dev")
		if cur > c2.offsets[0] {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cursor %d still at the acknowledged offset %d while connected", cur, c2.offsets[0])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSessionQueueBytesLetsTheOldestOwedMessageGo(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{SessionQueueBytes: 10})
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, nil)
	b.Subscribe(c, []byte("t"), delivery.SubscribeOptions{QoS: 1})
	b.Disconnected(c, 60, false)
	publish(b, "p", "t", "aaaa", 1, false) // 5 bytes with the topic
	publish(b, "p", "t", "bbbb", 1, false)
	publish(b, "p", "t", "cccc", 1, false)
	if n := b.Counters().DeliveriesDroppedQueue.Load(); n != 1 {
		t.Fatalf("%d deliveries counted dropped, want 1", n)
	}
	c2 := &ackClient{id: "dev"}
	connectAs(t, b, c2, false, 60, nil)
	c2.waitPayloads(t, "bbbb") // half the bound is on the wire at most
	b.Acked(c2, c2.refs[0])
	c2.waitPayloads(t, "bbbb", "cccc")
}

func TestADurableSessionHasAtMostHalfOfSessionQueueBytesOnTheWire(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{SessionQueueBytes: 40})
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, nil)
	b.Subscribe(c, []byte("t"), delivery.SubscribeOptions{QoS: 1})
	for _, p := range []string{"111111111", "222222222", "333333333"} { // 10 bytes each with the topic
		publish(b, "p", "t", p, 1, false)
	}
	c.waitPayloads(t, "111111111", "222222222") // 20 of 40: the third waits in the log
	b.Acked(c, c.refs[0])
	c.waitPayloads(t, "111111111", "222222222", "333333333")
}

func TestASubscriptionMadeLaterDoesNotReachBackIntoTheLog(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{})
	a := &ackClient{id: "a"}
	connectAs(t, b, a, true, 60, nil)
	b.Subscribe(a, []byte("t"), delivery.SubscribeOptions{QoS: 1})
	b.Disconnected(a, 60, false)
	publish(b, "p", "t", "old", 1, false)
	late := &ackClient{id: "late"}
	connectAs(t, b, late, true, 60, nil)
	b.Subscribe(late, []byte("t"), delivery.SubscribeOptions{QoS: 1})
	b.Disconnected(late, 60, false)
	b = st.restart(t, b, Options{})
	late2 := &ackClient{id: "late"}
	connectAs(t, b, late2, false, 60, nil)
	publish(b, "p", "t", "new", 1, false)
	late2.waitPayloads(t, "new")
}

func TestRetainedValueIsKeptInTheRetainedStoreAcrossARestart(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{})
	publish(b, "p", "home/temp", "21", 1, true)
	if _, ok, _ := st.retained.Get("home/temp"); !ok {
		t.Fatal("the retained value is not in the retained store")
	}
	b = st.restart(t, b, Options{})
	c := &ackClient{id: "s"}
	connectAs(t, b, c, true, 0, nil)
	b.Subscribe(c, []byte("home/#"), delivery.SubscribeOptions{QoS: 1})
	c.waitPayloads(t, "21")
	if !c.retains[0] {
		t.Fatal("a retained value was sent without RETAIN")
	}
}

func TestRetainedValueWithAnExpiredMessageExpiryIsNotSent(t *testing.T) {
	st := newStores(t, 0)
	clk := clock.NewFake(time.Now())
	b := st.broker(t, Options{Clock: clk})
	p := &codec.Publish{QoS: 0, Retain: true, Topic: []byte("t"), Payload: []byte("v")}
	p.Properties.MessageExpiry = 5
	p.Properties.Present.Set(codec.PropMessageExpiry)
	b.Publish(&ackClient{id: "p"}, p)
	clk.Advance(6 * time.Second)
	c := &ackClient{id: "s"}
	connectAs(t, b, c, true, 0, nil)
	b.Subscribe(c, []byte("t"), delivery.SubscribeOptions{QoS: 1})
	if got := c.payloads(); len(got) != 0 {
		t.Fatalf("an expired retained value was sent: %q", got)
	}
	if _, ok, _ := st.retained.Get("t"); ok {
		t.Fatal("the expired retained value was not deleted")
	}
}

func TestFullSessionStoreKeepsTheSessionOnlyAsLongAsItsConnection(t *testing.T) {
	st := newStores(t, 5000) // room for one session record
	b := st.broker(t, Options{})
	connectAs(t, b, &ackClient{id: "first"}, true, 60, nil)
	_, code, req := connectAs(t, b, &ackClient{id: "second"}, true, 60, nil)
	if code != codec.Success || !req.SessionExpiryShortened || req.SessionExpiry != 0 {
		t.Fatalf("code 0x%02x, shortened %v, expiry %d: want accepted with Session Expiry 0", byte(code), req.SessionExpiryShortened, req.SessionExpiry)
	}
	if n := b.Counters().SessionsDroppedStorageFull.Load(); n != 1 {
		t.Fatalf("sessions dropped for storage_full counted %d, want 1", n)
	}
}

func TestFullSessionStoreRefusesAWillQuotaExceeded(t *testing.T) {
	st := newStores(t, 5000)
	b := st.broker(t, Options{})
	connectAs(t, b, &ackClient{id: "first"}, true, 60, nil)
	_, code, _ := connectAs(t, b, &ackClient{id: "second"}, true, 60, &codec.Publish{Topic: []byte("w"), Payload: []byte("gone")})
	if code != codec.QuotaExceeded {
		t.Fatalf("CONNECT with a Will the store has no room for answered 0x%02x, want 0x97", byte(code))
	}
}

func TestSubscribeIntoAFullSessionStoreIsQuotaExceeded(t *testing.T) {
	st := newStores(t, 5000)
	b := st.broker(t, Options{})
	c := &ackClient{id: "first"}
	connectAs(t, b, c, true, 60, nil)
	b.Subscribe(c, []byte("a"), delivery.SubscribeOptions{QoS: 1})
	if code, _ := b.Subscribe(c, []byte("b/c/d"), delivery.SubscribeOptions{QoS: 1}); code != codec.QuotaExceeded {
		t.Fatalf("SUBSCRIBE past the store's room answered 0x%02x, want 0x97", byte(code))
	}
	publish(b, "p", "b/c/d", "x", 0, false)
	if got := c.payloads(); len(got) != 0 {
		t.Fatalf("a refused filter was served: %q", got)
	}
}

func TestFullProviderLetsTheLogsOldestMessagesGoCounted(t *testing.T) {
	st := newStores(t, 8000) // one session record and about eight messages
	b := st.broker(t, Options{})
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, nil)
	b.Subscribe(c, []byte("t"), delivery.SubscribeOptions{QoS: 1})
	b.Disconnected(c, 60, false)
	payload := string(make([]byte, 500))
	for i := range 20 {
		if code := publish(b, "p", "t", fmt.Sprint(i)+payload, 1, false); code != codec.Success {
			t.Fatalf("publish %d answered 0x%02x: the sessions' loss is never the publisher's", i, byte(code))
		}
	}
	if n := b.Counters().DeliveriesDroppedStorageFull.Load(); n == 0 {
		t.Fatal("no delivery counted lost to a full provider")
	}
	c2 := &ackClient{id: "dev"}
	connectAs(t, b, c2, false, 60, nil)
	got := c2.payloads()
	if len(got) == 0 || len(got) == 20 || got[len(got)-1][:2] != "19" {
		t.Fatalf("resumed with %d of 20 messages: want the oldest gone and the newest kept", len(got))
	}
}

func TestRestoredSessionExpiryIsCappedByTheCurrentMaxSessionExpiry(t *testing.T) {
	st := newStores(t, 0)
	now := time.Now()
	b := st.broker(t, Options{Clock: clock.NewFake(now)})
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 3600, nil)
	b.Disconnected(c, 3600, false)
	b.Close()
	later := now.Add(2 * time.Minute)
	b = st.broker(t, Options{MaxSessionExpiry: time.Minute, Clock: clock.NewFake(later)})
	if n := b.Counters().SessionExpiryShortened.Load(); n != 1 {
		t.Fatalf("sessions shortened counted %d, want 1", n)
	}
	if present, _, _ := connectAs(t, b, &ackClient{id: "dev"}, false, 60, nil); present {
		t.Fatal("a session past the lowered cap was resumed")
	}
}

func TestRetainedValueSentAtSubscribeToADurableSessionIsResentAfterARestartUntilAcknowledged(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{})
	publish(b, "p", "home/temp", "21", 1, true)
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, nil)
	b.Subscribe(c, []byte("home/#"), delivery.SubscribeOptions{QoS: 1})
	c.waitPayloads(t, "21")
	if c.offsets[0] == 0 {
		t.Fatal("the retained value was not kept in the log for the durable session")
	}
	b = st.restart(t, b, Options{}) // never acknowledged
	c2 := &ackClient{id: "dev"}
	connectAs(t, b, c2, false, 60, nil)
	c2.waitPayloads(t, "21")
	if !c2.retains[0] {
		t.Fatal("the retained value was sent again without RETAIN")
	}
}

func TestConcurrentPublishersLeaveAnAwaySessionsOwedListInLogOrder(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{})
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, nil)
	b.Subscribe(c, []byte("t/#"), delivery.SubscribeOptions{QoS: 1})
	b.Disconnected(c, 60, false)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				publish(b, fmt.Sprint("p", w), "t/x", fmt.Sprint(w, "-", i), 1, false)
			}
		}()
	}
	wg.Wait()
	back := &ackClient{id: "dev"}
	connectAs(t, b, back, false, 60, nil)
	deadline := time.Now().Add(3 * time.Second)
	for len(back.payloads()) < 400 {
		if time.Now().After(deadline) {
			t.Fatalf("resumed with %d of 400 owed messages", len(back.payloads()))
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i, off := range back.offsets {
		if i > 0 && off <= back.offsets[i-1] {
			t.Fatalf("resent out of log order: offset %d after %d", off, back.offsets[i-1])
		}
		b.Acked(back, back.refs[i])
	}
	b.Close()
	if n := st.sessions.Log().Len(); n != 0 {
		t.Fatalf("%d acknowledged messages are still in the log: an acknowledgement missed its entry", n)
	}
}

func TestQoS2DeliveryWhosePubrecWasStoredResumesWithItsPubrelAfterARestart(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{})
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, nil)
	b.Subscribe(c, []byte("t"), delivery.SubscribeOptions{QoS: 2})
	pub := &ackClient{id: "p"}
	connectAs(t, b, pub, true, 0, nil)
	if code, _ := b.Publish(pub, &codec.Publish{QoS: 2, PacketID: 1, Topic: []byte("t"), Payload: []byte("once")}); code != codec.Success {
		t.Fatalf("PUBREC 0x%02x", byte(code))
	}
	b.Release(pub, 1)
	c.waitPayloads(t, "once")
	if !b.Received(c, c.refs[0], c.pids[0]) {
		t.Fatal("the PUBREC was not stored")
	}
	b = st.restart(t, b, Options{})
	back := &ackClient{id: "dev"}
	connectAs(t, b, back, false, 60, nil)
	back.waitPayloads(t, "once")
	if !back.rels[0] || back.pids[0] != c.pids[0] {
		t.Fatalf("resumed with released %v under %d, want only the PUBREL under %d", back.rels[0], back.pids[0], c.pids[0])
	}
	b.Acked(back, back.refs[0]) // PUBCOMP
	b.Close()
	if w, _ := st.sessions.InFlight("dev"); len(w) != 0 {
		t.Fatalf("the completed exchange is still in the stored window: %+v", w)
	}
}

// A session that ends with its connection and holds no filter and no Will
// has nothing to resume and nothing the provider charges: the store keeps no
// record of it (and the provider counts none of its bytes) until its first
// filter, which stores the record whole; its ending leaves nothing.
func TestASessionEndingWithItsConnectionIsStoredOnlyOnceItHoldsAFilter(t *testing.T) {
	p, err := memory.Open(store.MemoryOptions{Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	var st stores
	st.sessions, _ = p.Sessions()
	st.retained, _ = p.Retained(0)
	b := st.broker(t, Options{})
	c := &ackClient{id: "clean"}
	if _, code, _ := connectAs(t, b, c, true, 0, nil); code != codec.Success {
		t.Fatalf("CONNECT answered 0x%02x", byte(code))
	}
	if _, ok, _ := st.sessions.Get("clean"); ok {
		t.Fatal("a session ending with its connection, with no filter and no Will, was stored")
	}
	if n := p.Bytes(); n != 0 {
		t.Fatalf("the provider counts %d bytes for a session it holds no record of", n)
	}
	if code, _ := b.Subscribe(c, []byte("a/b"), delivery.SubscribeOptions{QoS: 1}); code != 1 {
		t.Fatalf("SUBSCRIBE answered 0x%02x", byte(code))
	}
	got, ok, _ := st.sessions.Get("clean")
	if !ok || len(got.Subscriptions) != 1 || got.Subscriptions[0].Filter != "a/b" {
		t.Fatalf("after its first filter the store holds %+v (%v), want the record with a/b", got, ok)
	}
	b.Disconnected(c, 0, true)
	if _, ok, _ := st.sessions.Get("clean"); ok {
		t.Fatal("the record outlived the session's end")
	}
	// A Will is kept from the CONNECT that armed it, whatever the expiry
	// (RFC 0002 "Every session's state").
	w := &ackClient{id: "willed"}
	if _, code, _ := connectAs(t, b, w, true, 0, &codec.Publish{Topic: []byte("gone"), Payload: []byte("x")}); code != codec.Success {
		t.Fatalf("CONNECT with a Will answered 0x%02x", byte(code))
	}
	if got, ok, _ := st.sessions.Get("willed"); !ok || got.Will == nil {
		t.Fatalf("a session's Will is not stored: %+v (%v)", got, ok)
	}
}

// What an ended session left under a client id is removed by a session
// begun new there even when that one stores no record (RFC 0003 "A session
// begun new inherits nothing from an ended one").
func TestASessionBegunNewWithNoRecordRemovesAnEndedOnesLeftovers(t *testing.T) {
	st := newStores(t, 0)
	if err := st.sessions.Put(store.Session{ClientID: "dev", Expiry: time.Hour, Subscriptions: []store.Subscription{{Filter: "old/#", QoS: 1}}}); err != nil {
		t.Fatal(err)
	}
	b := st.broker(t, Options{})
	sh := b.shard("dev")
	sh.mu.Lock()
	delete(sh.sessions, "dev") // the broker holds no session for it: leftovers
	sh.mu.Unlock()
	if _, code, _ := connectAs(t, b, &ackClient{id: "dev"}, true, 0, nil); code != codec.Success {
		t.Fatalf("CONNECT answered 0x%02x", byte(code))
	}
	if got, ok, _ := st.sessions.Get("dev"); ok {
		t.Fatalf("an ended session's record is still stored: %+v", got)
	}
}
