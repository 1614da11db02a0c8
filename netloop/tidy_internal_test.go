package netloop

import (
	"log/slog"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker/clock"
)

// fakeTidier is a tidier on a Fake clock counting what it frees, with held
// connections open.
func fakeTidier(held int) (*tidier, *clock.Fake, *int) {
	clk := clock.NewFake(time.Unix(0, 0))
	freed := new(int)
	t := newTidier(clk, func() int { return held }, slog.New(slog.DiscardHandler))
	t.free = func() { *freed++ }
	return t, clk, freed
}

// Memory is freed once a burst of handshakes has been quiet for tidyQuiet -
// measured from the last handshake, so a burst still arriving is not
// interrupted - and once per burst.
func TestTidyFreesOnceAfterABurstGoesQuiet(t *testing.T) {
	td, clk, freed := fakeTidier(100)
	for range tidyBurst {
		td.handshake()
	}
	clk.Advance(tidyQuiet - time.Millisecond)
	td.handshake() // the burst goes on
	clk.Advance(time.Millisecond)
	if *freed != 0 {
		t.Fatalf("freed %d times while handshakes still arrived", *freed)
	}
	clk.Advance(tidyQuiet - 2*time.Millisecond)
	if *freed != 0 {
		t.Fatalf("freed %d times before the last handshake was %v old", *freed, tidyQuiet)
	}
	clk.Advance(time.Millisecond)
	if *freed != 1 {
		t.Fatalf("freed %d times once the burst was quiet, want 1", *freed)
	}
	clk.Advance(time.Hour)
	if *freed != 1 || clk.Armed() != 0 {
		t.Fatalf("freed %d times, %d timers armed, an hour after one burst", *freed, clk.Armed())
	}
}

// A trickle frees nothing until its handshakes number tidyBurst and an
// eighth of the connections held: the collection's cost grows with them.
func TestTidyWaitsForABurstWorthACollection(t *testing.T) {
	td, clk, freed := fakeTidier(8 * (tidyBurst + 10))
	for range tidyBurst + 9 {
		td.handshake()
		clk.Advance(time.Second)
	}
	if *freed != 0 {
		t.Fatalf("freed %d times after %d handshakes with %d connections", *freed, tidyBurst+9, 8*(tidyBurst+10))
	}
	td.handshake()
	clk.Advance(tidyQuiet)
	if *freed != 1 {
		t.Fatalf("freed %d times after an eighth of the connections handshook, want 1", *freed)
	}
}

// A stopping server frees nothing more.
func TestTidyStopDisarms(t *testing.T) {
	td, clk, freed := fakeTidier(0)
	for range tidyBurst {
		td.handshake()
	}
	td.stop()
	td.handshake()
	clk.Advance(time.Hour)
	if *freed != 0 || clk.Armed() != 0 {
		t.Fatalf("freed %d times, %d timers armed after stop", *freed, clk.Armed())
	}
}
