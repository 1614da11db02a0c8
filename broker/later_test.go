package broker

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/sqlite"
)

// slowSessions is a sqlite session store whose first write of the kind
// armed names (Update, AddInFlight, Hold) waits for open: a write caught
// mid-commit, as a slow disk would hold it.
type slowSessions struct {
	store.Sessions
	armed   atomic.Value  // string: the write to hold, "" for none
	entered chan struct{} // the gated write has begun
	open    chan struct{} // closing it lets the write through
	once    sync.Once
}

// gate holds the write if it is the one armed.
func (g *slowSessions) gate(write string) {
	if g.armed.CompareAndSwap(write, "") {
		close(g.entered)
		<-g.open
	}
}

func (g *slowSessions) Put(x store.Session) error {
	g.gate("Put")
	return g.Sessions.Put(x)
}

func (g *slowSessions) Update(x store.Session) error {
	g.gate("Update")
	return g.Sessions.Update(x)
}

func (g *slowSessions) AddInFlight(id string, w []store.InFlight) error {
	g.gate("AddInFlight")
	return g.Sessions.AddInFlight(id, w)
}

func (g *slowSessions) Subscribe(id string, sub store.Subscription, groupCursor uint64) error {
	g.gate("Subscribe")
	return g.Sessions.Subscribe(id, sub, groupCursor)
}

func (g *slowSessions) Unsubscribe(id, filter string) (bool, error) {
	g.gate("Unsubscribe")
	return g.Sessions.Unsubscribe(id, filter)
}

func (g *slowSessions) Log() store.BroadcastLog { return slowLog{g.Sessions.Log(), g} }

// slowLog is the broadcast log of a slowSessions.
type slowLog struct {
	store.BroadcastLog
	g *slowSessions
}

func (l slowLog) Hold(h store.Held) error {
	l.g.gate("Hold")
	return l.BroadcastLog.Hold(h)
}

func (l slowLog) ReadFrom(from uint64, max int, dst []store.BroadcastEntry) ([]store.BroadcastEntry, error) {
	l.g.gate("ReadFrom")
	return l.BroadcastLog.ReadFrom(from, max, dst)
}

// release lets the gated write through, once.
func (g *slowSessions) release() { g.once.Do(func() { close(g.open) }) }

// sqliteBroker starts a broker as cmd/saguin wires it on a sqlite provider
// in t.TempDir(): writes no client waits on leave the caller.
func sqliteBroker(t *testing.T, o Options) (*Broker, *slowSessions) {
	t.Helper()
	p, err := sqlite.Open(store.SQLiteOptions{Name: "test", FilePath: filepath.Join(t.TempDir(), "test.db"), ReadConnections: 1,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ss, err := p.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Retained(0)
	if err != nil {
		t.Fatal(err)
	}
	g := &slowSessions{Sessions: ss, entered: make(chan struct{}), open: make(chan struct{})}
	g.armed.Store("")
	o.Sessions, o.Retained, o.SessionsWaitOnDisk, o.RetainedWaitOnDisk = g, r, true, true
	o.Logger = slog.New(slog.DiscardHandler)
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Restore(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.release()
		b.Close()
		p.Close()
	})
	return b, g
}

// within fails t unless done is closed within a few seconds.
func within(t *testing.T, what string, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s never happened", what)
	}
}

// disconnectGated ends c's connection with its record write held at the
// gate, and fails t unless Disconnected returned meanwhile.
func disconnectGated(t *testing.T, b *Broker, g *slowSessions, c delivery.Client, expiry uint32, graceful bool) {
	t.Helper()
	g.armed.Store("Update")
	returned := make(chan struct{})
	go func() {
		b.Disconnected(c, expiry, graceful)
		close(returned)
	}()
	within(t, "Disconnected returning while its record write waits", returned)
	within(t, "the disconnect's record write starting", g.entered)
}

func TestADisconnectOnADiskProviderNeverWaitsForItsWrites(t *testing.T) {
	b, g := sqliteBroker(t, Options{})
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, nil)
	disconnectGated(t, b, g, c, 60, false)
	g.release()
	b.later.wait()
	s, ok, err := g.Get("dev")
	if err != nil || !ok || s.DisconnectedAt.IsZero() {
		t.Fatalf("stored %+v %v %v, want the session with its disconnect time", s, ok, err)
	}
}

func TestAResumeWritesItsRecordAfterTheDisconnectBeforeIt(t *testing.T) {
	awaited, await := awaitedIDs()
	b, g := sqliteBroker(t, Options{AwaitClient: await})
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, willOn("status/dev", "offline", 30))
	<-awaited
	disconnectGated(t, b, g, c, 60, false)

	resumed := make(chan struct{})
	go func() {
		if present, code, _ := connectAs(t, b, &ackClient{id: "dev"}, false, 60, nil); !present || code != codec.Success {
			t.Errorf("resume: present %v code 0x%02x", present, byte(code))
		}
		close(resumed)
	}()
	if id := <-awaited; id != "dev" {
		t.Fatalf("the resume marked %q as waiting on the store", id)
	}
	g.release()
	within(t, "the resume's CONNACK", resumed)
	b.later.wait()
	s, ok, err := g.Get("dev")
	if err != nil || !ok {
		t.Fatalf("stored %v %v", ok, err)
	}
	if !s.DisconnectedAt.IsZero() || s.Will != nil {
		t.Fatalf("stored disconnected at %v with Will %v: the disconnect's record overtook the resume's", s.DisconnectedAt, s.Will)
	}
}

func TestAWillADisconnectWithdrewIsNeverPublishedByTheResume(t *testing.T) {
	b, g := sqliteBroker(t, Options{})
	w := watcher(t, b, "status/#")
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, willOn("status/dev", "offline", 0))
	disconnectGated(t, b, g, c, 60, true)

	resumed := make(chan struct{})
	go func() {
		connectAs(t, b, &ackClient{id: "dev"}, false, 60, nil)
		close(resumed)
	}()
	g.release()
	within(t, "the resume's CONNACK", resumed)
	publish(b, "p", "status/marker", "after", 1, false)
	w.waitPayloads(t, "after")
	if n := b.Counters().WillsPublished[WillImmediate].Load(); n != 0 {
		t.Fatalf("%d Wills published, want none", n)
	}
}

// awaitedIDs is an AwaitClient that says which client ids a CONNECT marked
// as waiting on the store: the CONNECT has reached the session.
func awaitedIDs() (chan string, func(string) func()) {
	ids := make(chan string, 4)
	return ids, func(id string) func() {
		ids <- id
		return func() {}
	}
}

func TestACleanStartAfterADisconnectStoresOnlyTheNewSession(t *testing.T) {
	awaited, await := awaitedIDs()
	b, g := sqliteBroker(t, Options{AwaitClient: await})
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, nil)
	<-awaited
	b.Subscribe(c, []byte("old/#"), delivery.SubscribeOptions{QoS: 1})
	disconnectGated(t, b, g, c, 60, false)

	started := make(chan struct{})
	go func() {
		if present, _, _ := connectAs(t, b, &ackClient{id: "dev"}, true, 60, nil); present {
			t.Error("a Clean Start found its session present")
		}
		close(started)
	}()
	<-awaited
	g.release()
	within(t, "the Clean Start's CONNACK", started)
	b.later.wait()
	s, ok, err := g.Get("dev")
	if err != nil || !ok {
		t.Fatalf("stored %v %v", ok, err)
	}
	if !s.DisconnectedAt.IsZero() || len(s.Subscriptions) != 0 {
		t.Fatalf("stored disconnected at %v with %d filters: the old session's disconnect landed after the new one", s.DisconnectedAt, len(s.Subscriptions))
	}
}

func TestASessionThatExpiresWhileItsDisconnectIsStoredStaysEnded(t *testing.T) {
	clk := clock.NewFake(time.Now())
	b, g := sqliteBroker(t, Options{Clock: clk})
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 1, nil)
	disconnectGated(t, b, g, c, 1, false)
	// The expiry ends it in memory while the disconnect's write still waits:
	// the timer queues the ending behind it rather than waiting on disk.
	clk.WaitArmed(2) // the commit ticker and the session's expiry
	clk.Advance(time.Second - time.Millisecond)
	if b.Sessions() != 1 {
		t.Fatal("the session ended a millisecond before its expiry")
	}
	clk.Advance(time.Millisecond)
	if b.Sessions() != 0 {
		t.Fatal("the session never expired")
	}
	g.release()
	b.later.wait()
	if s, ok, err := g.Get("dev"); err != nil || ok {
		t.Fatalf("stored %+v %v %v after the session ended", s, ok, err)
	}
}

// shardmates returns two client ids whose sessions share one shard lock.
func shardmates(b *Broker) (string, string) {
	for i := 0; ; i++ {
		id := fmt.Sprintf("mate-%d", i)
		if i > 0 && b.shard(id) == b.shard("mate-0") {
			return "mate-0", id
		}
	}
}

// returnsWhileGated fails t unless call returns while g holds a write.
func returnsWhileGated(t *testing.T, what string, call func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		call()
		close(done)
	}()
	within(t, what, done)
}

func TestAnExactlyOnceHoldBeingStoredNeverHoldsAnotherClientOfItsShard(t *testing.T) {
	b, g := sqliteBroker(t, Options{})
	one, two := shardmates(b)
	slow, other := &ackClient{id: one}, &ackClient{id: two}
	connectAs(t, b, slow, true, 0, nil)
	connectAs(t, b, other, true, 60, nil)
	g.armed.Store("Hold")
	held := make(chan codec.ReasonCode, 1)
	go func() {
		code, _ := b.Publish(slow, &codec.Publish{QoS: 2, PacketID: 7, Topic: []byte("t"), Payload: []byte("x")})
		held <- code
	}()
	within(t, "the hold's write starting", g.entered)
	returnsWhileGated(t, "another client's Holds", func() { b.Holds(other, 1) })
	returnsWhileGated(t, "another client's Acked", func() { b.Acked(other, logRef(1, "")) })
	returnsWhileGated(t, "another client's disconnect", func() { b.Disconnected(other, 60, true) })
	g.release()
	if code := <-held; code != codec.Success {
		t.Fatalf("PUBREC 0x%02x", byte(code))
	}
	if !b.Holds(slow, 7) {
		t.Fatal("the stored hold is not held")
	}
}

func TestAStoredPubrecNeverHoldsAnotherClientOfItsShard(t *testing.T) {
	b, g := sqliteBroker(t, Options{})
	one, two := shardmates(b)
	sub, other := &ackClient{id: one}, &ackClient{id: two}
	connectAs(t, b, sub, true, 60, nil)
	b.Subscribe(sub, []byte("t"), delivery.SubscribeOptions{QoS: 2})
	connectAs(t, b, other, true, 60, nil)
	publish(b, "p", "t", "x", 1, false)
	sub.waitPayloads(t, "x")
	sub.mu.Lock()
	ref := sub.refs[0]
	sub.mu.Unlock()
	g.armed.Store("AddInFlight")
	received := make(chan bool, 1)
	go func() { received <- b.Received(sub, ref, 1) }()
	within(t, "the PUBREC's write starting", g.entered)
	returnsWhileGated(t, "another client's Acked", func() { b.Acked(other, logRef(1, "")) })
	returnsWhileGated(t, "another client's disconnect", func() { b.Disconnected(other, 60, true) })
	g.release()
	if !<-received {
		t.Fatal("the stored PUBREC was refused")
	}
}

func TestAFilterBeingStoredNeverHoldsAnotherClientOfItsShard(t *testing.T) {
	for _, write := range []string{"Subscribe", "Unsubscribe"} {
		t.Run(write, func(t *testing.T) {
			b, g := sqliteBroker(t, Options{})
			one, two := shardmates(b)
			slow, other := &ackClient{id: one}, &ackClient{id: two}
			connectAs(t, b, slow, true, 60, nil)
			connectAs(t, b, other, true, 60, nil)
			b.Subscribe(slow, []byte("u"), delivery.SubscribeOptions{QoS: 1})
			g.armed.Store(write)
			answered := make(chan codec.ReasonCode, 1)
			go func() {
				if write == "Subscribe" {
					code, _ := b.Subscribe(slow, []byte("t"), delivery.SubscribeOptions{QoS: 1})
					answered <- code
				} else {
					answered <- b.Unsubscribe(slow, []byte("u"))
				}
			}()
			within(t, "the filter's write starting", g.entered)
			returnsWhileGated(t, "another client's Acked", func() { b.Acked(other, logRef(1, "")) })
			returnsWhileGated(t, "another client's disconnect", func() { b.Disconnected(other, 60, true) })
			g.release()
			if code := <-answered; code.IsError() {
				t.Fatalf("answered 0x%02x", byte(code))
			}
		})
	}
}

// A PUBACK that makes room for an away session's next delivery from the log
// returns before that delivery's read, and the read holds no call of the
// shard - the subscriber's own included - while it waits on the disk.
func TestAnAcknowledgementNeverWaitsForTheLogReadItMakesRoomFor(t *testing.T) {
	// One 1,500-byte message fills half of session_queue_bytes: the next
	// waits in the log until the one before is acknowledged.
	b, g := sqliteBroker(t, Options{SessionQueueBytes: 4 << 10})
	one, two := shardmates(b)
	sub, other := &ackClient{id: one}, &ackClient{id: two}
	connectAs(t, b, sub, true, 60, nil)
	b.Subscribe(sub, []byte("t"), delivery.SubscribeOptions{QoS: 1})
	b.Disconnected(sub, 60, true)
	connectAs(t, b, other, true, 60, nil)
	first, second := "1"+strings.Repeat("x", 1500), "2"+strings.Repeat("x", 1500)
	publish(b, "p", "t", first, 1, false)
	publish(b, "p", "t", second, 1, false)
	// Published while it was away: the resumed connection is served from
	// the log.
	sub = &ackClient{id: one}
	if present, _, _ := connectAs(t, b, sub, false, 60, nil); !present {
		t.Fatal("the session was not resumed")
	}
	sub.waitPayloads(t, first)
	sub.mu.Lock()
	ref := sub.refs[0]
	sub.mu.Unlock()
	g.armed.Store("ReadFrom")
	returnsWhileGated(t, "the PUBACK's Acked", func() { b.Acked(sub, ref) })
	within(t, "the log's read of the next delivery starting", g.entered)
	returnsWhileGated(t, "the subscriber's own Holds", func() { b.Holds(sub, 1) })
	returnsWhileGated(t, "another client's Acked", func() { b.Acked(other, logRef(1, "")) })
	returnsWhileGated(t, "another client's disconnect", func() { b.Disconnected(other, 60, true) })
	g.release()
	sub.waitPayloads(t, first, second)
}

// What a connected session waits for - a message published while its window
// was full - is handed over from memory by the PUBACK that makes room: the
// log is not read at all.
func TestWhatAConnectedSessionWaitsForIsHandedOverFromMemory(t *testing.T) {
	b, g := sqliteBroker(t, Options{SessionQueueBytes: 4 << 10})
	sub := &ackClient{id: "sub"}
	connectAs(t, b, sub, true, 60, nil)
	b.Subscribe(sub, []byte("t"), delivery.SubscribeOptions{QoS: 1})
	first, second := "1"+strings.Repeat("x", 1500), "2"+strings.Repeat("x", 1500)
	publish(b, "p", "t", first, 1, false)
	publish(b, "p", "t", second, 1, false)
	sub.waitPayloads(t, first)
	sub.mu.Lock()
	ref := sub.refs[0]
	sub.mu.Unlock()
	g.armed.Store("ReadFrom")
	returnsWhileGated(t, "the PUBACK's Acked", func() { b.Acked(sub, ref) })
	sub.waitPayloads(t, first, second)
	if g.armed.Load() != "ReadFrom" {
		t.Fatal("the next delivery was read from the log")
	}
}

// A CONNECT's record is stored with the shard lock let go: another client of
// the shard is never held by its commit, and the CONNECT is answered once
// the record is stored - for a session begun new (Put) and one resumed
// (Update).
func TestAConnectsRecordBeingStoredNeverHoldsAnotherClientOfItsShard(t *testing.T) {
	for _, write := range []string{"Put", "Update"} {
		t.Run(write, func(t *testing.T) {
			b, g := sqliteBroker(t, Options{})
			one, two := shardmates(b)
			other := &ackClient{id: two}
			connectAs(t, b, other, true, 60, nil)
			if write == "Update" {
				first := &ackClient{id: one}
				connectAs(t, b, first, true, 60, nil)
				b.Subscribe(first, []byte("t"), delivery.SubscribeOptions{QoS: 1})
				b.Disconnected(first, 60, true)
				b.later.wait()
			}
			slow := &ackClient{id: one}
			g.armed.Store(write)
			type answer struct {
				present bool
				code    codec.ReasonCode
			}
			answered := make(chan answer, 1)
			go func() {
				present, code, _ := connectAs(t, b, slow, write == "Put", 60, nil)
				answered <- answer{present, code}
			}()
			within(t, "the CONNECT's record write starting", g.entered)
			returnsWhileGated(t, "another client's Holds", func() { b.Holds(other, 1) })
			returnsWhileGated(t, "another client's Acked", func() { b.Acked(other, logRef(1, "")) })
			returnsWhileGated(t, "another client's disconnect", func() { b.Disconnected(other, 60, true) })
			select {
			case a := <-answered:
				t.Fatalf("the CONNECT was answered (%v, 0x%02x) before its record was stored", a.present, byte(a.code))
			default:
			}
			if write == "Update" {
				// Published while the record is being written: owed to the
				// session, handed over once it is connected.
				publish(b, "p", "t", "meanwhile", 1, false)
			}
			g.release()
			a := <-answered
			if a.code != codec.Success || a.present != (write == "Update") {
				t.Fatalf("CONNECT answered present %v 0x%02x", a.present, byte(a.code))
			}
			if write == "Update" {
				slow.waitPayloads(t, "meanwhile")
			}
			b.later.wait()
			if st, ok, err := g.Get(one); err != nil || !ok || !st.DisconnectedAt.IsZero() {
				t.Fatalf("stored %+v %v %v, want the connected session", st, ok, err)
			}
		})
	}
}

// A CONNECT for an id whose record another CONNECT is storing waits for it:
// it finds the session that one made and takes it over.
func TestASecondConnectWaitsForTheFirstsRecord(t *testing.T) {
	b, g := sqliteBroker(t, Options{})
	first := &fakeClient{id: "dev"}
	g.armed.Store("Put")
	firstDone := make(chan codec.ReasonCode, 1)
	go func() {
		_, code, _ := connectAs(t, b, first, true, 60, nil)
		firstDone <- code
	}()
	within(t, "the first CONNECT's record write starting", g.entered)
	secondDone := make(chan bool, 1)
	go func() {
		present, code, _ := connectAs(t, b, &ackClient{id: "dev"}, false, 60, nil)
		if code != codec.Success {
			t.Errorf("second CONNECT 0x%02x", byte(code))
		}
		secondDone <- present
	}()
	g.release()
	if code := <-firstDone; code != codec.Success {
		t.Fatalf("first CONNECT 0x%02x", byte(code))
	}
	if !<-secondDone {
		t.Fatal("the second CONNECT did not find the session the first stored")
	}
	first.mu.Lock()
	kicked := first.kicked
	first.mu.Unlock()
	if kicked != codec.SessionTakenOver {
		t.Fatalf("the first connection was kicked 0x%02x, want 0x8E", byte(kicked))
	}
}

// A shared group's backlog handed to a member that resumes is stored in the
// member's window with no shard lock held: neither the CONNECT nor another
// client of the shard waits for that commit, and the window holds the
// hand-over once it is made.
func TestASharedGroupsHandOverNeverHoldsAnotherClientOfItsShard(t *testing.T) {
	b, g := sqliteBroker(t, Options{})
	one, two := shardmates(b)
	member, other := &ackClient{id: one}, &ackClient{id: two}
	connectAs(t, b, member, true, 60, nil)
	if code, _ := b.Subscribe(member, []byte("$share/g/t"), delivery.SubscribeOptions{QoS: 1}); code.IsError() {
		t.Fatalf("SUBSCRIBE 0x%02x", byte(code))
	}
	b.Disconnected(member, 60, true)
	connectAs(t, b, other, true, 60, nil)
	publish(b, "p", "t", "held", 1, false) // the group's only member is away: held
	g.armed.Store("AddInFlight")
	member = &ackClient{id: one}
	returnsWhileGated(t, "the member's resuming CONNECT", func() { connectAs(t, b, member, false, 60, nil) })
	within(t, "the hand-over's write starting", g.entered)
	returnsWhileGated(t, "another client's Holds", func() { b.Holds(other, 1) })
	returnsWhileGated(t, "another client's Acked", func() { b.Acked(other, logRef(1, "")) })
	returnsWhileGated(t, "another client's disconnect", func() { b.Disconnected(other, 60, true) })
	g.release()
	member.waitPayloads(t, "held")
	b.later.wait()
	window, err := g.InFlight(one)
	if err != nil || len(window) != 1 || window[0].ShareGroup != "$share/g/t" {
		t.Fatalf("stored window %+v %v, want the group's hand-over", window, err)
	}
}
