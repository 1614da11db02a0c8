package broker

import (
	"time"

	"github.com/saguin-edge/saguin/broker/clock"
)

// healthPoll is how often PublishPathFree tries a lock again while it waits:
// short beside any timeout worth the name, long enough not to spin.
const healthPoll = time.Millisecond

// PublishPathFree reports whether every lock a publish takes can be taken
// within timeout, read on clk: the subscription index (read side, as a
// publisher takes it), every session shard, the shared groups, the
// broadcast log's and every publish-rate budget's. Each is taken and let go
// at once, one at a time, so the probe holds up a publish for no longer than
// one of them would. No path holds these across disk I/O (LOCKS.md), so a
// lock that cannot be had within the timeout is a wedged broker, which is
// what /health answers (RFC 0005 "The health endpoint").
func (b *Broker) PublishPathFree(clk clock.Clock, timeout time.Duration) bool {
	clk = clock.Or(clk)
	deadline := clk.Now().Add(timeout)
	take := func(try func() bool) bool {
		for !try() {
			if !clk.Now().Before(deadline) {
				return false
			}
			time.Sleep(healthPoll)
		}
		return true
	}
	if !take(func() bool {
		if b.subs.mu.TryRLock() {
			b.subs.mu.RUnlock()
			return true
		}
		return false
	}) {
		return false
	}
	tryLock := func(l interface {
		TryLock() bool
		Unlock()
	}) func() bool {
		return func() bool {
			if l.TryLock() {
				l.Unlock()
				return true
			}
			return false
		}
	}
	for i := range b.shards {
		if !take(tryLock(&b.shards[i].mu)) {
			return false
		}
	}
	if !take(tryLock(&b.shares.mu)) || !take(tryLock(&b.bcast.mu)) {
		return false
	}
	if b.budgets != nil {
		for i := range b.budgets.shards {
			if !take(tryLock(&b.budgets.shards[i].mu)) {
				return false
			}
		}
	}
	return true
}
