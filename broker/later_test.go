package broker

import (
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"saguin/codec"
	"saguin/netloop"
	"saguin/store"
	"saguin/store/sqlite"
)

// gatedSessions is a sqlite session store whose first Update while armed
// waits for open: a disconnect's record write caught mid-commit, as a slow
// disk would hold it.
type gatedSessions struct {
	store.Sessions
	armed   atomic.Bool
	entered chan struct{} // the gated write has begun
	open    chan struct{} // closing it lets the write through
	once    sync.Once
}

func (g *gatedSessions) Update(x store.Session) error {
	if g.armed.CompareAndSwap(true, false) {
		close(g.entered)
		<-g.open
	}
	return g.Sessions.Update(x)
}

// release lets the gated write through, once.
func (g *gatedSessions) release() { g.once.Do(func() { close(g.open) }) }

// sqliteBroker starts a broker as cmd/saguin wires it on a sqlite provider
// in t.TempDir(): writes no client waits on leave the caller.
func sqliteBroker(t *testing.T, o Options) (*Broker, *gatedSessions) {
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
	g := &gatedSessions{Sessions: ss, entered: make(chan struct{}), open: make(chan struct{})}
	o.Sessions, o.Retained, o.SessionsWaitOnDisk, o.RetainedWaitOnDisk = g, r, true, true
	o.Logger = slog.New(slog.DiscardHandler)
	b := New(o)
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
func disconnectGated(t *testing.T, b *Broker, g *gatedSessions, c netloop.Client, expiry uint32, graceful bool) {
	t.Helper()
	g.armed.Store(true)
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
	b.Subscribe(c, []byte("old/#"), netloop.SubscribeOptions{QoS: 1})
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
	b, g := sqliteBroker(t, Options{})
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 1, nil)
	disconnectGated(t, b, g, c, 1, false)
	// The expiry ends it in memory while the disconnect's write still waits:
	// the timer queues the ending behind it rather than waiting on disk.
	deadline := time.Now().Add(5 * time.Second)
	for b.Sessions() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the session never expired")
		}
		time.Sleep(10 * time.Millisecond)
	}
	g.release()
	b.later.wait()
	if s, ok, err := g.Get("dev"); err != nil || ok {
		t.Fatalf("stored %+v %v %v after the session ended", s, ok, err)
	}
}
