package broker

import (
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

const jobsGroup = "$share/g/jobs/#"

// An ending member's unacknowledged QoS 1 delivery from the group's backlog
// goes back to the group: with every other member away it is kept as a
// returned delivery, a restart keeps it, and the next member to come back
// is handed it - once, the returned row taken as it is (RFC 0003
// "Broadcast", notes-0004 "share_returned").
func TestEndedMembersUnacknowledgedDeliveryGoesBackToTheGroupAcrossARestart(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{})
	a := shareMember(t, b, "m-a", 60)
	other := shareMember(t, b, "m-b", 60)
	b.Disconnected(a, 60, false)
	b.Disconnected(other, 60, false)
	publish(b, "p", "jobs/x", "job", 1, false)
	back := &ackClient{id: "m-a"}
	connectAs(t, b, back, false, 60, nil)
	back.waitPayloads(t, "job") // handed to m-a from the backlog, never acknowledged
	b.Disconnected(back, 60, false)
	connectAs(t, b, &ackClient{id: "m-a"}, true, 0, nil) // Clean Start ends m-a's session
	if ret, _ := st.sessions.Returned(jobsGroup); len(ret) != 1 {
		t.Fatalf("returned deliveries stored for the group: %+v, want the one m-a left", ret)
	}
	b = st.restart(t, b, Options{})
	b2 := &ackClient{id: "m-b"}
	connectAs(t, b, b2, false, 60, nil)
	b2.waitPayloads(t, "job")
	if ret, _ := st.sessions.Returned(jobsGroup); len(ret) != 0 {
		t.Fatalf("a returned delivery handed over is still stored: %+v", ret)
	}
}

// A group whose last member leaves - unsubscribed, or its session ended -
// keeps nothing in the store: no cursor, and its backlog leaves the log.
func TestSharedGroupLeavesNothingInTheStoreWithItsLastMember(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{})
	a := shareMember(t, b, "m-a", 60)
	if _, ok, _ := st.sessions.GroupCursor(jobsGroup); !ok {
		t.Fatal("a durable member's SUBSCRIBE stored no group cursor")
	}
	b.Unsubscribe(a, []byte(jobsGroup))
	if _, ok, _ := st.sessions.GroupCursor(jobsGroup); ok {
		t.Fatal("the group's cursor outlived its last member's UNSUBSCRIBE")
	}
	b.Subscribe(a, []byte(jobsGroup), delivery.SubscribeOptions{QoS: 1})
	b.Disconnected(a, 60, false)
	publish(b, "p", "jobs/x", "1", 1, false)
	if n := st.sessions.Log().Len(); n != 1 {
		t.Fatalf("the log holds %d messages for the group's backlog, want 1", n)
	}
	connectAs(t, b, &ackClient{id: "m-a"}, true, 0, nil) // Clean Start ends it
	b.bcast.commit()
	if _, ok, _ := st.sessions.GroupCursor(jobsGroup); ok {
		t.Fatal("the group's cursor outlived its last member's session")
	}
	if n, by := st.sessions.Log().Len(), st.sessions.Log().Bytes(); n != 0 || by != 0 {
		t.Fatalf("the log still holds %d messages (%d bytes) of a group nobody can collect", n, by)
	}
}

// A backlogged delivery held past broker.share.expires_after is dropped,
// counted, and leaves the log, its bytes given back.
func TestBacklogHeldPastShareExpiresAfterLeavesTheLog(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	st := newStores(t, 0)
	b := st.broker(t, Options{Clock: clk, ShareExpiresAfter: time.Minute})
	a := shareMember(t, b, "m-a", 3600)
	b.Disconnected(a, 3600, false)
	publish(b, "p", "jobs/x", "old", 1, false)
	clk.Advance(2 * time.Minute)
	publish(b, "p", "jobs/x", "new", 1, false)
	b.expireBacklogs(clk.Now())
	b.bcast.commit()
	if n := st.sessions.Log().Len(); n != 1 {
		t.Fatalf("the log holds %d messages, want only the one inside expires_after", n)
	}
	if n := b.Counters().SharesDroppedExpired.Load(); n != 1 {
		t.Fatalf("dropped past expires_after counted %d, want 1", n)
	}
	back := &ackClient{id: "m-a"}
	connectAs(t, b, back, false, 3600, nil)
	back.waitPayloads(t, "new")
}

// A backlogged delivery a group handed a member is written into the member's
// window, so a restart - which finds the group's cursor past it - owes it to
// that member again, not to nobody (notes-0004 "session_inflight": the
// shared group that handed it over).
func TestDeliveryAGroupHandedAMemberIsOwedToItAgainAfterARestart(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{})
	a := shareMember(t, b, "m-a", 60)
	b.Disconnected(a, 60, false)
	publish(b, "p", "jobs/x", "job", 1, false)
	back := &ackClient{id: "m-a"}
	connectAs(t, b, back, false, 60, nil)
	back.waitPayloads(t, "job") // never acknowledged
	b.Disconnected(back, 60, false)
	b = st.restart(t, b, Options{})
	if c, ok, _ := st.sessions.GroupCursor(jobsGroup); !ok || c <= back.offsets[0] {
		t.Fatalf("group cursor %d %v: the test needs it past the handed delivery %d", c, ok, back.offsets[0])
	}
	again := &ackClient{id: "m-a"}
	connectAs(t, b, again, false, 60, nil)
	again.waitPayloads(t, "job")
	b.Acked(again, again.refs[0])
	b.Close()
	if inf, _ := st.sessions.InFlight("m-a"); len(inf) != 0 {
		t.Fatalf("the window still holds %+v after the acknowledgement was stored", inf)
	}
}

// A member whose session expired while the broker was down gives back, at
// the start that ends it, what its group handed it and it never
// acknowledged: the group's other member is sent it.
func TestMemberThatExpiredWhileStoppedGivesItsGroupDeliveriesBack(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	st := newStores(t, 0)
	b := st.broker(t, Options{Clock: clock.NewFake(now)})
	a := shareMember(t, b, "m-a", 60)
	other := shareMember(t, b, "m-b", 3600)
	b.Disconnected(a, 60, false)
	b.Disconnected(other, 3600, false)
	publish(b, "p", "jobs/x", "job", 1, false)
	back := &ackClient{id: "m-a"}
	connectAs(t, b, back, false, 60, nil)
	back.waitPayloads(t, "job") // never acknowledged
	b.Disconnected(back, 60, false)
	later := now.Add(10 * time.Minute) // m-a's 60 s run out while stopped
	b = st.restart(t, b, Options{Clock: clock.NewFake(later)})
	if _, ok, _ := st.sessions.Get("m-a"); ok {
		t.Fatal("the expired member's session is still stored")
	}
	b2 := &ackClient{id: "m-b"}
	connectAs(t, b, b2, false, 3600, nil)
	b2.waitPayloads(t, "job")
}
