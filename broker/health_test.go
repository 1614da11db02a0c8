package broker

import (
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker/clock"
)

// TestPublishPathFreeTimesOutOnTheInjectedClockWhileAShardLockIsHeld holds
// one session shard's lock: the probe waits until the fake clock passes its
// timeout and reports false; with the lock let go it reports true at once.
func TestPublishPathFreeTimesOutOnTheInjectedClockWhileAShardLockIsHeld(t *testing.T) {
	b := newTestBroker(t, Options{})
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	if !b.PublishPathFree(fake, time.Second) {
		t.Fatal("an idle broker's publish path is not free")
	}
	b.shards[17].mu.Lock()
	start := fake.Now()
	if waitProbe(b, fake) {
		t.Fatal("a held shard lock read as a free publish path")
	}
	if waited := fake.Now().Sub(start); waited < time.Second {
		t.Fatalf("gave up after %v on the clock, before its timeout", waited)
	}
	b.shards[17].mu.Unlock()
	if !b.PublishPathFree(fake, time.Second) {
		t.Fatal("the lock let go, the path still reads as held")
	}
}

func TestPublishPathFreeSeesTheSubscriptionIndexHeldForWriting(t *testing.T) {
	b := newTestBroker(t, Options{})
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	b.subs.mu.Lock()
	if waitProbe(b, fake) {
		t.Fatal("the index held for writing read as a free publish path")
	}
	b.subs.mu.Unlock()
}

// waitProbe runs the probe with a one-second timeout, moving the fake clock
// on in small steps until it answers.
func waitProbe(b *Broker, fake *clock.Fake) bool {
	done := make(chan bool)
	go func() { done <- b.PublishPathFree(fake, time.Second) }()
	for {
		select {
		case got := <-done:
			return got
		case <-time.After(time.Millisecond):
			fake.Advance(10 * time.Millisecond)
		}
	}
}
