package clock

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestFakeNowMovesOnlyByAdvance(t *testing.T) {
	f := NewFake(t0)
	if got := f.Now(); !got.Equal(t0) {
		t.Fatalf("Now = %v, want %v", got, t0)
	}
	f.Advance(1500 * time.Millisecond)
	if got, want := f.Now(), t0.Add(1500*time.Millisecond); !got.Equal(want) {
		t.Fatalf("Now = %v, want %v", got, want)
	}
}

func TestFakeAfterFuncFiresAtItsMomentNotBefore(t *testing.T) {
	f := NewFake(t0)
	var at []time.Time
	f.AfterFunc(time.Second, func() { at = append(at, f.Now()) })
	f.Advance(time.Second - time.Millisecond)
	if len(at) != 0 {
		t.Fatalf("fired a millisecond early, at %v", at)
	}
	if f.Armed() != 1 {
		t.Fatalf("Armed = %d, want 1", f.Armed())
	}
	f.Advance(time.Millisecond)
	if len(at) != 1 || !at[0].Equal(t0.Add(time.Second)) {
		t.Fatalf("fired at %v, want once at %v", at, t0.Add(time.Second))
	}
	if f.Armed() != 0 {
		t.Fatalf("Armed = %d after firing, want 0", f.Armed())
	}
	f.Advance(time.Hour)
	if len(at) != 1 {
		t.Fatalf("fired %d times, want once", len(at))
	}
}

func TestFakeFiresInOrderOfMomentsEachAtItsOwn(t *testing.T) {
	f := NewFake(t0)
	var got []time.Duration
	for _, d := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second} {
		f.AfterFunc(d, func() { got = append(got, f.Now().Sub(t0)) })
	}
	f.Advance(10 * time.Second)
	want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("fired at %v, want %v", got, want)
	}
	if !f.Now().Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("Now = %v after Advance(10s)", f.Now())
	}
}

// A timer armed by a firing one is fired within the same Advance if due.
func TestFakeRearmFromCallback(t *testing.T) {
	f := NewFake(t0)
	n := 0
	var tick func()
	tick = func() {
		n++
		f.AfterFunc(time.Second, tick)
	}
	f.AfterFunc(time.Second, tick)
	f.Advance(3500 * time.Millisecond)
	if n != 3 {
		t.Fatalf("fired %d times in 3.5s of 1s re-arms, want 3", n)
	}
}

func TestFakeStopAndReset(t *testing.T) {
	f := NewFake(t0)
	fired := 0
	tm := f.AfterFunc(time.Second, func() { fired++ })
	if !tm.Stop() {
		t.Fatal("Stop of an armed timer reported false")
	}
	if tm.Stop() {
		t.Fatal("second Stop reported true")
	}
	f.Advance(2 * time.Second)
	if fired != 0 {
		t.Fatal("a stopped timer fired")
	}
	if tm.Reset(time.Second) {
		t.Fatal("Reset of a stopped timer reported it armed")
	}
	f.Advance(999 * time.Millisecond)
	if fired != 0 {
		t.Fatal("a reset timer fired a millisecond early")
	}
	if !tm.Reset(time.Second) {
		t.Fatal("Reset of an armed timer reported false")
	}
	f.Advance(999 * time.Millisecond)
	if fired != 0 {
		t.Fatal("Reset did not push the moment back")
	}
	f.Advance(time.Millisecond)
	if fired != 1 {
		t.Fatalf("fired %d times, want 1", fired)
	}
}

// Every tick due is handed to the reader, in order, each at its moment, and
// Advance returns once they are taken; none is due a millisecond early.
func TestFakeTickerHandsOverEveryTick(t *testing.T) {
	f := NewFake(t0)
	tk := f.NewTicker(100 * time.Millisecond)
	advance := func(d time.Duration) <-chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			f.Advance(d)
		}()
		return done
	}
	expect := func(n int) {
		t.Helper()
		if at, want := <-tk.C(), t0.Add(time.Duration(n)*100*time.Millisecond); !at.Equal(want) {
			t.Fatalf("tick %d at %v, want %v", n, at, want)
		}
	}
	done := advance(299 * time.Millisecond)
	expect(1)
	expect(2)
	<-done
	select {
	case at := <-tk.C():
		t.Fatalf("a tick at %v, after Advance returned at 299ms", at)
	default:
	}
	done = advance(time.Millisecond)
	expect(3)
	<-done
	tk.Stop()
	f.Advance(time.Second) // nobody reads: a stopped ticker must not block Advance
}

// Stop gives up a tick waiting to be taken, so an Advance racing the reader's
// exit does not hang.
func TestFakeTickerStopReleasesAdvance(t *testing.T) {
	f := NewFake(t0)
	tk := f.NewTicker(time.Second)
	advanced := make(chan struct{})
	go func() {
		f.Advance(time.Second)
		close(advanced)
	}()
	tk.Stop()
	<-advanced
}

func TestFakeWaitArmed(t *testing.T) {
	f := NewFake(t0)
	go func() {
		f.AfterFunc(time.Minute, func() {})
		f.NewTicker(time.Minute)
	}()
	f.WaitArmed(2)
	if f.Armed() != 2 {
		t.Fatalf("Armed = %d, want 2", f.Armed())
	}
}

// Real is the package time underneath.
func TestRealFires(t *testing.T) {
	if d := time.Since(Real.Now()); d < 0 || d > time.Minute {
		t.Fatalf("Real.Now is %v from time.Now", d)
	}
	fired := make(chan struct{})
	Real.AfterFunc(time.Millisecond, func() { close(fired) })
	<-fired
	tk := Real.NewTicker(time.Millisecond)
	<-tk.C()
	tk.Stop()
	if Or(nil) != Real {
		t.Fatal("Or(nil) is not Real")
	}
	f := NewFake(t0)
	if Or(f) != Clock(f) {
		t.Fatal("Or(f) is not f")
	}
}
