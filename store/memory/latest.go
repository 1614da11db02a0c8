package memory

import (
	"fmt"
	"sort"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// latestEntry is one slot of a latest channel's offset-ordered slice; a slot
// whose value was replaced or removed is cleared (gone) in place.
type latestEntry struct {
	v    store.Value
	gone bool
}

// latestStore is a latest channel. entries holds every current value and
// tombstone in offset order, so "changes since an offset" is a binary search
// and a walk; topics finds a topic's slot. Replacing a value clears its old
// slot and appends the new one; gone slots are compacted away when they are
// half the slice.
type latestStore struct {
	readChannel
	entries []latestEntry
	gone    int
	topics  map[string]int
	values  int // current, non-deleted values
}

func newLatestStore(p *Provider, name string, opts store.ChannelOptions) *latestStore {
	return &latestStore{readChannel: newReadChannel(p, name, "latest channel "+name, opts), topics: map[string]int{}}
}

func (l *latestStore) restore(d *channelData) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next, l.floor = d.next, d.floor
	for i, r := range d.records {
		v := store.Value{Record: r, Deleted: d.deleted[i]}
		if _, dup := l.topics[r.Topic]; dup {
			return fmt.Errorf("latest channel %s: topic %q stored twice: %w", l.name, r.Topic, store.ErrCorrupt)
		}
		l.topics[r.Topic] = len(l.entries)
		l.entries = append(l.entries, latestEntry{v: v})
		l.bytes += store.RecordSize(&v.Record)
		if !v.Deleted {
			l.values++
		}
	}
	l.p.chargeRelief(l.bytes)
	l.p.restorePositions(l.name, &l.pos, d.positions)
	l.restoreHolds(d.holds)
	return nil
}

// Name implements store.Counters.
func (l *latestStore) Name() string { return l.name }

// Len implements store.Counters: values and tombstones held.
func (l *latestStore) Len() int { l.mu.Lock(); defer l.mu.Unlock(); return len(l.topics) }

// Count implements store.Latest.
func (l *latestStore) Count() int { l.mu.Lock(); defer l.mu.Unlock(); return l.values }

// Set implements store.Latest. A latest channel has no size bound of its own;
// on a memory provider the value still counts against the provider's, and the
// value it replaces is already in hand, so only the difference is asked for.
func (l *latestStore) Set(r store.Record) (store.Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, err := l.putLocked(store.Value{Record: r}, false)
	return v.Record, err
}

// putLocked writes v at next in place of its topic's entry.
func (l *latestStore) putLocked(v store.Value, relief bool) (store.Value, error) {
	size := store.RecordSize(&v.Record)
	var oldSize int64
	i, had := l.topics[v.Topic]
	if had {
		oldSize = store.RecordSize(&l.entries[i].v.Record)
	}
	if delta := size - oldSize; delta > 0 && !relief {
		if err := l.p.charge(delta); err != nil {
			return store.Value{}, fmt.Errorf("latest channel %s: %w", l.name, err)
		}
	} else {
		l.p.chargeRelief(delta)
	}
	if had {
		if !l.entries[i].v.Deleted {
			l.values--
		}
		l.entries[i] = latestEntry{gone: true}
		l.gone++
	}
	v.Offset = l.next
	l.next++
	l.topics[v.Topic] = len(l.entries)
	l.entries = append(l.entries, latestEntry{v: v})
	l.bytes += size - oldSize
	if !v.Deleted {
		l.values++
	}
	l.entries = compactSlots(l.entries, l.topics, &l.gone)
	return v, nil
}

// Get implements store.Latest.
func (l *latestStore) Get(topic string) (store.Value, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i, ok := l.topics[topic]
	if !ok {
		return store.Value{}, false, nil
	}
	return l.entries[i].v, true, nil
}

// Delete implements store.Latest: a tombstone with an offset of its own and
// no payload; a topic with no current value stores nothing.
func (l *latestStore) Delete(r store.Record) (store.Value, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i, ok := l.topics[r.Topic]
	if !ok || l.entries[i].v.Deleted {
		return store.Value{}, false, nil
	}
	r.Payload = nil
	v, err := l.putLocked(store.Value{Record: r, Deleted: true}, true)
	if err != nil {
		return store.Value{}, false, err
	}
	return v, true, nil
}

// Changes implements store.Latest.
func (l *latestStore) Changes(since uint64, withDeletions bool, match func(string) bool, max int, dst []store.Value) ([]store.Value, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := dst[:0]
	start := sort.Search(len(l.entries), func(i int) bool {
		// Gone slots keep no offset; they sort with their neighbours by
		// scanning forward, so treat them as "not yet".
		j := i
		for j < len(l.entries) && l.entries[j].gone {
			j++
		}
		return j == len(l.entries) || l.entries[j].v.Offset >= since
	})
	for i := start; i < len(l.entries) && len(out) < max; i++ {
		e := &l.entries[i]
		if e.gone || e.v.Offset < since || (e.v.Deleted && !withDeletions) {
			continue
		}
		if match != nil && !match(e.v.Topic) {
			continue
		}
		out = append(out, e.v)
	}
	return out, nil
}

// Trim implements store.Latest. Values and tombstones age on separate
// clocks, so every entry is examined: the memory channel already holds them.
func (l *latestStore) Trim(valuesBefore, deletionsBefore time.Time) (int, int64, error) {
	l.mu.Lock()
	oldFloor := l.floor
	removed, freed := 0, int64(0)
	for i := range l.entries {
		e := &l.entries[i]
		if e.gone || e.v.Time.IsZero() {
			continue
		}
		cut := valuesBefore
		if e.v.Deleted {
			cut = deletionsBefore
		}
		if cut.IsZero() || !e.v.Time.Before(cut) {
			continue
		}
		size := store.RecordSize(&e.v.Record)
		freed += size
		l.bytes -= size
		if !e.v.Deleted {
			l.values--
		}
		if e.v.Offset+1 > l.floor {
			l.floor = e.v.Offset + 1
		}
		delete(l.topics, e.v.Topic)
		*e = latestEntry{gone: true}
		l.gone++
		removed++
	}
	var lost []string
	if removed > 0 {
		l.p.refund(freed)
		lost = l.pos.passed(oldFloor, l.floor)
		l.entries = compactSlots(l.entries, l.topics, &l.gone)
	}
	l.mu.Unlock()
	l.p.reportRemoved(l.name, removed, lost)
	return removed, freed, nil
}

func (l *latestStore) sweepAge(now time.Time) int {
	o := l.options()
	var vb, db time.Time
	if o.RetentionPeriod > 0 {
		vb = now.Add(-o.RetentionPeriod)
	}
	if o.DeletionRetentionPeriod > 0 {
		db = now.Add(-o.DeletionRetentionPeriod)
	}
	if vb.IsZero() && db.IsZero() {
		return 0
	}
	n, _, _ := l.Trim(vb, db)
	return n
}

// ReleaseHeld implements store.Holder: the held record becomes the topic's
// value (or its deletion, for an empty payload) under one lock.
func (l *latestStore) ReleaseHeld(clientID string, packetID uint16) (store.Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, size, err := l.takeHeld(clientID, packetID, 0)
	if err != nil {
		return store.Record{}, err
	}
	// The hold's bytes are handed to the value: refund, then charge as relief.
	l.p.refund(size)
	if len(r.Payload) == 0 {
		i, had := l.topics[r.Topic]
		if !had || l.entries[i].v.Deleted {
			return r, nil
		}
		v, err := l.putLocked(store.Value{Record: r, Deleted: true}, true)
		return v.Record, err
	}
	v, err := l.putLocked(store.Value{Record: r}, true)
	return v.Record, err
}

func (l *latestStore) copyOut() channelData {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := channelData{next: l.next, floor: l.floor, positions: l.pos.sorted(), holds: l.holds.list()}
	for i := range l.entries {
		if e := &l.entries[i]; !e.gone {
			d.records = append(d.records, e.v.Record)
			d.deleted = append(d.deleted, e.v.Deleted)
		}
	}
	return d
}

var _ store.Latest = (*latestStore)(nil)
