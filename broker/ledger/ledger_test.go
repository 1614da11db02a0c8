package ledger

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 8, 31, 9, 14, 2, 0, time.UTC)

func TestRefusalsAggregatePerClientAndUserWorstFirst(t *testing.T) {
	r := NewRefusals(64)
	r.Note("tasmota-c4f1", "fleet", "bad user name or password", t0)
	r.Note("tasmota-c4f1", "fleet", "topic name invalid", t0.Add(time.Second))
	r.Note("other", "", "unsupported protocol version", t0.Add(2*time.Second))
	r.Note("tasmota-c4f1", "someone", "not authorized", t0.Add(3*time.Second))
	rows, tracked, beyond := r.List(100)
	if tracked != 3 || beyond != 0 || len(rows) != 3 {
		t.Fatalf("tracked %d beyond %d rows %d, want 3 0 3", tracked, beyond, len(rows))
	}
	first := rows[0]
	if first.ClientID != "tasmota-c4f1" || first.User != "fleet" || first.Count != 2 || first.Reason != "topic name invalid" || !first.LastSeen.Equal(t0.Add(time.Second)) {
		t.Fatalf("worst row %+v: want tasmota-c4f1/fleet counted twice with the latest reason and time", first)
	}
	// Equal counts: the most recent first.
	if rows[1].User != "someone" || rows[2].ClientID != "other" {
		t.Fatalf("rows after the worst %+v, want the most recent first", rows[1:])
	}
	if rows, _, _ := r.List(1); len(rows) != 1 {
		t.Fatalf("List(1) returned %d rows", len(rows))
	}
}

func TestRefusalsFullDisplacesAOneOffNeverARepeatOffender(t *testing.T) {
	r := newRefusals(64, 3)
	r.Note("a", "", "x", t0)
	r.Note("a", "", "x", t0)
	r.Note("b", "", "x", t0)
	r.Note("c", "", "x", t0)
	r.Note("c", "", "x", t0)
	r.Note("new", "", "x", t0) // displaces b, the one one-off
	rows, tracked, beyond := r.List(100)
	if tracked != 3 || beyond != 1 {
		t.Fatalf("tracked %d beyond %d, want 3 and 1", tracked, beyond)
	}
	names := map[string]bool{}
	for _, row := range rows {
		names[row.ClientID] = true
	}
	if !names["a"] || !names["c"] || !names["new"] || names["b"] {
		t.Fatalf("held %v, want a, c and new (b the one-off displaced)", names)
	}
	r.Note("new", "", "x", t0) // every row a repeat offender now
	r.Note("late", "", "x", t0)
	rows, tracked, beyond = r.List(100)
	if tracked != 3 || beyond != 2 {
		t.Fatalf("tracked %d beyond %d, want 3 and 2", tracked, beyond)
	}
	for _, row := range rows {
		if row.ClientID == "late" {
			t.Fatal("a newcomer displaced a repeat offender")
		}
	}
}

func TestRefusalsCutClientStringsToTheBound(t *testing.T) {
	r := NewRefusals(8)
	r.Note(strings.Repeat("é", 40), strings.Repeat("u", 70000), "x", t0)
	rows, _, _ := r.List(1)
	if rows[0].ClientID != "éééé" || rows[0].User != "uuuuuuuu" {
		t.Fatalf("kept %q / %d bytes, want 8 bytes at a character boundary", rows[0].ClientID, len(rows[0].User))
	}
}

func TestRefusalsHoldAtMostAThousand(t *testing.T) {
	r := NewRefusals(64)
	for i := range Held + 50 {
		r.Note(fmt.Sprint("boot-", i), "", "x", t0)
	}
	rows, tracked, beyond := r.List(100)
	if tracked != Held || beyond != 50 || len(rows) != 100 {
		t.Fatalf("tracked %d beyond %d returned %d, want %d 50 100", tracked, beyond, len(rows), Held)
	}
}

func TestLossesAccumulateByReaderAndChannel(t *testing.T) {
	l := NewLosses(64)
	l.Note("mqtt:truck-114", "events", KindConsumer, false, 10, 40, t0)
	l.Note("mqtt:truck-114", "events", KindSession, true, 50, 70, t0.Add(time.Minute))
	l.Note("mqtt:truck-114", "readings", KindSession, true, 1, 2, t0)
	l.Note("bridge:truck-114", "events", KindBridge, false, 0, 5, t0)
	rows, tracked, beyond := l.List(100)
	if tracked != 3 || beyond != 0 {
		t.Fatalf("tracked %d beyond %d, want 3 0", tracked, beyond)
	}
	w := rows[0]
	if w.Reader != "mqtt:truck-114" || w.Channel != "events" || w.Count != 2 || w.RecordsMissed != 50 ||
		w.LastPosition != 50 || w.LastFloor != 70 || w.Kind != KindSession || w.Reported || !w.LastSeen.Equal(t0.Add(time.Minute)) {
		t.Fatalf("worst row %+v", w)
	}
	if rows[1].Reader != "bridge:truck-114" || rows[1].Reported {
		t.Fatalf("second row %+v: the bridge reader, a row of its own, unreported", rows[1])
	}
	if rows[2].Channel != "readings" || !rows[2].Reported || rows[2].RecordsMissed != rows[2].LastFloor-rows[2].LastPosition {
		t.Fatalf("third row %+v: one reported passing, missed = floor - position", rows[2])
	}
}

func TestLossesFullDisplaceTheLeastLostOnlyForMore(t *testing.T) {
	l := newLosses(64, 2)
	l.Note("mqtt:a", "c", KindConsumer, false, 0, 10, t0)
	l.Note("mqtt:b", "c", KindConsumer, false, 0, 3, t0)
	l.Note("mqtt:small", "c", KindConsumer, false, 0, 2, t0) // lost less than b: does not fit
	l.Note("mqtt:big", "c", KindConsumer, false, 0, 7, t0)   // displaces b
	rows, tracked, beyond := l.List(100)
	if tracked != 2 || beyond != 2 || rows[0].Reader != "mqtt:a" || rows[1].Reader != "mqtt:big" {
		t.Fatalf("tracked %d beyond %d rows %+v", tracked, beyond, rows)
	}
}

func TestLossesKeepTheSchemeWhenCutting(t *testing.T) {
	l := NewLosses(4)
	l.Note("mqtt:"+strings.Repeat("x", 100), "c", KindConsumer, false, 0, 1, t0)
	rows, _, _ := l.List(1)
	if rows[0].Reader != "mqtt:xxxx" {
		t.Fatalf("reader %q, want the scheme and 4 bytes", rows[0].Reader)
	}
}
