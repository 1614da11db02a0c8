package broker

import (
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// waitCount waits for a count to read want: a Will goes out on its own
// goroutine, so its count moves a moment after the caller returns.
func waitCount(t *testing.T, what string, load func() uint64, want uint64) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		got := load()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s counted %d, want %d", what, got, want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestAPublishNobodySubscribesToCountsAsBroadcastUnmatched(t *testing.T) {
	b := newTestBroker(t, Options{})
	s := &fakeClient{id: "s"}
	connect(b, s, true, 0)
	subscribe(b, s, "heard/#", delivery.SubscribeOptions{QoS: 1})
	p := &fakeClient{id: "p"}
	pub(b, p, "heard/1", "x", false)
	pub(b, p, "event/x", "mistyped", false)
	if n := b.Counters().BroadcastUnmatched.Load(); n != 1 {
		t.Fatalf("broadcast unmatched counted %d, want 1", n)
	}
}

func TestARefusedPublishIsCountedUnderItsReason(t *testing.T) {
	b := newTestBroker(t, Options{PublishRate: 1, QoS2MaxInflight: 1})
	c := &fakeClient{id: "dev"}
	connect(b, c, true, 0)
	cases := []struct {
		p    *codec.Publish
		want codec.ReasonCode
	}{
		{&codec.Publish{QoS: 2, PacketID: 1, Topic: []byte("q2")}, codec.Success},
		{&codec.Publish{QoS: 1, Topic: []byte("over/rate")}, codec.QuotaExceeded},
	}
	for i, x := range cases {
		if code, _ := b.Publish(c, x.p); code != x.want {
			t.Fatalf("publish %d answered 0x%02x, want 0x%02x", i, byte(code), byte(x.want))
		}
	}
	other := &fakeClient{id: "other"}
	connect(b, other, true, 0)
	b.opts.PublishRate = 0
	b.budgets = nil // no rate from here: each refusal below has one reason
	refusals := []*codec.Publish{
		{QoS: 2, PacketID: 2, Topic: []byte("q2")}, // c already holds one exchange
		{QoS: 0, Topic: []byte("$saguin/x")},
		{QoS: 1, Topic: []byte("$SYS/x")}, // RFC 0005 counts this one nowhere
	}
	from := []delivery.Client{c, other, other}
	for i, p := range refusals {
		if code, _ := b.Publish(from[i], p); !code.IsError() {
			t.Fatalf("refusal %d was accepted", i)
		}
	}
	got := map[string]uint64{}
	b.Counters().PublishRefused.Each(func(r delivery.Reason, n uint64) { got[r.String()] = n })
	want := map[string]uint64{"publish rate exceeded": 1, "inflight allowance exceeded": 1, "topic name invalid": 1}
	if len(got) != len(want) {
		t.Fatalf("publish refused %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Fatalf("publish refused %v, want %v", got, want)
		}
	}
}

func TestSubscriptionsCountsEveryFilterHeldUntilItGoes(t *testing.T) {
	b := newTestBroker(t, Options{})
	c := &fakeClient{id: "dev"}
	connect(b, c, true, 60)
	subscribe(b, c, "a", delivery.SubscribeOptions{QoS: 1})
	subscribe(b, c, "a", delivery.SubscribeOptions{QoS: 0}) // replaces, adds none
	subscribe(b, c, "b/#", delivery.SubscribeOptions{QoS: 1})
	subscribe(b, c, "$SYS/#", delivery.SubscribeOptions{QoS: 1}) // refused, held nowhere
	if n := b.Counters().Subscriptions.Load(); n != 2 {
		t.Fatalf("subscriptions %d after two filters, want 2", n)
	}
	b.Unsubscribe(c, []byte("a"))
	if n := b.Counters().Subscriptions.Load(); n != 1 {
		t.Fatalf("subscriptions %d after an UNSUBSCRIBE, want 1", n)
	}
	connect(b, &fakeClient{id: "dev"}, true, 0) // a clean start ends the session
	if n := b.Counters().Subscriptions.Load(); n != 0 {
		t.Fatalf("subscriptions %d after the session ended, want 0", n)
	}
}

func TestWillsPublishedAreCountedByWhatMadeThemDue(t *testing.T) {
	b := newStores(t, 0).broker(t, Options{})
	w := watcher(t, b, "status/#")
	dies := &ackClient{id: "dies"}
	connectAs(t, b, dies, true, 60, willOn("status/dies", "gone", 0))
	b.Disconnected(dies, 60, false)
	w.waitPayloads(t, "gone") // each Will goes out on its own goroutine: one at a time keeps the order
	brief := &ackClient{id: "brief"}
	connectAs(t, b, brief, true, 0, willOn("status/brief", "ended", 30))
	b.Disconnected(brief, 0, false) // a delay the session cannot outlast
	w.waitPayloads(t, "gone", "ended")
	wp := &b.Counters().WillsPublished
	waitCount(t, "wills published immediate", wp[WillImmediate].Load, 1)
	waitCount(t, "wills published session_ended", wp[WillSessionEnded].Load, 1)
	if d, s := wp[WillDelayed].Load(), wp[WillStart].Load(); d != 0 || s != 0 {
		t.Fatalf("delayed %d, start %d: want 0 and 0", d, s)
	}
}

func TestAResumeInsideTheWillDelayCountsAsWillCancelled(t *testing.T) {
	b := newStores(t, 0).broker(t, Options{})
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, will(30))
	b.Disconnected(c, 60, false)
	if got := b.Census().WillsWaiting; got != 1 {
		t.Fatalf("wills waiting %d, want 1", got)
	}
	connectAs(t, b, &ackClient{id: "dev"}, false, 60, nil)
	if n := b.Counters().WillsCancelled.Load(); n != 1 {
		t.Fatalf("wills cancelled counted %d, want 1", n)
	}
	if got := b.Census().WillsWaiting; got != 0 {
		t.Fatalf("wills waiting %d after the resume, want 0", got)
	}
}

func TestCensusCountsSessionsHeldWithNothingConnected(t *testing.T) {
	b := newStores(t, 0).broker(t, Options{})
	away, here := &ackClient{id: "away"}, &ackClient{id: "here"}
	connectAs(t, b, away, true, 60, nil)
	connectAs(t, b, here, true, 60, nil)
	b.Disconnected(away, 60, false)
	brief := &ackClient{id: "brief"}
	connectAs(t, b, brief, true, 0, nil)
	b.Disconnected(brief, 0, false) // ends with its connection: not held
	if got := b.Census().SessionsOffline; got != 1 {
		t.Fatalf("sessions offline %d, want 1", got)
	}
}

func TestRetainedMessagesCountsOneValuePerTopic(t *testing.T) {
	b := newTestBroker(t, Options{})
	p := &fakeClient{id: "p"}
	pub(b, p, "r/1", "a", true)
	pub(b, p, "r/1", "b", true) // replaces
	pub(b, p, "r/2", "c", true)
	pub(b, p, "r/3", "d", false)
	if n := b.RetainedMessages(); n != 2 {
		t.Fatalf("retained messages %d, want 2", n)
	}
	pub(b, p, "r/2", "", true) // a zero-length value deletes
	if n := b.RetainedMessages(); n != 1 {
		t.Fatalf("retained messages %d after a delete, want 1", n)
	}
}

func TestASharedGroupsBacklogCountsWhatItHeldDrainedAndDropped(t *testing.T) {
	b := newStores(t, 0).broker(t, Options{})
	m := shareMember(t, b, "m-a", 60)
	b.Disconnected(m, 60, false)
	publish(b, "p", "jobs/1", "1", 1, false)
	publish(b, "p", "jobs/2", "2", 1, false)
	cs := b.Counters()
	if n := cs.SharesHeld.Load(); n != 2 {
		t.Fatalf("shares held %d, want 2", n)
	}
	back := &ackClient{id: "m-a"}
	connectAs(t, b, back, false, 60, nil)
	back.waitPayloads(t, "1", "2")
	if n := cs.SharesDrained.Load(); n != 2 {
		t.Fatalf("shares drained %d, want 2", n)
	}
	b.Disconnected(back, 60, false)
	publish(b, "p", "jobs/3", "3", 1, false)
	connectAs(t, b, &ackClient{id: "m-a"}, true, 0, nil) // a clean start: the last member leaves
	if n := cs.SharesDroppedNoMemberLeft.Load(); n != 1 {
		t.Fatalf("shares dropped no_member_left %d, want 1", n)
	}
}

func TestASharedDeliveryNoMemberCanTakeCountsAsNoSharedMember(t *testing.T) {
	b := newStores(t, 0).broker(t, Options{})
	m := shareMember(t, b, "m-a", 0)
	full := &refusingClient{ackClient: ackClient{id: "m-b"}}
	connectAs(t, b, full, true, 0, nil)
	b.Subscribe(full, []byte("$share/g/jobs/#"), delivery.SubscribeOptions{QoS: 1})
	b.Disconnected(m, 0, false)
	publish(b, "p", "jobs/1", "lost", 1, false)
	if n := b.Counters().SharesDroppedNoMember.Load(); n != 1 {
		t.Fatalf("no_shared_member counted %d, want 1", n)
	}
}
