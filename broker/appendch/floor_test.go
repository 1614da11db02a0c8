package appendch

import (
	"strconv"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/store"
)

// endingSession is a session ending because retention passed one of its
// positions at a CONNECT (engine.KeepsPositions).
type endingSession struct{ session }

func (endingSession) KeepsPositions() bool { return true }

// A5.2, A5.3: a position retention passed while its consumer was away is
// found by the CONNECT's check (Passed); the session's end drops it and
// counts it lost, and keeps the position on a channel retention did not
// pass, where the session begun in its place resumes.
func TestPassedPositionIsDroppedAndTheOthersKept(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	p := memProvider(t, "")
	events := newEngine(t, p, clk, false)
	otherLog, err := p.Append("other", store.ChannelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other := New(Options{Name: "other", Filters: []string{"ev/#"}, Log: otherLog, Host: host{clk}})
	if err := other.Restore(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	for i := 1; i <= 4; i++ {
		publish(t, events, "pub", strconv.Itoa(i))
		publish(t, other, "pub", strconv.Itoa(i))
	}
	s := session{id: "d", kept: true}
	ce, co := newClient("d", 10), newClient("d", 10)
	events.Resume(s, ce, nil)
	other.Resume(s, co, nil)
	events.Subscribe(s, plainSub(1))
	other.Subscribe(s, plainSub(1))
	ce.ack(events, s, ce.next(t)) // position 2 on both
	co.ack(other, s, co.next(t))
	events.Detach(s)
	other.Detach(s)
	if events.Passed("d") || other.Passed("d") {
		t.Fatal("a position at or above the floor reported passed")
	}
	evLog, _ := p.Append("events", store.ChannelOptions{})
	if _, _, err := evLog.Trim(time.Time{}, evLog.Bytes()/4); err != nil { // keeps the newest record only
		t.Fatal(err)
	}
	if evLog.Floor() != 4 {
		t.Fatalf("floor %d after the trim, want 4", evLog.Floor())
	}
	if !events.Passed("d") {
		t.Fatal("position 2 below floor 4 not reported passed")
	}
	if other.Passed("d") {
		t.Fatal("the untouched channel reports its position passed")
	}
	ended := endingSession{s}
	events.End(ended)
	other.End(ended)
	if n := events.Counters.PositionLost.Load(); n != 1 {
		t.Fatalf("positions lost counted %d, want 1", n)
	}
	if n := other.Counters.PositionLost.Load(); n != 0 {
		t.Fatalf("the untouched channel counted %d lost", n)
	}
	// The session begun in its place: served from the floor where its
	// position was passed, resumed where it was on the other channel.
	fresh := session{id: "d", kept: true}
	ce2, co2 := newClient("d", 10), newClient("d", 10)
	events.Resume(fresh, ce2, nil)
	other.Resume(fresh, co2, nil)
	events.Subscribe(fresh, plainSub(1))
	other.Subscribe(fresh, plainSub(1))
	if x := ce2.next(t); string(x.m.Payload) != "4" {
		t.Fatalf("passed channel served from %q, want the floor's record 4", x.m.Payload)
	}
	if x := co2.next(t); string(x.m.Payload) != "2" {
		t.Fatalf("kept channel resumed at %q, want 2", x.m.Payload)
	}
}

// A5.2 across a restart: a stored position below the floor is restored as it
// is, so the session's first CONNECT finds it passed, rather than it being
// moved to the floor unreported.
func TestRestoredPositionBelowTheFloorIsReportedPassed(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	p := memProvider(t, "")
	e := newEngine(t, p, clk, false)
	for i := 1; i <= 3; i++ {
		publish(t, e, "pub", strconv.Itoa(i))
	}
	log, _ := p.Append("events", store.ChannelOptions{})
	if err := log.SavePosition(store.Position{Reader: store.ReaderMQTT("d"), Offset: 1, SessionExpiry: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := log.Trim(time.Time{}, log.Bytes()/3); err != nil {
		t.Fatal(err)
	}
	e.Subscribe(session{id: "d", kept: true, restoring: true}, plainSub(1))
	if !e.Passed("d") {
		t.Fatal("a restored position below the floor is not reported passed")
	}
	if n := e.Counters.PositionLost.Load(); n != 0 {
		t.Fatalf("counted lost %d at the restore, before any CONNECT", n)
	}
}
