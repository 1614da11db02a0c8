package memory

import (
	"fmt"
	"sync"
	"time"

	"saguin/store"
)

// logStore is an append channel or a queue's dead-letter channel. Live
// records are recs[dead:], at contiguous offsets floor, floor+1, ... next-1,
// so an offset is found by subtraction. Removal from the front clears the
// removed slots at once (the payload is unreachable the moment it stops being
// counted) and compacts only when the dead prefix reaches half the slice.
type logStore struct {
	p    *Provider
	name string

	mu    sync.Mutex
	opts  store.ChannelOptions
	recs  []store.Record
	dead  int
	next  uint64
	floor uint64
	bytes int64
	pos   positionSet
	holds holdSet
}

func newLogStore(p *Provider, name string, opts store.ChannelOptions) *logStore {
	return &logStore{p: p, name: name, opts: opts, next: 1, floor: 1}
}

func (l *logStore) setOptions(o store.ChannelOptions) {
	l.mu.Lock()
	l.opts = o
	l.mu.Unlock()
}

func (l *logStore) options() store.ChannelOptions {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.opts
}

// restore loads a decoded channel (already checked by the decoder). The
// provider is charged for what the channel holds whatever its bound: a
// snapshot written under a larger max_bytes loads whole.
func (l *logStore) restore(d *channelData) error {
	if d == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next, l.floor = d.next, d.floor
	l.recs = d.records
	l.dead = 0
	l.bytes = 0
	for i := range l.recs {
		l.bytes += store.RecordSize(&l.recs[i])
	}
	l.p.chargeRelief(l.bytes)
	l.p.restorePositions(l.name, &l.pos, d.positions)
	for _, h := range d.holds {
		l.holds.put(h)
	}
	l.p.chargeRelief(l.holds.bytes())
	return nil
}

// Name implements store.Counters.
func (l *logStore) Name() string { return l.name }

// Next implements store.Counters.
func (l *logStore) Next() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next
}

// Floor implements store.Counters.
func (l *logStore) Floor() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.floor
}

// Bytes implements store.Counters.
func (l *logStore) Bytes() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bytes
}

// Len implements store.Counters.
func (l *logStore) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.recs) - l.dead
}

// SetMaxBytes implements store.AppendLog.
func (l *logStore) SetMaxBytes(n int64) {
	l.mu.Lock()
	l.opts.MaxBytes = n
	l.mu.Unlock()
}

// Append implements store.AppendLog. The channel bound is checked first, then
// the provider's; the offset is taken only once both said yes, so a refusal
// consumes nothing.
func (l *logStore) Append(r store.Record) (store.Record, error) {
	size := store.RecordSize(&r)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.opts.MaxBytes > 0 && l.bytes+size > l.opts.MaxBytes {
		return store.Record{}, fmt.Errorf("channel %s: %d bytes held, a %d-byte record passes max_bytes %d: %w", l.name, l.bytes, size, l.opts.MaxBytes, store.ErrChannelFull)
	}
	if err := l.p.charge(size); err != nil {
		return store.Record{}, fmt.Errorf("channel %s: %w", l.name, err)
	}
	l.appendLocked(&r, size)
	return r, nil
}

// appendLocked writes r at next; the bytes are already charged.
func (l *logStore) appendLocked(r *store.Record, size int64) {
	r.Offset = l.next
	l.next++
	l.recs = append(l.recs, *r)
	l.bytes += size
}

// appendRelief is the dead-letter move's half: charged, never refused, no
// channel bound checked (RFC 0002 "Validation"). Called with the queue's lock
// held; takes this log's lock inside it (lock order queue -> log).
func (l *logStore) appendRelief(r store.Record) store.Record {
	size := store.RecordSize(&r)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.p.chargeRelief(size)
	l.appendLocked(&r, size)
	return r
}

// ReadFrom implements store.AppendLog.
func (l *logStore) ReadFrom(from uint64, max int, dst []store.Record) (store.Window, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := store.Window{Floor: l.floor, Next: l.next, Records: dst[:0]}
	if from < l.floor {
		return w, &store.BelowFloorError{Channel: l.name, Requested: from, Floor: l.floor}
	}
	if from >= l.next || max <= 0 {
		return w, nil
	}
	i := l.dead + int(from-l.floor)
	end := len(l.recs)
	if end-i > max {
		end = i + max
	}
	w.Records = append(w.Records, l.recs[i:end]...)
	return w, nil
}

// FirstAtOrAfter implements store.AppendLog: offsets ascend through the
// slice, so the first record in offset order whose time qualifies is the
// lowest such offset; every record before it is examined, none skipped by a
// binary search that a clock step would mislead.
func (l *logStore) FirstAtOrAfter(t time.Time) (uint64, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := l.dead; i < len(l.recs); i++ {
		rt := l.recs[i].Time
		if !rt.IsZero() && !rt.Before(t) {
			return l.recs[i].Offset, true, nil
		}
	}
	return 0, false, nil
}

// Trim implements store.AppendLog.
func (l *logStore) Trim(before time.Time, maxBytes int64) (int, int64, error) {
	l.mu.Lock()
	oldFloor := l.floor
	removed, freed := 0, int64(0)
	remove := func() {
		r := &l.recs[l.dead]
		freed += store.RecordSize(r)
		l.bytes -= store.RecordSize(r)
		*r = store.Record{}
		l.dead++
		removed++
	}
	if !before.IsZero() {
		for l.dead < len(l.recs) {
			t := l.recs[l.dead].Time
			// A record with no time is never too old (it would read as 1754).
			if t.IsZero() || !t.Before(before) {
				break
			}
			remove()
		}
	}
	if maxBytes > 0 {
		for l.dead < len(l.recs) && l.bytes > maxBytes {
			remove()
		}
	}
	var lost []string
	if removed > 0 {
		// The floor rises in the same operation as the removal (invariant 1).
		l.floor += uint64(removed)
		lost = l.pos.passed(oldFloor, l.floor)
		l.p.refund(freed)
		l.compact()
	}
	l.mu.Unlock()
	l.p.reportRemoved(l.name, removed, lost)
	return removed, freed, nil
}

// compact drops the dead prefix once it is half the slice, reallocating when
// the backing array has grown far beyond what is live.
func (l *logStore) compact() {
	if l.dead == 0 || l.dead < len(l.recs)/2 {
		return
	}
	live := len(l.recs) - l.dead
	if cap(l.recs) > 4*live+64 {
		n := make([]store.Record, live, 2*live+16)
		copy(n, l.recs[l.dead:])
		l.recs = n
	} else {
		copy(l.recs, l.recs[l.dead:])
		clear(l.recs[live:])
		l.recs = l.recs[:live]
	}
	l.dead = 0
}

func (l *logStore) sweepSize() (int, error) {
	l.mu.Lock()
	limit, over := l.opts.RetentionBytes, l.opts.RetentionBytes > 0 && l.bytes > l.opts.RetentionBytes
	l.mu.Unlock()
	if !over {
		return 0, nil
	}
	n, _, err := l.Trim(time.Time{}, limit)
	return n, err
}

func (l *logStore) sweepAge(now time.Time) int {
	period := l.options().RetentionPeriod
	if period <= 0 {
		return 0
	}
	n, _, _ := l.Trim(now.Add(-period), 0)
	return n
}

// Position implements store.Positions.
func (l *logStore) Position(reader string) (store.Position, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.pos.get(reader)
	return p, ok, nil
}

// SavePosition implements store.Positions. A position beyond next names a
// record that does not exist and is refused.
func (l *logStore) SavePosition(p store.Position) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p.Offset > l.next {
		return fmt.Errorf("channel %s: position %d of %s is beyond next %d", l.name, p.Offset, p.Reader, l.next)
	}
	l.pos.save(p)
	return nil
}

// DropPosition implements store.Positions.
func (l *logStore) DropPosition(reader string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pos.drop(reader), nil
}

// LowestPosition implements store.Positions.
func (l *logStore) LowestPosition() (uint64, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pos.lowest(l.next)
}

// Hold implements store.Holder.
func (l *logStore) Hold(h store.Held) error {
	h.Record.Offset = 0
	size := store.RecordSize(&h.Record)
	if err := l.p.charge(size); err != nil {
		return fmt.Errorf("channel %s: holding %s/%d: %w", l.name, h.ClientID, h.PacketID, err)
	}
	l.mu.Lock()
	old, had := l.holds.put(h)
	l.mu.Unlock()
	if had {
		l.p.refund(store.RecordSize(&old.Record))
	}
	return nil
}

// ReleaseHeld implements store.Holder: the record moves from the hold to the
// log under one lock, so it is never in both and never in neither. The bytes
// it was charged as a hold are what it is charged as a record.
func (l *logStore) ReleaseHeld(clientID string, packetID uint16) (store.Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.holds.m[holdKey{clientID, packetID}]
	if !ok {
		return store.Record{}, fmt.Errorf("channel %s: no held publish %s/%d: %w", l.name, clientID, packetID, store.ErrNotFound)
	}
	size := store.RecordSize(&h.Record)
	if l.opts.MaxBytes > 0 && l.bytes+size > l.opts.MaxBytes {
		return store.Record{}, fmt.Errorf("channel %s: releasing %s/%d: %w", l.name, clientID, packetID, store.ErrChannelFull)
	}
	l.holds.take(clientID, packetID)
	r := h.Record
	l.appendLocked(&r, size)
	return r, nil
}

// DropHeld implements store.Holder.
func (l *logStore) DropHeld(clientID string, packetID uint16) (bool, error) {
	l.mu.Lock()
	h, ok := l.holds.take(clientID, packetID)
	l.mu.Unlock()
	if ok {
		l.p.refund(store.RecordSize(&h.Record))
	}
	return ok, nil
}

// Held implements store.Holder.
func (l *logStore) Held() ([]store.Held, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holds.list(), nil
}

// copyOut copies the channel's state for a snapshot: the live records only,
// never the dead prefix (a snapshot of the whole slice would restore records
// below the stored floor).
func (l *logStore) copyOut() channelData {
	l.mu.Lock()
	defer l.mu.Unlock()
	return channelData{
		next:      l.next,
		floor:     l.floor,
		records:   append([]store.Record(nil), l.recs[l.dead:]...),
		positions: l.pos.sorted(),
		holds:     l.holds.list(),
	}
}

var _ store.AppendLog = (*logStore)(nil)
