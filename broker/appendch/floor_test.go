package appendch

import (
	"strconv"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/broker/ledger"
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

// A5.6, A5.7 and checklist D8.95 (RFC 0005 "What the /v1 routes answer
// with"): a consumer the retention floor overtakes while it is connected and
// reading is told nothing, so the record behind
// /v1/operations/position-lost carries it as kind consumer, reported false,
// with the position and floor of that passing, and
// saguin_channel_position_lost_total counts it. Retention is the age sweep
// at the fake clock's now, two hours after the records were written under a
// one-hour retention_period.
func TestConsumerOvertakenWhileConnectedIsRecordedAsAnUnreportedConsumerLoss(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	clk := clock.NewFake(t0)
	p := memProvider(t, "")
	log, err := p.Append("events", store.ChannelOptions{RetentionPeriod: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	losses := ledger.NewLosses(64)
	e := New(Options{Name: "events", Filters: []string{"ev/#"}, Log: log, Host: host{clk}, AckCommitInterval: 100 * time.Millisecond,
		OnPositionLost: func(reader, kind string, reported bool, position, floor uint64) {
			losses.Note(reader, "events", kind, reported, position, floor, clk.Now())
		}})
	if err := e.Restore(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	for i := 1; i <= 5; i++ {
		publish(t, e, "pub", strconv.Itoa(i))
	}
	s := session{id: "truck-114", kept: true}
	cl := newClient("truck-114", 1)
	e.Resume(s, cl, nil)
	e.Subscribe(s, plainSub(1))
	first := cl.next(t) // record 1 in flight, the window full: the consumer stands at 2
	if string(first.m.Payload) != "1" {
		t.Fatalf("first delivery %q, want record 1", first.m.Payload)
	}
	clk.Advance(2 * time.Hour)
	if removed, err := p.SweepByAge(clk.Now()); err != nil || removed != 5 {
		t.Fatalf("age sweep removed %d (%v), want all 5", removed, err)
	}
	floor := log.Floor()
	if floor != 6 {
		t.Fatalf("floor %d after the sweep, want 6", floor)
	}
	if rows, _, _ := losses.List(100); len(rows) != 0 {
		t.Fatalf("a loss recorded before the consumer read on: %+v", rows)
	}
	cl.ack(e, s, first) // it reads on, from 2, below the floor
	deadline := time.Now().Add(5 * time.Second)
	for e.Counters.PositionLost.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the passing was never counted")
		}
		time.Sleep(time.Millisecond) // the engine's serving goroutine counts it
	}
	rows, tracked, beyond := losses.List(100)
	if len(rows) != 1 || tracked != 1 || beyond != 0 {
		t.Fatalf("rows %+v tracked %d beyond %d, want the one reader", rows, tracked, beyond)
	}
	r := rows[0]
	if r.Reader != "mqtt:truck-114" || r.Channel != "events" || r.Kind != ledger.KindConsumer || r.Reported ||
		r.Count != 1 || r.LastPosition != 2 || r.LastFloor != floor || r.RecordsMissed != floor-2 || !r.LastSeen.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("row %+v, want mqtt:truck-114 on events, kind consumer, unreported, count 1, 2 -> %d, %d missed, seen at the clock's now", r, floor, floor-2)
	}
	if n := e.Counters.PositionLost.Load(); n != 1 {
		t.Fatalf("saguin_channel_position_lost_total's count %d, want 1 (the rows' counts summed)", n)
	}
	cl.none(t) // nothing was left to serve past the floor
}
