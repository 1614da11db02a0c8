package latest

import (
	"sort"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker/channel"
	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

func filterOf(filter string, opts delivery.SubscribeOptions, isNew bool, props []codec.UserProperty) engine.Filter {
	return engine.Filter{Filter: filter, Inner: filter, Options: opts, New: isNew, Properties: props}
}

var qos1 = delivery.SubscribeOptions{QoS: 1}

func byTopic(g []got) []got {
	sort.Slice(g, func(i, j int) bool { return g[i].topic < g[j].topic })
	return g
}

// B1.1-5: each value and each deletion takes a new offset from the one
// counter; deleting what holds no value stores nothing.
func TestSetReplaceDeleteTakeOffsetsAndDeletingNothingStoresNothing(t *testing.T) {
	g := newRig(t, nil)
	g.publish("state/a", "1", false)
	g.publish("state/a", "2", false)
	g.publish("state/b", "x", false)
	g.publish("state/a", "", false) // delete
	if v, ok, _ := g.st.Get("state/a"); !ok || !v.Deleted || v.Offset != 4 {
		t.Fatalf("state/a after a delete = %+v %v, want a tombstone at offset 4", v, ok)
	}
	g.publish("state/a", "", false) // deleting a deletion
	g.publish("state/never", "", false)
	if n := g.st.Next(); n != 5 {
		t.Fatalf("next = %d after deleting nothing twice, want 5 (nothing stored)", n)
	}
	if _, ok, _ := g.e.Get("state/a"); ok {
		t.Fatal("a point read found the deleted value")
	}
	if v, ok, _ := g.e.Get("state/b"); !ok || string(v.Payload) != "x" || v.Offset != 3 {
		t.Fatalf("point read state/b = %+v %v", v, ok)
	}
	if n := g.e.Counters().Published.Load(); n != 4 {
		t.Fatalf("published = %d, want 4 (a deletion of nothing is not a write)", n)
	}
	if g.e.Records() != 2 {
		t.Fatalf("records = %d, want 2 (a value and a tombstone)", g.e.Records())
	}
}

// B3.1-2, B3.5, B2.1: the state pass sends every current value with RETAIN
// (even where no publisher set it); deletions only with saguin-deletions.
func TestStatePassCarriesRetainAndDeletionsOnlyWhenAsked(t *testing.T) {
	g := newRig(t, nil)
	g.publish("state/a", "1", false)
	g.publish("state/b", "2", true)
	g.publish("state/c", "3", false)
	g.publish("state/c", "", false)
	plain := g.connect("plain")
	g.subscribe(testSession{id: "plain"}, "state/#", delivery.SubscribeOptions{QoS: 1, RetainAsPublished: true}, true)
	got := byTopic(waitCount(t, plain, 2))
	g.settled("plain")
	if extra := plain.take(); len(extra) > 0 {
		t.Fatalf("a deletion went into a state pass without saguin-deletions: %+v", extra)
	}
	if len(got) != 2 || got[0].topic != "state/a" || got[1].topic != "state/b" || !got[0].retain || !got[1].retain {
		t.Fatalf("state pass = %+v, want state/a and state/b, both with RETAIN", got)
	}
	del := g.connect("del")
	g.subscribe(testSession{id: "del"}, "state/#", qos1, true, codec.UserProperty{Key: []byte(channel.DeletionsKey), Value: []byte("whatever")})
	got = byTopic(waitCount(t, del, 3))
	if got[2].topic != "state/c" || got[2].payload != "" || got[2].offset != 4 || !got[2].retain {
		t.Fatalf("deletion in the pass = %+v, want state/c empty at offset 4 with RETAIN", got[2])
	}
}

// B4.1-2: changes go without RETAIN unless Retain As Published; a live
// deletion reaches every subscriber.
func TestLiveChangesWithoutRetainUnlessRetainAsPublished(t *testing.T) {
	g := newRig(t, nil)
	plain, rap := g.connect("plain"), g.connect("rap")
	g.subscribe(testSession{id: "plain"}, "state/#", qos1, true)
	g.subscribe(testSession{id: "rap"}, "state/#", delivery.SubscribeOptions{QoS: 1, RetainAsPublished: true}, true)
	g.settled("plain")
	g.settled("rap")
	g.publish("state/a", "1", true)
	p, r := waitCount(t, plain, 1), waitCount(t, rap, 1)
	g.publish("state/a", "", false)
	p, r = append(p, waitCount(t, plain, 1)...), append(r, waitCount(t, rap, 1)...)
	if p[0].retain || p[1].retain {
		t.Fatalf("plain subscriber's changes = %+v, want no RETAIN", p)
	}
	if !r[0].retain || r[1].retain {
		t.Fatalf("RAP subscriber's changes = %+v, want the publisher's flags (true, false)", r)
	}
	if p[1].payload != "" || p[1].offset != 2 {
		t.Fatalf("live deletion = %+v, want an empty payload at offset 2", p[1])
	}
}

// B3.7: Retain Handling 1 sends the state only for a new subscription, 2
// never; neither moves anything.
func TestRetainHandlingGovernsTheStatePass(t *testing.T) {
	g := newRig(t, nil)
	g.publish("state/a", "1", false)
	c := g.connect("c")
	s := testSession{id: "c"}
	g.subscribe(s, "state/#", delivery.SubscribeOptions{QoS: 1, RetainHandling: 1}, false)
	g.subscribe(s, "state/#", delivery.SubscribeOptions{QoS: 1, RetainHandling: 2}, true)
	g.settled("c")
	if n := c.count(); n != 0 {
		t.Fatalf("RH 1 on an existing subscription and RH 2 sent %d values", n)
	}
	g.subscribe(s, "state/#", delivery.SubscribeOptions{QoS: 1, RetainHandling: 1}, true)
	if got := waitCount(t, c, 1); !got[0].retain || got[0].payload != "1" {
		t.Fatalf("RH 1 new subscription = %+v", got)
	}
	g.ack(s, c, 1)
	g.subscribe(s, "state/#", delivery.SubscribeOptions{QoS: 1}, false)
	if got := waitCount(t, c, 1); got[0].payload != "1" {
		t.Fatalf("RH 0 on a re-subscribe = %+v, want the full state again", got)
	}
}

// B4.4: at most one value per topic waits; a newer one replaces it and is
// counted as superseded. The window opening sends only the newest.
func TestOneValueWaitsPerTopicAndANewerSupersedesIt(t *testing.T) {
	g := newRig(t, nil)
	c := g.connect("c")
	s := testSession{id: "c"}
	g.subscribe(s, "state/#", qos1, true)
	g.settled("c")
	c.setWindow(0)
	g.publish("state/a", "1", false)
	g.clk.WaitArmed(1) // the routine waits for room
	g.publish("state/a", "2", false)
	g.publish("state/a", "3", false)
	g.publish("state/b", "b", false)
	if n := g.e.Counters().Superseded.Load(); n != 2 {
		t.Fatalf("superseded = %d, want 2", n)
	}
	c.setWindow(10)
	g.clk.Advance(pollEvery)
	got := waitCount(t, c, 2)
	if got[0].topic != "state/a" || got[0].payload != "3" || got[1].topic != "state/b" {
		t.Fatalf("after the window opened = %+v, want state/a=3 then state/b", got)
	}
	g.settled("c")
	if extra := c.take(); len(extra) != 0 {
		t.Fatalf("older values followed: %+v", extra)
	}
}

// B4.3: a value older than one already handed to the subscriber is never
// sent, live or in a pass.
func TestNeverAnOlderValueAfterANewerOne(t *testing.T) {
	g := newRig(t, nil)
	c := g.connect("c")
	s := testSession{id: "c"}
	g.subscribe(s, "state/#", qos1, true)
	g.settled("c")
	g.publish("state/a", "new", false) // offset 1
	waitCount(t, c, 1)
	// A slower writer's older value of the same topic reaches the fan-out
	// after the newer one was handed out.
	g.e.mu.Lock()
	g.e.fanOut(store.Value{Record: store.Record{Topic: "state/a", Offset: 1, Payload: []byte("old")}})
	g.e.mu.Unlock()
	g.publish("state/b", "b", false)
	got := waitCount(t, c, 1)
	if got[0].topic != "state/b" {
		t.Fatalf("after the newer value: %+v, want only state/b", got)
	}
}

// B5.1-3, B5.9: a resumed session with no new SUBSCRIBE is sent only the
// topics that changed while it was away, with RETAIN.
func TestResumeSendsOnlyWhatChangedWhileAway(t *testing.T) {
	g := newRig(t, nil)
	for _, k := range []string{"a", "b", "c"} {
		g.publish("state/"+k, "1", false)
	}
	s := testSession{id: "c", kept: true}
	c := g.connect("c")
	g.subscribe(s, "state/#", qos1, true)
	waitCount(t, c, 3)
	g.ack(s, c, 1, 2, 3)
	g.e.Detach(s)
	g.publish("state/b", "2", false)
	g.publish("state/b", "3", false)
	c2 := &testClient{id: "c", version: 5, window: 10}
	g.e.Resume(s, c2, nil)
	got := waitCount(t, c2, 1)
	g.settled("c")
	if extra := c2.take(); len(got) != 1 || got[0].topic != "state/b" || got[0].payload != "3" || len(extra) != 0 {
		t.Fatalf("resume sent %+v then %+v, want only state/b=3", got, extra)
	}
}

// B5.6: a QoS 0 subscription gets the full state at every resume.
func TestResumeOfAQoS0SubscriptionSendsTheFullState(t *testing.T) {
	g := newRig(t, nil)
	g.publish("state/a", "1", false)
	g.publish("state/b", "1", false)
	s := testSession{id: "c", kept: true}
	c := g.connect("c")
	g.subscribe(s, "state/#", delivery.SubscribeOptions{QoS: 0}, true)
	waitCount(t, c, 2)
	g.e.Detach(s)
	c2 := &testClient{id: "c", version: 5, window: 10}
	g.e.Resume(s, c2, nil)
	if got := waitCount(t, c2, 2); len(got) != 2 {
		t.Fatalf("QoS 0 resume = %+v", got)
	}
}

// B5.7: a session restored at a broker start has no mark: its resume is the
// full state.
func TestAfterARestartTheResumeSendsTheFullState(t *testing.T) {
	g := newRig(t, nil)
	g.publish("state/a", "1", false)
	g.publish("state/b", "1", false)
	s := testSession{id: "c", kept: true, restoring: true}
	g.subscribe(s, "state/#", qos1, false)
	c := &testClient{id: "c", version: 5, window: 10}
	g.e.Resume(testSession{id: "c", kept: true}, c, nil)
	if got := waitCount(t, c, 2); !got[0].retain {
		t.Fatalf("restart resume = %+v, want the state with RETAIN", got)
	}
}

// B5.4: a value still waiting when the connection dropped holds the mark
// below it, so the resume sends it.
func TestAValueWaitingAtDisconnectIsSentAtResume(t *testing.T) {
	g := newRig(t, nil)
	s := testSession{id: "c", kept: true}
	c := g.connect("c")
	g.subscribe(s, "state/#", qos1, true)
	g.settled("c")
	c.setWindow(0)
	g.publish("state/a", "waiting", false)
	g.clk.WaitArmed(1)
	g.e.Detach(s)
	g.clk.Advance(pollEvery)
	c2 := &testClient{id: "c", version: 5, window: 10}
	g.e.Resume(s, c2, nil)
	if got := waitCount(t, c2, 1); got[0].payload != "waiting" {
		t.Fatalf("resume = %+v, want the value that was waiting", got)
	}
}

// B6.1-2: a carried delivery superseded in the store is dropped before
// anything is re-sent; a still-current one is re-sent; the current value
// follows.
func TestResumeDropsCarriedValuesSupersededSinceAndResendsCurrentOnes(t *testing.T) {
	g := newRig(t, nil)
	g.publish("state/a", "1", false) // 1
	g.publish("state/b", "1", false) // 2
	s := testSession{id: "c", kept: true}
	c := g.connect("c")
	g.subscribe(s, "state/#", qos1, true)
	waitCount(t, c, 2)
	g.e.Detach(s)
	g.publish("state/a", "2", false) // 3 supersedes 1
	carried := []delivery.Unfinished{
		{Msg: delivery.NewMessage(&codec.Publish{Topic: []byte("state/a"), Payload: []byte("1")}, time.Now),
			Delivery: delivery.Delivery{QoS: 1, PacketID: 7, Dup: true, Ref: delivery.Ref{Kind: delivery.KindLatest, N: 1, Name: "state"}}},
		{Msg: delivery.NewMessage(&codec.Publish{Topic: []byte("state/b"), Payload: []byte("1")}, time.Now),
			Delivery: delivery.Delivery{QoS: 1, PacketID: 8, Dup: true, Ref: delivery.Ref{Kind: delivery.KindLatest, N: 2, Name: "state"}}},
	}
	c2 := &testClient{id: "c", version: 5, window: 10}
	g.e.Resume(s, c2, carried)
	got := waitCount(t, c2, 2)
	g.settled("c")
	got = append(got, c2.take()...)
	if len(got) != 2 || got[0].topic != "state/b" || got[0].offset != 2 || got[1].topic != "state/a" || got[1].payload != "2" {
		t.Fatalf("resume = %+v, want state/b re-sent (current) then state/a=2, never state/a=1", got)
	}
}

// B4.7: the size is judged at the QoS the value goes at - a value that
// fits at QoS 0 but not with a QoS 1 packet identifier is too large for a
// QoS 1 subscriber, not a value waiting for room.
func TestAValueOverTheBoundOnlyByItsPacketIdentifierIsTooLarge(t *testing.T) {
	g := newRig(t, nil)
	c := g.connect("c")
	c.maxPkt = len("state/edge") + 10 + 1 // 1 byte short of QoS 1's identifier
	g.subscribe(testSession{id: "c"}, "state/#", qos1, true)
	g.settled("c")
	g.publish("state/edge", "0123456789", false)
	g.settled("c") // a routine left waiting for room never settles
	if c.kick() != codec.PacketTooLarge {
		t.Fatalf("kicked with %v, want 0x95", c.kick())
	}
	if n := c.count(); n != 0 {
		t.Fatalf("%d values delivered, want none", n)
	}
}

// B4.7, B5.4: a value too large for the subscriber disconnects it with
// 0x95, is recorded undelivered, and holds the mark below it.
func TestAValueTooLargeDisconnectsWith0x95AndHoldsTheMark(t *testing.T) {
	g := newRig(t, nil)
	s := testSession{id: "c", kept: true}
	c := g.connect("c")
	c.maxPkt = 20
	g.subscribe(s, "state/#", qos1, true)
	g.settled("c")
	g.publish("state/big", "0123456789abcdefghij", false)
	deadline := time.Now().Add(5 * time.Second)
	for c.kick() != codec.PacketTooLarge {
		if time.Now().After(deadline) {
			t.Fatalf("kicked with %v, want 0x95", c.kick())
		}
		time.Sleep(time.Millisecond)
	}
	g.e.Detach(s)
	g.publish("state/small", "s", false)
	c2 := &testClient{id: "c", version: 5, window: 10}
	g.e.Resume(s, c2, nil)
	got := byTopic(waitCount(t, c2, 2))
	if got[0].topic != "state/big" || got[1].topic != "state/small" {
		t.Fatalf("resume after a missed value = %+v, want the missed one re-sent with the change", got)
	}
}

// B3.9, B7.1: a value past retention_period is not served - not in the pass,
// not while waiting, not by a point read; a tombstone lives on
// deletion_retention_period.
func TestValuesPastTheirPeriodAreNeverServed(t *testing.T) {
	g := newRig(t, func(c *Config) { c.RetentionPeriod = time.Hour; c.DeletionRetentionPeriod = 2 * time.Hour })
	g.publish("state/old", "1", false)
	g.publish("state/gone", "1", false)
	g.publish("state/gone", "", false)
	g.clk.Advance(time.Hour - time.Millisecond)
	if _, ok, _ := g.e.Get("state/old"); !ok {
		t.Fatal("a value a millisecond inside its period was not served")
	}
	g.publish("state/new", "1", false)
	g.clk.Advance(time.Millisecond)
	if _, ok, _ := g.e.Get("state/old"); ok {
		t.Fatal("a value at its period was served by a point read")
	}
	c := g.connect("c")
	g.subscribe(testSession{id: "c"}, "state/#", qos1, true, codec.UserProperty{Key: []byte(channel.DeletionsKey)})
	got := byTopic(waitCount(t, c, 2))
	g.settled("c")
	if got[0].topic != "state/gone" || got[1].topic != "state/new" || c.count() != 0 {
		t.Fatalf("pass = %+v, want the tombstone (inside its 2h) and state/new, not state/old", got)
	}
	g.clk.Advance(time.Hour)
	d := g.connect("d")
	g.subscribe(testSession{id: "d"}, "state/#", qos1, true, codec.UserProperty{Key: []byte(channel.DeletionsKey)})
	g.settled("d")
	if got := d.take(); len(got) != 0 {
		t.Fatalf("pass after both periods = %+v, want nothing", got)
	}
}

// B4.6, A2.16: in flight per reader is bounded by half of
// session_queue_bytes; the rest waits, none lost, and goes as acks free room.
func TestALargeStatePassWaitsWithinHalfTheSessionBound(t *testing.T) {
	g := newRig(t, func(c *Config) { c.SessionQueueBytes = 2000 })
	const n = 600
	payload := string(make([]byte, 90))
	for i := 0; i < n; i++ {
		g.publish("state/"+string(rune('a'+i%26))+"/"+itoa(i), payload, false)
	}
	s := testSession{id: "c"}
	c := g.connect("c")
	c.setWindow(1 << 20)
	g.subscribe(s, "state/#", qos1, true)
	seen := map[string]bool{}
	deadline := time.Now().Add(10 * time.Second)
	for len(seen) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d values arrived", len(seen), n)
		}
		batch := c.take() // everything taken before was acknowledged
		if len(batch) == 0 {
			time.Sleep(time.Millisecond)
			continue
		}
		if len(batch) > 10 {
			t.Fatalf("%d values in flight at once, want at most 1000 bytes' worth", len(batch))
		}
		for _, x := range batch {
			seen[x.topic] = true
			g.ack(s, c, x.offset)
		}
	}
}

func itoa(i int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
		if i == 0 {
			return string(b)
		}
	}
}

// B9.1: a shared group is served changes only, one member each, no state
// pass.
func TestASharedGroupGetsChangesOnlySplitAcrossMembers(t *testing.T) {
	g := newRig(t, nil)
	g.publish("state/a", "before", false)
	m1, m2 := g.connect("m1"), g.connect("m2")
	for _, id := range []string{"m1", "m2"} {
		f := engine.Filter{Filter: "$share/g/state/#", Inner: "state/#", Share: "g", Options: qos1, New: true}
		if code, _ := g.e.Subscribe(testSession{id: id}, f); code != codec.Success {
			t.Fatal(code)
		}
	}
	g.settled("m1")
	g.settled("m2")
	if m1.count()+m2.count() != 0 {
		t.Fatal("a shared subscription was sent the state")
	}
	g.publish("state/a", "1", false)
	g.publish("state/b", "2", false)
	a, b := waitCount(t, m1, 1), waitCount(t, m2, 1)
	if a[0].retain || b[0].retain || a[0].topic == b[0].topic {
		t.Fatalf("members got %+v and %+v, want one change each without RETAIN", a, b)
	}
}

// B3.8: a 3.1.1 subscriber's state pass carries RETAIN as MQTT 5's does.
func TestA311SubscriberGetsTheStateWithRetain(t *testing.T) {
	g := newRig(t, nil)
	g.publish("state/a", "1", false)
	c := g.connect("c")
	c.version = 4
	g.subscribe(testSession{id: "c"}, "state/#", qos1, true)
	if got := waitCount(t, c, 1); !got[0].retain {
		t.Fatalf("3.1.1 pass = %+v", got)
	}
}

// Subscription Identifiers of every matching subscription, one delivery.
func TestOneDeliveryCarriesEveryMatchingSubscriptionsIdentifier(t *testing.T) {
	g := newRig(t, nil)
	c := g.connect("c")
	s := testSession{id: "c"}
	g.subscribe(s, "state/#", delivery.SubscribeOptions{QoS: 1, SubscriptionID: 1, RetainHandling: 2}, true)
	g.subscribe(s, "state/+", delivery.SubscribeOptions{QoS: 0, SubscriptionID: 2, RetainHandling: 2}, true)
	g.publish("state/a", "1", false)
	got := waitCount(t, c, 1)
	g.settled("c")
	sort.Slice(got[0].ids, func(i, j int) bool { return got[0].ids[i] < got[0].ids[j] })
	if c.count() != 0 || len(got[0].ids) != 2 || got[0].qos != 1 {
		t.Fatalf("got %+v, want one QoS 1 delivery with ids 1 and 2", got)
	}
}

// B5.4, A2.18: a value the acl_file refuses the subscriber is not sent,
// and holds the mark below it: the resume sends it once the grant is back.
func TestAValueRefusedByTheACLIsHeldBelowTheMark(t *testing.T) {
	g := newRig(t, nil)
	s := testSession{id: "c", kept: true}
	c := g.connect("c")
	g.subscribe(s, "state/#", qos1, true)
	g.settled("c")
	g.host.mu.Lock()
	g.host.denied["c state/secret"] = true
	g.host.mu.Unlock()
	g.publish("state/secret", "s", false)
	g.publish("state/open", "o", false)
	if got := waitCount(t, c, 1); got[0].topic != "state/open" {
		t.Fatalf("got %+v, want only state/open", got)
	}
	g.ack(s, c, 2)
	g.e.Detach(s)
	g.host.mu.Lock()
	delete(g.host.denied, "c state/secret")
	g.host.mu.Unlock()
	c2 := &testClient{id: "c", version: 5, window: 10}
	g.e.Resume(s, c2, nil)
	if got := waitCount(t, c2, 1); got[0].topic != "state/secret" {
		t.Fatalf("resume = %+v, want the refused value", got)
	}
}

// RFC 0002 "What a refused client sees": the re-read granting a refused
// value back is itself what sends it to the connected subscriber - no
// resume, no new value - and what it was handed meanwhile is not sent again.
func TestARefusedValueIsSentWhenAReReadGrantsItBack(t *testing.T) {
	g := newRig(t, nil)
	if err := g.e.Restore(); err != nil {
		t.Fatal(err)
	}
	s := testSession{id: "c", kept: true}
	c := g.connect("c")
	g.subscribe(s, "state/#", qos1, true)
	g.settled("c")
	g.host.mu.Lock()
	g.host.denied["c state/secret"] = true
	g.host.mu.Unlock()
	g.publish("state/secret", "s", false)
	g.publish("state/open", "o", false)
	if got := waitCount(t, c, 1); got[0].topic != "state/open" {
		t.Fatalf("got %+v, want only state/open", got)
	}
	g.ack(s, c, 2)
	g.host.mu.Lock()
	delete(g.host.denied, "c state/secret")
	g.host.mu.Unlock()
	for _, f := range g.host.regrant {
		f()
	}
	if got := waitCount(t, c, 1); got[0].topic != "state/secret" || got[0].payload != "s" {
		t.Fatalf("after the re-read = %+v, want the refused value", got)
	}
	g.ack(s, c, 1)
	g.settled("c")
	if extra := c.take(); len(extra) != 0 {
		t.Fatalf("sent again after the re-read: %+v", extra)
	}
}

// B1.8, E21: a zero-length publish needs delete.
func TestADeletionNeedsTheDeleteVerb(t *testing.T) {
	g := newRig(t, nil)
	g.publish("state/a", "1", false)
	g.host.denied["pub state/a"] = true
	if code, _ := g.e.Publish("pub", &codec.Publish{QoS: 1, Topic: []byte("state/a")}); code != codec.NotAuthorized {
		t.Fatalf("deletion without delete = %v, want 0x87", code)
	}
	if v, ok, _ := g.e.Get("state/a"); !ok || string(v.Payload) != "1" {
		t.Fatal("a refused deletion removed the value")
	}
}

// B9.2 (A13.4): a group whose member's session outlives its connection holds
// the changes made while no member is connected - the newest of each topic,
// the older counted superseded - and its member gets them on its return,
// without RETAIN; a group of sessions that end with their connections holds
// nothing (dropped, counted).
func TestASharedGroupWithAKeptMemberHoldsTheNewestChangePerTopicWhileAway(t *testing.T) {
	g := newRig(t, nil)
	share := engine.Filter{Filter: "$share/g/state/#", Inner: "state/#", Share: "g", Options: qos1, New: true}
	kept := testSession{id: "m", kept: true}
	g.connect("m")
	g.e.Subscribe(kept, share)
	g.e.Detach(kept)
	g.publish("state/a", "1", false)
	g.publish("state/a", "2", false)
	g.publish("state/b", "3", false)
	if n := g.e.Counters().SharedDropped.Load(); n != 0 {
		t.Fatalf("%d changes dropped with a kept member away, want them held", n)
	}
	back := &testClient{id: "m", version: 5, window: 10}
	g.e.Resume(kept, back, nil)
	got := byTopic(waitCount(t, back, 2))
	if got[0].topic != "state/a" || got[0].payload != "2" || got[1].topic != "state/b" || got[0].retain || got[1].retain {
		t.Fatalf("back = %+v, want state/a=2 and state/b=3 without RETAIN", got)
	}
	g.settled("m")
	if n := back.count(); n != 0 {
		t.Fatalf("%d more deliveries, want the two held changes only", n)
	}

	clean := testSession{id: "c"}
	g.connect("c")
	other := share
	other.Filter, other.Share = "$share/h/state/#", "h"
	g.e.Subscribe(clean, other)
	g.e.Detach(clean)
	before := g.e.Counters().SharedDropped.Load()
	g.publish("state/c", "4", false)
	if g.e.Counters().SharedDropped.Load() != before+1 {
		t.Fatal("a change for a group of clean sessions, all away, was not dropped and counted")
	}
}

// A13.4 with broker.share.expires_after: a held change older than it is let
// go at the member's return, counted.
func TestASharedGroupLetsGoAChangeHeldPastShareExpiresAfter(t *testing.T) {
	g := newRig(t, func(c *Config) { c.ShareExpiresAfter = time.Minute })
	kept := testSession{id: "m", kept: true}
	g.connect("m")
	g.e.Subscribe(kept, engine.Filter{Filter: "$share/g/state/#", Inner: "state/#", Share: "g", Options: qos1, New: true})
	g.e.Detach(kept)
	g.publish("state/a", "old", false)
	g.clk.Advance(2 * time.Minute)
	g.publish("state/b", "fresh", false)
	back := &testClient{id: "m", version: 5, window: 10}
	g.e.Resume(kept, back, nil)
	got := waitCount(t, back, 1)
	g.settled("m")
	if back.count() != 0 || got[0].topic != "state/b" || g.e.Counters().SharedExpired.Load() != 1 {
		t.Fatalf("back = %+v (expired %d), want state/b alone and state/a let go", got, g.e.Counters().SharedExpired.Load())
	}
}
