package broker

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// windowClient is a member with a Receive Maximum window: it can take a QoS
// 1 delivery only while it holds fewer than max unacknowledged, and, while
// shut, none (delivery.Client.CanTake).
type windowClient struct {
	ackClient
	max    int
	shut   atomic.Bool
	wmu    sync.Mutex
	unacks []delivery.Ref // the deliveries it holds unacknowledged, oldest first
}

func (w *windowClient) CanTake(_ *delivery.Message, d delivery.Delivery) bool {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	return !w.shut.Load() && (d.QoS == 0 || len(w.unacks) < w.max)
}

func (w *windowClient) Deliver(m *delivery.Message, d delivery.Delivery) bool {
	w.wmu.Lock()
	w.unacks = append(w.unacks, d.Ref)
	w.wmu.Unlock()
	return w.ackClient.Deliver(m, d)
}

// ack acknowledges the oldest delivery it holds, as its PUBACK would.
func (w *windowClient) ack(t *testing.T, b *Broker) {
	t.Helper()
	w.wmu.Lock()
	if len(w.unacks) == 0 {
		w.wmu.Unlock()
		t.Fatalf("%s holds nothing to acknowledge", w.id)
	}
	off := w.unacks[0]
	w.unacks = w.unacks[1:]
	w.wmu.Unlock()
	b.Acked(w, off)
}

func windowMember(t *testing.T, b *Broker, id string, expiry uint32, max int) *windowClient {
	t.Helper()
	w := &windowClient{ackClient: ackClient{id: id}, max: max}
	connectAs(t, b, w, true, expiry, nil)
	if code, why := b.Subscribe(w, []byte("$share/g/jobs/#"), delivery.SubscribeOptions{QoS: 1}); code != codec.GrantedQoS1 {
		t.Fatalf("SUBACK 0x%02x (%s)", byte(code), why)
	}
	return w
}

func TestAGroupsBacklogDrainsAsSoonAsAMembersAcknowledgementOpensItsWindow(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{})
	a := windowMember(t, b, "m-a", 60, 1) // outlives its connection: the group holds
	c := windowMember(t, b, "m-b", 0, 1)
	for _, p := range []string{"1", "2", "3", "4", "5", "6"} {
		publish(b, "p", "jobs/x", p, 1, false)
	}
	a.waitPayloads(t, "1")
	c.waitPayloads(t, "2")
	if n := b.Counters().SharesHeld.Load(); n != 4 {
		t.Fatalf("held %d while both windows were full, want 4", n)
	}
	// Each acknowledgement gives the window place back; the backlog's head
	// goes to the member whose turn it is among those that can take it.
	a.ack(t, b)
	a.waitPayloads(t, "1", "3")
	c.ack(t, b)
	c.waitPayloads(t, "2", "4")
	a.ack(t, b)
	a.waitPayloads(t, "1", "3", "5")
	c.ack(t, b)
	c.waitPayloads(t, "2", "4", "6")
	a.ack(t, b)
	c.ack(t, b)
	waitCount(t, "shared deliveries drained", b.Counters().SharesDrained.Load, 4)
	b.Close()
	if n := st.sessions.Log().Len(); n != 0 {
		t.Fatalf("the log still holds %d messages every member acknowledged", n)
	}
}

func TestMessagesPublishedWhileAGroupHoldsABacklogJoinItsBack(t *testing.T) {
	b := newStores(t, 0).broker(t, Options{})
	a := windowMember(t, b, "m-a", 60, 10)
	a.shut.Store(true)
	publish(b, "p", "jobs/x", "1", 1, false)
	publish(b, "p", "jobs/x", "2", 1, false)
	a.shut.Store(false) // it could take now, but nothing has told the group
	publish(b, "p", "jobs/x", "3", 1, false)
	b.Acked(a, logRef(0, jobsGroup)) // ... until an acknowledgement does (one handed from memory)
	a.waitPayloads(t, "1", "2", "3")
}

// gatedLog holds the next ReadFrom, once armed, until released.
type gatedLog struct {
	store.BroadcastLog
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (l *gatedLog) ReadFrom(from uint64, max int, dst []store.BroadcastEntry) ([]store.BroadcastEntry, error) {
	if l.armed.CompareAndSwap(true, false) {
		close(l.entered)
		<-l.release
	}
	return l.BroadcastLog.ReadFrom(from, max, dst)
}

type gatedSessions struct {
	store.Sessions
	log *gatedLog
}

func (s gatedSessions) Log() store.BroadcastLog { return s.log }

func TestCloseWaitsForAGroupsDrainBeforeItReturns(t *testing.T) {
	st := newStores(t, 0)
	gl := &gatedLog{BroadcastLog: st.sessions.Log(), entered: make(chan struct{}), release: make(chan struct{})}
	st.sessions = gatedSessions{st.sessions, gl}
	b := st.broker(t, Options{})
	a := windowMember(t, b, "m-a", 60, 1)
	publish(b, "p", "jobs/x", "1", 1, false)
	publish(b, "p", "jobs/x", "2", 1, false) // held: the window is full
	gl.armed.Store(true)
	a.ack(t, b)
	select {
	case <-gl.entered:
	case <-time.After(3 * time.Second):
		t.Fatal("no drain of the group's backlog read the log after the member's acknowledgement")
	}
	closed := make(chan struct{})
	go func() { b.Close(); close(closed) }()
	select {
	case <-closed:
		close(gl.release)
		t.Fatal("Close returned while a drain was still reading the store")
	case <-time.After(200 * time.Millisecond):
		// Still waiting, as it must: nothing can show it never returns early.
	}
	close(gl.release)
	<-closed
	if got := a.payloads(); !slices.Equal(got, []string{"1"}) && !slices.Equal(got, []string{"1", "2"}) {
		t.Fatalf("delivered %q", got)
	}
}
