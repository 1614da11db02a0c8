package broker

import (
	"hash/maphash"
	"sync"
	"time"
)

// budgets are limits.publish_rate and limits.publish_bytes: one budget per
// client id, which outlives the connection (so reconnecting does not refill
// it) and is dropped once it has refilled, so a quiet client costs nothing
// (RFC 0002 "How fast one client may publish").
type budgets struct {
	rate, bytes float64 // per second; 0 is no bound
	seed        maphash.Seed
	shards      [sessionShards]budgetShard
}

type budgetShard struct {
	mu    sync.Mutex
	m     map[string]*budget
	swept time.Time
}

// sweepEvery is how often a shard drops the budgets that have refilled, on
// the next publish that touches it.
const sweepEvery = 10 * time.Second

// budget is what one client may still publish now. Either figure may go
// negative: a message larger than a second's bytes is admitted and spends
// into deficit rather than being banned for its size.
type budget struct {
	msgs, bytes float64
	at          time.Time
}

func newBudgets(rate, bytes int64) *budgets {
	if rate <= 0 && bytes <= 0 {
		return nil
	}
	bs := &budgets{rate: float64(rate), bytes: float64(bytes), seed: maphash.MakeSeed()}
	for i := range bs.shards {
		bs.shards[i].m = make(map[string]*budget)
	}
	return bs
}

// take spends one publish of size bytes from id's budget, or reports that
// the client is over its rate.
func (bs *budgets) take(id string, size int, now time.Time) bool {
	if bs == nil {
		return true
	}
	sh := &bs.shards[maphash.String(bs.seed, id)%sessionShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if now.Sub(sh.swept) >= sweepEvery {
		bs.sweep(sh, now)
	}
	b := sh.m[id]
	if b == nil {
		b = &budget{msgs: bs.rate, bytes: bs.bytes, at: now}
		sh.m[id] = b
	}
	bs.refill(b, now)
	if (bs.rate > 0 && b.msgs < 1) || (bs.bytes > 0 && b.bytes <= 0) {
		return false
	}
	b.msgs--
	b.bytes -= float64(size)
	return true
}

// refill adds what the time since the last look earned, up to one second's.
func (bs *budgets) refill(b *budget, now time.Time) {
	el := now.Sub(b.at).Seconds()
	b.at = now
	if bs.rate > 0 {
		b.msgs = min(bs.rate, b.msgs+el*bs.rate)
	}
	if bs.bytes > 0 {
		b.bytes = min(bs.bytes, b.bytes+el*bs.bytes)
	}
}

// sweep drops every budget in sh that has refilled: it holds nothing a
// fresh one would not. The shard's lock is held.
func (bs *budgets) sweep(sh *budgetShard, now time.Time) {
	sh.swept = now
	for id, b := range sh.m {
		bs.refill(b, now)
		if (bs.rate == 0 || b.msgs >= bs.rate) && (bs.bytes == 0 || b.bytes >= bs.bytes) {
			delete(sh.m, id)
		}
	}
}
