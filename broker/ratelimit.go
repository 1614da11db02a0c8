package broker

import (
	"hash/maphash"
	"sync"
	"time"
)

// budgets are limits.publish_rate and limits.publish_bytes, or the figures
// of the acl_file entry applying to a client: one budget per client id,
// which outlives the connection (so reconnecting does not refill it) and is
// dropped once it has refilled, so a quiet client costs nothing (RFC 0002
// "How fast one client may publish").
type budgets struct {
	seed   maphash.Seed
	shards [sessionShards]budgetShard
}

type budgetShard struct {
	mu    sync.Mutex
	m     map[string]*budget
	swept time.Time
}

// sweepEvery is how often a shard drops the budgets that have refilled, on
// the next publish that touches it.
const sweepEvery = 10 * time.Second

// figures are what one client is held to, per second; 0 is no bound. The
// figures follow the user name and the budget the client id, so they are
// given at each take rather than kept with the budgets.
type figures struct {
	rate, bytes float64
}

func (f figures) bounded() bool { return f.rate > 0 || f.bytes > 0 }

// budget is what one client may still publish now. Either figure may go
// negative: a message larger than a second's bytes is admitted and spends
// into deficit rather than being banned for its size. of is the figures it
// was last charged under: what refilling it means.
type budget struct {
	msgs, bytes float64
	at          time.Time
	of          figures
}

func newBudgets() *budgets {
	bs := &budgets{seed: maphash.MakeSeed()}
	for i := range bs.shards {
		bs.shards[i].m = make(map[string]*budget)
	}
	return bs
}

// take spends one publish of size bytes from id's budget under f, or
// reports that the client is over its figures. A client held to new figures
// (another entry after a re-read, or another user on the id) keeps what it
// had saved, up to one second of the new ones.
func (bs *budgets) take(id string, size int, now time.Time, f figures) bool {
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
		b = &budget{msgs: f.rate, bytes: f.bytes, at: now, of: f}
		sh.m[id] = b
	}
	b.of = f
	b.refill(now)
	if (f.rate > 0 && b.msgs < 1) || (f.bytes > 0 && b.bytes <= 0) {
		return false
	}
	b.msgs--
	b.bytes -= float64(size)
	return true
}

// refill adds what the time since the last look earned, up to one second's.
func (b *budget) refill(now time.Time) {
	el := now.Sub(b.at).Seconds()
	b.at = now
	if b.of.rate > 0 {
		b.msgs = min(b.of.rate, b.msgs+el*b.of.rate)
	}
	if b.of.bytes > 0 {
		b.bytes = min(b.of.bytes, b.bytes+el*b.of.bytes)
	}
}

// sweep drops every budget in sh that has refilled: it holds nothing a
// fresh one would not. The shard's lock is held.
func (bs *budgets) sweep(sh *budgetShard, now time.Time) {
	sh.swept = now
	for id, b := range sh.m {
		b.refill(now)
		if (b.of.rate == 0 || b.msgs >= b.of.rate) && (b.of.bytes == 0 || b.bytes >= b.of.bytes) {
			delete(sh.m, id)
		}
	}
}
