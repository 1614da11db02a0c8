package memory

import (
	"fmt"

	"github.com/saguin-edge/saguin/store"
)

type bentry struct {
	e        store.BroadcastEntry
	released bool
}

// bcastLog is the broadcast log. entries[i] is offset base+i; a message
// nobody owes any more is cleared in place keeping only its slot, so a
// release costs the same wherever the message sits; the released prefix is
// dropped once it is half the slice.
type bcastLog struct {
	chanCore
	entries []bentry
	base    uint64
	count   int
}

func newBcastLog(p *Provider) *bcastLog {
	return &bcastLog{chanCore: newChanCore(p, store.BroadcastName, "broadcast log"), base: 1}
}

func (b *bcastLog) restore(st *sessionsState) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next, b.floor, b.base = st.log.next, st.log.floor, st.log.floor
	for i, r := range st.log.records {
		// Gaps from releases are kept as released slots.
		for b.base+uint64(len(b.entries)) < r.Offset {
			b.entries = append(b.entries, bentry{released: true})
		}
		b.entries = append(b.entries, bentry{e: store.BroadcastEntry{Record: r, ForShares: st.meta[i].forShares, OwedTo: st.meta[i].owedTo}})
		b.bytes += store.RecordSize(&r)
		b.count++
	}
	b.p.chargeRelief(b.bytes)
	b.restoreHolds(st.log.holds)
}

// Name implements store.Counters.
func (b *bcastLog) Name() string { return b.name }

// Len implements store.Counters.
func (b *bcastLog) Len() int { b.mu.Lock(); defer b.mu.Unlock(); return b.count }

// Append implements store.BroadcastLog.
func (b *bcastLog) Append(e store.BroadcastEntry) (store.BroadcastEntry, error) {
	size := store.RecordSize(&e.Record)
	if err := b.p.charge(size); err != nil {
		return store.BroadcastEntry{}, fmt.Errorf("broadcast log: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.appendLocked(&e, size)
	return e, nil
}

func (b *bcastLog) appendLocked(e *store.BroadcastEntry, size int64) {
	e.Offset = b.next
	b.next++
	if b.count == 0 {
		b.floor = e.Offset
	}
	b.entries = append(b.entries, bentry{e: *e})
	b.bytes += size
	b.count++
}

// ReadFrom implements store.BroadcastLog.
func (b *bcastLog) ReadFrom(from uint64, max int, dst []store.BroadcastEntry) ([]store.BroadcastEntry, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := dst[:0]
	if from < b.base {
		from = b.base
	}
	for i := int(from - b.base); i < len(b.entries) && len(out) < max; i++ {
		if !b.entries[i].released {
			out = append(out, b.entries[i].e)
		}
	}
	return out, nil
}

// Release implements store.BroadcastLog.
func (b *bcastLog) Release(offsets []uint64) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var freed int64
	for _, o := range offsets {
		if o < b.base || o >= b.next {
			continue
		}
		e := &b.entries[o-b.base]
		if e.released {
			continue
		}
		freed += store.RecordSize(&e.e.Record)
		*e = bentry{released: true}
		b.count--
	}
	b.bytes -= freed
	b.p.refund(freed)
	// The floor is the lowest offset still held.
	i := int(b.floor - b.base)
	for i < len(b.entries) && b.entries[i].released {
		i++
	}
	b.floor = b.base + uint64(i)
	if i > 0 && i >= len(b.entries)/2 {
		live := len(b.entries) - i
		n := make([]bentry, live, 2*live+16)
		copy(n, b.entries[i:])
		b.entries = n
		b.base = b.floor
	}
	return freed, nil
}

// Oldest implements store.BroadcastLog.
func (b *bcastLog) Oldest(max int) ([]uint64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []uint64
	for i := range b.entries {
		if len(out) >= max {
			break
		}
		if !b.entries[i].released {
			out = append(out, b.entries[i].e.Offset)
		}
	}
	return out, nil
}

// ReleaseHeld implements store.Holder.
func (b *bcastLog) ReleaseHeld(clientID string, packetID uint16) (store.Record, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, size, err := b.takeHeld(clientID, packetID, 0)
	if err != nil {
		return store.Record{}, err
	}
	e := store.BroadcastEntry{Record: r}
	b.appendLocked(&e, size)
	return e.Record, nil
}

func (b *bcastLog) copyOut(st *sessionsState) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st.log.next, st.log.floor = b.next, b.floor
	for i := range b.entries {
		if e := &b.entries[i]; !e.released {
			st.log.records = append(st.log.records, e.e.Record)
			st.meta = append(st.meta, bcastMeta{forShares: e.e.ForShares, owedTo: e.e.OwedTo})
		}
	}
	st.log.holds = b.holds.list()
}

var _ store.BroadcastLog = (*bcastLog)(nil)
