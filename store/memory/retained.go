package memory

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// retainedEntry is one slot of the retained store's order-of-setting slice;
// a slot whose value was replaced or removed is cleared (gone) in place.
type retainedEntry struct {
	r    store.Record
	gone bool
}

// retainedStore is the retained store for broadcast topics, bounded only by
// the provider. entries holds every value in the order it was set, each
// with an order number of the store's own in Offset (never shown to a
// reader), so a SUBSCRIBE's pass reads a page from where the last one
// ended with a binary search and a walk - the latest channel's layout
// (latestStore) without tombstones. topics finds a topic's slot; gone slots
// are compacted away when they are half the slice.
type retainedStore struct {
	p *Provider

	mu      sync.Mutex
	period  time.Duration
	entries []retainedEntry
	gone    int
	topics  map[string]int
	next    uint64 // the order number the next Set gives; starts at 1
	bytes   int64
}

func newRetainedStore(p *Provider, period time.Duration) *retainedStore {
	return &retainedStore{p: p, period: period, topics: map[string]int{}, next: 1}
}

func (r *retainedStore) setPeriod(d time.Duration) { r.mu.Lock(); r.period = d; r.mu.Unlock() }

func (r *retainedStore) getPeriod() time.Duration { r.mu.Lock(); defer r.mu.Unlock(); return r.period }

func (r *retainedStore) restore(recs []store.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var added int64
	for _, rec := range recs {
		added += store.RecordSize(&rec)
		r.putLocked(rec)
	}
	r.bytes += added
	r.p.chargeRelief(added)
}

// putLocked makes rec its topic's value at the next order number, the
// topic's old slot (if any) gone. Accounting is the caller's. r.mu held.
func (r *retainedStore) putLocked(rec store.Record) {
	if i, ok := r.topics[rec.Topic]; ok {
		r.entries[i] = retainedEntry{gone: true}
		r.gone++
	}
	rec.Offset = r.next
	r.next++
	r.topics[rec.Topic] = len(r.entries)
	r.entries = append(r.entries, retainedEntry{r: rec})
	r.entries = compactSlots(r.entries, r.topics, &r.gone)
}

// Set implements store.Retained: at the provider's bound the new value is
// refused and what is stored stays untouched.
func (r *retainedStore) Set(rec store.Record) error {
	size := store.RecordSize(&rec)
	r.mu.Lock()
	defer r.mu.Unlock()
	var old int64
	if i, ok := r.topics[rec.Topic]; ok {
		old = store.RecordSize(&r.entries[i].r)
	}
	if delta := size - old; delta > 0 {
		if err := r.p.charge(delta); err != nil {
			return fmt.Errorf("retained store: %w", err)
		}
	} else {
		r.p.refund(-delta)
	}
	r.putLocked(rec)
	r.bytes += size - old
	return nil
}

// Delete implements store.Retained.
func (r *retainedStore) Delete(topic string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i, ok := r.topics[topic]
	if !ok {
		return false, nil
	}
	size := store.RecordSize(&r.entries[i].r)
	r.removeLocked(i)
	r.bytes -= size
	r.p.refund(size)
	return true, nil
}

// removeLocked clears slot i and forgets its topic. r.mu held.
func (r *retainedStore) removeLocked(i int) {
	delete(r.topics, r.entries[i].r.Topic)
	r.entries[i] = retainedEntry{gone: true}
	r.gone++
	r.entries = compactSlots(r.entries, r.topics, &r.gone)
}

// Get implements store.Retained.
func (r *retainedStore) Get(topic string) (store.Record, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i, ok := r.topics[topic]
	if !ok {
		return store.Record{}, false, nil
	}
	rec := r.entries[i].r
	rec.Offset = 0 // the order number is the store's own
	return rec, true, nil
}

// Range implements store.Retained: values are copied out under the lock and
// fn runs without it.
func (r *retainedStore) Range(match func(string) bool, fn func(store.Record) bool) error {
	for _, rec := range r.list(match) {
		if !fn(rec) {
			break
		}
	}
	return nil
}

// list is the matching values in topic order.
func (r *retainedStore) list(match func(string) bool) []store.Record {
	r.mu.Lock()
	out := make([]store.Record, 0, len(r.topics))
	for i := range r.entries {
		e := &r.entries[i]
		if !e.gone && (match == nil || match(e.r.Topic)) {
			rec := e.r
			rec.Offset = 0
			out = append(out, rec)
		}
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	return out
}

// Page implements store.Retained: a binary search for since and a walk, at
// most pageScan slots looked at under the lock, so a sparse filter over a
// large store holds the lock no longer than a page's worth of matching.
func (r *retainedStore) Page(since uint64, match func(string) bool, max int, dst []store.Record) ([]store.Record, uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := dst[:0]
	// Gone slots carry no order number: a search lands on the first live
	// slot at or after since by skipping them forward.
	start := sort.Search(len(r.entries), func(i int) bool {
		j := i
		for j < len(r.entries) && r.entries[j].gone {
			j++
		}
		return j == len(r.entries) || r.entries[j].r.Offset >= since
	})
	next := since
	scanned := 0
	for i := start; i < len(r.entries) && len(out) < max && scanned < pageScan; i++ {
		e := &r.entries[i]
		if e.gone {
			continue
		}
		scanned++
		next = e.r.Offset + 1
		if match == nil || match(e.r.Topic) {
			out = append(out, e.r)
		}
	}
	if len(out) < max && scanned < pageScan {
		next = r.next // nothing more set yet
	}
	return out, next, nil
}

// pageScan is how many values one Page call looks at.
const pageScan = 4096

// Next implements store.Retained.
func (r *retainedStore) Next() uint64 { r.mu.Lock(); defer r.mu.Unlock(); return r.next }

// Count implements store.Retained.
func (r *retainedStore) Count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.topics) }

// Bytes implements store.Retained.
func (r *retainedStore) Bytes() int64 { r.mu.Lock(); defer r.mu.Unlock(); return r.bytes }

// Trim implements store.Retained. A value with no time is never too old.
func (r *retainedStore) Trim(before time.Time) (int, error) {
	r.mu.Lock()
	removed, freed := 0, int64(0)
	for i := range r.entries {
		e := &r.entries[i]
		if !e.gone && !e.r.Time.IsZero() && e.r.Time.Before(before) {
			freed += store.RecordSize(&e.r)
			delete(r.topics, e.r.Topic)
			*e = retainedEntry{gone: true}
			r.gone++
			removed++
		}
	}
	r.entries = compactSlots(r.entries, r.topics, &r.gone)
	r.bytes -= freed
	r.p.refund(freed)
	r.mu.Unlock()
	r.p.reportRemoved(store.RetainedName, removed, nil)
	return removed, nil
}

func (r *retainedStore) sweepAge(now time.Time) int {
	period := r.getPeriod()
	if period <= 0 {
		return 0
	}
	n, _ := r.Trim(now.Add(-period))
	return n
}

var _ store.Retained = (*retainedStore)(nil)
