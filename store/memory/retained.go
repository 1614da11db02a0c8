package memory

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// retainedStore is the retained store for broadcast topics: a map, bounded
// only by the provider.
type retainedStore struct {
	p *Provider

	mu     sync.Mutex
	period time.Duration
	values map[string]store.Record
	bytes  int64
}

func newRetainedStore(p *Provider, period time.Duration) *retainedStore {
	return &retainedStore{p: p, period: period, values: map[string]store.Record{}}
}

func (r *retainedStore) setPeriod(d time.Duration) { r.mu.Lock(); r.period = d; r.mu.Unlock() }

func (r *retainedStore) getPeriod() time.Duration { r.mu.Lock(); defer r.mu.Unlock(); return r.period }

func (r *retainedStore) restore(recs []store.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range recs {
		r.values[rec.Topic] = rec
		r.bytes += store.RecordSize(&rec)
	}
	r.p.chargeRelief(r.bytes)
}

// Set implements store.Retained: at the provider's bound the new value is
// refused and what is stored stays untouched.
func (r *retainedStore) Set(rec store.Record) error {
	size := store.RecordSize(&rec)
	r.mu.Lock()
	defer r.mu.Unlock()
	var old int64
	if prev, ok := r.values[rec.Topic]; ok {
		old = store.RecordSize(&prev)
	}
	if delta := size - old; delta > 0 {
		if err := r.p.charge(delta); err != nil {
			return fmt.Errorf("retained store: %w", err)
		}
	} else {
		r.p.refund(-delta)
	}
	rec.Offset = 0
	r.values[rec.Topic] = rec
	r.bytes += size - old
	return nil
}

// Delete implements store.Retained.
func (r *retainedStore) Delete(topic string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	prev, ok := r.values[topic]
	if !ok {
		return false, nil
	}
	size := store.RecordSize(&prev)
	delete(r.values, topic)
	r.bytes -= size
	r.p.refund(size)
	return true, nil
}

// Get implements store.Retained.
func (r *retainedStore) Get(topic string) (store.Record, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.values[topic]
	return rec, ok, nil
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
	out := make([]store.Record, 0, len(r.values))
	for t, rec := range r.values {
		if match == nil || match(t) {
			out = append(out, rec)
		}
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	return out
}

// Count implements store.Retained.
func (r *retainedStore) Count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.values) }

// Bytes implements store.Retained.
func (r *retainedStore) Bytes() int64 { r.mu.Lock(); defer r.mu.Unlock(); return r.bytes }

// Trim implements store.Retained. A value with no time is never too old.
func (r *retainedStore) Trim(before time.Time) (int, error) {
	r.mu.Lock()
	removed, freed := 0, int64(0)
	for t, rec := range r.values {
		if !rec.Time.IsZero() && rec.Time.Before(before) {
			freed += store.RecordSize(&rec)
			delete(r.values, t)
			removed++
		}
	}
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
