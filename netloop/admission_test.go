package netloop

import (
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker/clock"
)

func TestSlotsAreCountedUpToMaxConnections(t *testing.T) {
	a := newAdmission(2, clock.Real)
	for i := 0; i < 2; i++ {
		if got, _ := a.arrive(); got != admitted {
			t.Fatalf("arrival %d: %v, want admitted", i, got)
		}
	}
	if got, w := a.arrive(); got != queued || w == nil {
		t.Fatalf("third arrival: %v, want a place in the overflow budget", got)
	}
}

func TestOverflowBudgetIsMaxConnectionsOr32WhicheverIsFewer(t *testing.T) {
	for _, tc := range []struct{ max, budget int }{{1, 1}, {5, 5}, {32, 32}, {10000, 32}} {
		if got := newAdmission(tc.max, clock.Real).budget; got != tc.budget {
			t.Errorf("max_connections %d: budget %d, want %d", tc.max, got, tc.budget)
		}
	}
}

func TestArrivalWithTheBudgetFullIsRefused(t *testing.T) {
	a := newAdmission(1, clock.Real)
	a.arrive()
	a.arrive() // the one place
	if got, _ := a.arrive(); got != refused {
		t.Fatalf("%v, want refused", got)
	}
}

func TestGivenBackSlotGoesToTheLongestWaitingSocket(t *testing.T) {
	a := newAdmission(1, clock.Real)
	a.arrive()
	_, first := a.arrive()
	a.budget = 2 // room for a second waiter
	_, second := a.arrive()
	a.release()
	select {
	case <-first.granted:
	default:
		t.Fatal("the longest-waiting socket was not handed the slot")
	}
	select {
	case <-second.granted:
		t.Fatal("a later socket took the slot")
	default:
	}
	if !a.wait(first, time.Millisecond, nil) {
		t.Fatal("the granted socket does not hold its slot")
	}
}

func TestArrivalQueuesBehindWaitersRatherThanTakingAGivenBackSlot(t *testing.T) {
	a := newAdmission(2, clock.Real)
	a.arrive()
	a.arrive()
	_, w := a.arrive()
	a.release() // goes to w
	if got, _ := a.arrive(); got == admitted {
		t.Fatal("a new arrival took a slot while a socket was waiting for it")
	}
	if !a.wait(w, time.Millisecond, nil) {
		t.Fatal("the waiter did not get the slot")
	}
}

func TestWaitEndingWithNoSlotKeepsTheBudgetPlaceUntilLeave(t *testing.T) {
	a := newAdmission(1, clock.Real)
	a.arrive()
	_, w := a.arrive()
	if a.wait(w, time.Millisecond, nil) {
		t.Fatal("admitted with every slot taken")
	}
	if got, _ := a.arrive(); got != refused {
		t.Fatalf("%v: the place is still held while the CONNECT is answered", got)
	}
	a.leave()
	if got, _ := a.arrive(); got != queued {
		t.Fatalf("%v: the place was not given back", got)
	}
}

func TestReleaseWithNobodyWaitingFreesTheSlot(t *testing.T) {
	a := newAdmission(1, clock.Real)
	a.arrive()
	a.release()
	if got, _ := a.arrive(); got != admitted {
		t.Fatalf("%v, want admitted", got)
	}
}

func TestStoppingAdmitsNothingAndEndsEveryWait(t *testing.T) {
	a := newAdmission(1, clock.Real)
	a.arrive()
	_, w := a.arrive()
	stop := make(chan struct{})
	close(stop)
	a.stop()
	if a.wait(w, time.Hour, stop) {
		t.Fatal("a stopping broker admitted a waiting socket")
	}
	if got, _ := a.arrive(); got != refused {
		t.Fatalf("%v, want refused while stopping", got)
	}
}

func TestConnectLevelReadsTheOpeningBytesOfAConnect(t *testing.T) {
	full5 := []byte{0x10, 0x20, 0, 4, 'M', 'Q', 'T', 'T', 5}
	for n := 0; n < len(full5); n++ {
		if _, ok, more := connectLevel(full5[:n]); ok || !more {
			t.Fatalf("%d bytes: ok=%v more=%v, want more", n, ok, more)
		}
	}
	if level, ok, _ := connectLevel(full5); !ok || level != 5 {
		t.Fatalf("level %d ok %v, want 5", level, ok)
	}
	if _, ok, more := connectLevel([]byte{0x30, 0x02}); ok || more {
		t.Fatal("a PUBLISH was read as a CONNECT")
	}
	if _, ok, more := connectLevel([]byte{0x10, 0x20, 0, 6, 'M', 'Q', 'I'}); ok || more {
		t.Fatal("MQIsdp was read as MQTT")
	}
}

func TestAcceptPacerAllowsBurstsOfTwiceTheRate(t *testing.T) {
	p := newAcceptPacer(5, clock.Real)
	for i := 0; i < 10; i++ {
		p.mu.Lock()
		ok := p.tokens >= 1
		p.mu.Unlock()
		if !ok {
			t.Fatalf("burst ended after %d, want 10", i)
		}
		p.take(nil)
	}
	p.mu.Lock()
	p.last = time.Now() // no refill: the bucket is empty
	left := p.tokens
	p.mu.Unlock()
	if left >= 1 {
		t.Fatalf("%.1f tokens after a burst of 10 at rate 5", left)
	}
}

func TestNoLimitWhenMaxConnectRateIsNone(t *testing.T) {
	if newAcceptPacer(0, clock.Real) != nil {
		t.Fatal("rate 0 (none) built a pacer")
	}
	var p *acceptPacer
	if !p.take(nil) {
		t.Fatal("no pacer refused a token")
	}
}

func TestNoDoorConfiguredGetsTCPOn1883(t *testing.T) {
	o := Options{}.WithDefaults()
	if len(o.Doors) != 1 || o.Doors[0].Kind != KindTCP || o.Doors[0].Address != ":1883" || o.Doors[0].Name != "tcp" {
		t.Fatalf("doors %+v, want one tcp door on :1883", o.Doors)
	}
	u := Options{Doors: []Door{{Kind: KindUnix, Path: "/x.sock"}}}.WithDefaults()
	if len(u.Doors) != 1 || u.Doors[0].Mode != 0o660 || u.Doors[0].Name != "unix" {
		t.Fatalf("doors %+v, want the one unix door, mode 0660, named unix", u.Doors)
	}
}

func TestMaxConnectSizeDefaultsToTheSmallerOf100KiBAndMaxMessageSize(t *testing.T) {
	if got := (Options{}).WithDefaults().MaxConnectSize; got != 100<<10 {
		t.Fatalf("%d, want 100KiB", got)
	}
	if got := (Options{MaxMessageSize: 10 << 10}).WithDefaults().MaxConnectSize; got != 10<<10 {
		t.Fatalf("%d, want max_message_size 10KiB", got)
	}
}
