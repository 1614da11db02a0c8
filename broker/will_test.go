package broker

import (
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// watcher connects a subscriber to topic on b.
func watcher(t *testing.T, b *Broker, topic string) *ackClient {
	t.Helper()
	w := &ackClient{id: "watcher-" + topic}
	connectAs(t, b, w, true, 0, nil)
	b.Subscribe(w, []byte(topic), delivery.SubscribeOptions{QoS: 1})
	return w
}

func will(delay uint32) *codec.Publish {
	return willOn("status/dev", "offline", delay)
}

func willOn(topic, payload string, delay uint32) *codec.Publish {
	w := &codec.Publish{Topic: []byte(topic), Payload: []byte(payload), QoS: 1}
	if delay > 0 {
		w.Properties.WillDelay = delay
		w.Properties.Present.Set(codec.PropWillDelay)
	}
	return w
}

func TestWillIsPublishedWhenTheConnectionEndsWithoutDisconnect(t *testing.T) {
	b := newStores(t, 0).broker(t, Options{})
	w := watcher(t, b, "status/#")
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 0, will(0))
	b.Disconnected(c, 0, false)
	w.waitPayloads(t, "offline")
	if n := b.Counters().WillsPublished[WillImmediate].Load(); n != 1 {
		t.Fatalf("wills published counted %d, want 1", n)
	}
}

func TestNormalDisconnectWithdrawsTheWill(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{})
	w := watcher(t, b, "status/#")
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, will(0))
	b.Disconnected(c, 60, true)
	publish(b, "p", "status/marker", "after", 1, false)
	w.waitPayloads(t, "after")
	if s, _, _ := st.sessions.Get("dev"); s.Will != nil {
		t.Fatal("the withdrawn Will is still on the stored session")
	}
}

func TestWillDelayWaitsAndAResumeCancelsIt(t *testing.T) {
	b := newStores(t, 0).broker(t, Options{})
	w := watcher(t, b, "status/#")
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, will(1))
	b.Disconnected(c, 60, false)
	connectAs(t, b, &ackClient{id: "dev"}, false, 60, nil) // back inside the delay
	sh := b.shard("dev")
	sh.mu.Lock()
	s := sh.sessions["dev"]
	waiting, timer := s.will != nil, s.rare != nil && s.rare.timer != nil
	sh.mu.Unlock()
	if waiting || timer {
		t.Fatalf("after the resume the Will is still waiting (%v) or its timer armed (%v)", waiting, timer)
	}
	publish(b, "p", "status/marker", "after", 1, false)
	w.waitPayloads(t, "after")
}

func TestWillDelayIsPublishedWhenItRunsOut(t *testing.T) {
	clk := clock.NewFake(time.Now())
	b := newStores(t, 0).broker(t, Options{Clock: clk})
	w := watcher(t, b, "status/#")
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, will(1))
	b.Disconnected(c, 60, false)
	clk.WaitArmed(2) // the commit ticker and the Will's delay
	clk.Advance(time.Second - time.Millisecond)
	if got := w.payloads(); len(got) != 0 {
		t.Fatalf("the Will went out a millisecond before its delay ran out: %q", got)
	}
	clk.Advance(time.Millisecond)
	w.waitPayloads(t, "offline")
}

func TestWillOnASessionShorterThanItsDelayIsPublishedAtSessionEnd(t *testing.T) {
	clk := clock.NewFake(time.Now())
	b := newStores(t, 0).broker(t, Options{Clock: clk})
	w := watcher(t, b, "status/#")
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 1, will(3600))
	b.Disconnected(c, 1, false)
	clk.WaitArmed(2) // the commit ticker and the session's expiry
	clk.Advance(time.Second - time.Millisecond)
	if got := w.payloads(); len(got) != 0 {
		t.Fatalf("the Will went out a millisecond before its session ended: %q", got)
	}
	clk.Advance(time.Millisecond)
	w.waitPayloads(t, "offline")
}

func TestCleanStartPublishesTheWaitingWill(t *testing.T) {
	b := newStores(t, 0).broker(t, Options{})
	w := watcher(t, b, "status/#")
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, will(3600))
	b.Disconnected(c, 60, false)
	if present, _, _ := connectAs(t, b, &ackClient{id: "dev"}, true, 60, nil); present {
		t.Fatal("Clean Start answered Session Present 1")
	}
	w.waitPayloads(t, "offline")
}

func TestGracefulStopFiresNoWillAndKeepsItWithNoDueMoment(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{})
	w := watcher(t, b, "status/#")
	c := &ackClient{id: "dev"}
	connectAs(t, b, c, true, 60, will(0))
	b.Stop()
	b.Disconnected(c, 60, false)
	b.Disconnected(w, 0, false)
	b.Close()
	if got := w.payloads(); len(got) != 0 {
		t.Fatalf("a graceful stop published a Will: %q", got)
	}
	s, ok, _ := st.sessions.Get("dev")
	if !ok || s.Will == nil || !s.Will.DueAt.IsZero() {
		t.Fatalf("stored session %+v: want the Will kept with no due moment", s)
	}
	b = st.broker(t, Options{})
	w2 := watcher(t, b, "status/#")
	if present, _, _ := connectAs(t, b, &ackClient{id: "dev"}, false, 60, nil); !present {
		t.Fatal("the session of a client connected at the stop is not present after it")
	}
	publish(b, "p", "status/marker", "after", 1, false)
	w2.waitPayloads(t, "after")
}

func TestWillThatCameDueWhileStoppedIsPublishedAtStart(t *testing.T) {
	st := newStores(t, 0)
	now := time.Now()
	b := st.broker(t, Options{Clock: clock.NewFake(now)})
	c := &ackClient{id: "dev"}
	retained := will(5)
	retained.Retain = true
	connectAs(t, b, c, true, 3600, retained)
	b.Disconnected(c, 3600, false) // due in 5s
	b.Close()
	if _, ok, _ := st.retained.Get("status/dev"); ok {
		t.Fatal("the Will went out before its delay")
	}
	later := now.Add(10 * time.Second)
	b = st.broker(t, Options{Clock: clock.NewFake(later)})
	r, ok, _ := st.retained.Get("status/dev")
	if !ok || string(r.Payload) != "offline" {
		t.Fatal("a Will due while the broker was stopped was not published at the start")
	}
	if s, _, _ := st.sessions.Get("dev"); s.Will != nil {
		t.Fatal("the published Will is still on the stored session")
	}
}

func TestWillOfAnExpiredSessionIsPublishedAtStartBeforeItEnds(t *testing.T) {
	st := newStores(t, 0)
	now := time.Now()
	b := st.broker(t, Options{Clock: clock.NewFake(now)})
	c := &ackClient{id: "dev"}
	retained := will(3600)
	retained.Retain = true
	connectAs(t, b, c, true, 60, retained)
	b.Disconnected(c, 60, false)
	b.Close()
	later := now.Add(2 * time.Minute)
	b = st.broker(t, Options{Clock: clock.NewFake(later)})
	if _, ok, _ := st.retained.Get("status/dev"); !ok {
		t.Fatal("the Will of a session that expired while stopped was not published")
	}
	if _, ok, _ := st.sessions.Get("dev"); ok {
		t.Fatal("the expired session is still stored")
	}
	if present, _, _ := connectAs(t, b, &ackClient{id: "dev"}, false, 60, nil); present {
		t.Fatal("Session Present 1 for a session that expired while stopped")
	}
}

func TestTakenOverConnectionsWillIsPublishedOnlyWithoutDelay(t *testing.T) {
	b := newStores(t, 0).broker(t, Options{})
	w := watcher(t, b, "status/#")
	connectAs(t, b, &ackClient{id: "dev"}, true, 60, will(0))
	connectAs(t, b, &ackClient{id: "dev"}, false, 60, nil)
	w.waitPayloads(t, "offline")

	connectAs(t, b, &ackClient{id: "dev2"}, true, 60, willOn("status/dev2", "x", 60))
	connectAs(t, b, &ackClient{id: "dev2"}, false, 60, nil)
	publish(b, "p", "status/marker", "after", 1, false)
	w.waitPayloads(t, "offline", "after")
}

func TestWillKeptWithNoDueMomentAtAStopIsPublishedWhenTheSessionExpires(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{})
	c := &ackClient{id: "dev"}
	w := will(0)
	w.Retain = true
	connectAs(t, b, c, true, 1, w)
	b.Stop()
	b.Disconnected(c, 1, false)
	b.Close()
	// Its own clock: the first broker's timers stay on the real one.
	clk := clock.NewFake(time.Now())
	b = st.broker(t, Options{Clock: clk}) // away from now, for its one second
	clk.WaitArmed(2)                      // the commit ticker and the session's expiry
	clk.Advance(time.Second - time.Millisecond)
	if _, ok, _ := st.retained.Get("status/dev"); ok || b.Sessions() != 1 {
		t.Fatal("the session kept through a stop ended, or its Will went out, a millisecond before its expiry")
	}
	clk.Advance(time.Millisecond)
	// The ending's writes are queued behind the client id's others: waited for.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if r, ok, _ := st.retained.Get("status/dev"); ok && string(r.Payload) == "offline" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Will kept through a stop was not published when its session expired (%d sessions, %d armed)", b.Sessions(), clk.Armed())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
