package scenario

import (
	"context"
	"testing"
)

// attempts hands out the runs in order, counting how many were asked for.
func attempts(runs ...Run) (func() Run, *int) {
	n := 0
	return func() Run { r := runs[n]; n++; return r }, &n
}

func TestABusyWindowIsRunAgainAndTheCalmestKept(t *testing.T) {
	next, made := attempts(Run{OthersCores: 1.5, Rep: 1}, Run{OthersCores: 0.2, Rep: 2}, Run{OthersCores: 0.9, Rep: 3})
	r := calmest(context.Background(), Profile{Calm: 0.1}, next)
	if *made != 3 || r.Rep != 2 || r.Attempts != 3 {
		t.Fatalf("made %d runs, kept rep %d with attempts %d; want 3 made, the 0.2-core one kept, attempts 3", *made, r.Rep, r.Attempts)
	}
}

func TestACalmWindowIsRunOnce(t *testing.T) {
	next, made := attempts(Run{OthersCores: 1.5, Rep: 1}, Run{OthersCores: 0.05, Rep: 2}, Run{OthersCores: 0, Rep: 3})
	r := calmest(context.Background(), Profile{Calm: 0.1}, next)
	if *made != 2 || r.Rep != 2 || r.Attempts != 2 {
		t.Fatalf("made %d runs, kept rep %d; want the second, calm, run kept and no third", *made, r.Rep)
	}
}

func TestWithoutCalmNothingIsRunAgain(t *testing.T) {
	next, made := attempts(Run{OthersCores: 1.9}, Run{})
	if r := calmest(context.Background(), Profile{}, next); *made != 1 || r.Attempts != 1 {
		t.Fatalf("made %d runs with Calm 0; want 1", *made)
	}
}

func TestAFailedRunIsNeitherRepeatedNorPreferred(t *testing.T) {
	next, made := attempts(Run{Err: "broker exited"}, Run{})
	if r := calmest(context.Background(), Profile{Calm: 0.1}, next); *made != 1 || r.Err == "" {
		t.Fatalf("made %d runs after a failure; want the failure reported once", *made)
	}
	next, made = attempts(Run{OthersCores: 1.5, Rep: 1}, Run{Err: "refused", Rep: 2}, Run{OthersCores: 1.2, Rep: 3})
	if r := calmest(context.Background(), Profile{Calm: 0.1}, next); *made != 2 || r.Rep != 1 {
		t.Fatalf("made %d runs, kept rep %d; want the busy run kept over the failed one, and the failure ending the tries", *made, r.Rep)
	}
}
