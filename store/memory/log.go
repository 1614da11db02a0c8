package memory

import (
	"fmt"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// chunkSize is how many records one block of a log holds; firstChunkCap is
// where a new channel's first block starts.
const (
	chunkSize     = 1024
	firstChunkCap = 8
)

// logStore is an append channel or a queue's dead-letter channel. Records
// live in fixed-size chunks at contiguous offsets floor, floor+1, ... next-1,
// so an offset is found by subtraction, and growing never copies what is
// already kept: an append allocates no more than the record it keeps
// (a new chunk every chunkSize records). Removal from the front clears each
// removed slot at once - the payload is unreachable the moment it stops being
// counted - and drops a chunk when its last record goes, so nothing is ever
// shuffled under the channel's lock.
type logStore struct {
	readChannel
	chunks [][]store.Record
	head   int // index in chunks[0] of the record at floor
	live   int
}

// at is the record at offset o (floor <= o < next).
func (l *logStore) at(o uint64) *store.Record {
	i := l.head + int(o-l.floor)
	return &l.chunks[i/chunkSize][i%chunkSize]
}

// push appends r to the last chunk, opening a new one when it is full. A
// channel's first chunk starts small and grows (many small channels must not
// each hold a full chunk); every later one is allocated whole, so a long
// channel's append allocates exactly the record it keeps.
func (l *logStore) push(r *store.Record) {
	n := len(l.chunks)
	if n == 0 || len(l.chunks[n-1]) == chunkSize {
		c := firstChunkCap
		if n > 0 || l.floor > 1 {
			c = chunkSize
		}
		l.chunks = append(l.chunks, make([]store.Record, 0, c))
		n++
	}
	l.chunks[n-1] = append(l.chunks[n-1], *r)
	l.live++
}

// popFront clears the record at floor and returns its size.
func (l *logStore) popFront() int64 {
	r := &l.chunks[0][l.head]
	size := store.RecordSize(r)
	*r = store.Record{}
	l.head++
	l.live--
	l.floor++
	if l.head == chunkSize {
		l.chunks[0] = nil
		l.chunks = l.chunks[1:]
		l.head = 0
	}
	return size
}

func newLogStore(p *Provider, name string, opts store.ChannelOptions) *logStore {
	return &logStore{readChannel: newReadChannel(p, name, "channel "+name, opts)}
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
	l.chunks, l.head, l.live, l.bytes = nil, 0, 0, 0
	for i := range d.records {
		l.push(&d.records[i])
		l.bytes += store.RecordSize(&d.records[i])
	}
	l.p.chargeRelief(l.bytes)
	l.p.restorePositions(l.name, &l.pos, d.positions)
	l.restoreHolds(d.holds)
	return nil
}

// Name implements store.Counters.
func (l *logStore) Name() string { return l.name }

// Len implements store.Counters.
func (l *logStore) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.live
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
	l.push(r)
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
	end := l.next
	if end-from > uint64(max) {
		end = from + uint64(max)
	}
	for o := from; o < end; o++ {
		w.Records = append(w.Records, *l.at(o))
	}
	return w, nil
}

// FirstAtOrAfter implements store.AppendLog: offsets ascend through the
// slice, so the first record in offset order whose time qualifies is the
// lowest such offset; every record before it is examined, none skipped by a
// binary search that a clock step would mislead.
func (l *logStore) FirstAtOrAfter(t time.Time) (uint64, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for o := l.floor; o < l.next; o++ {
		if rt := l.at(o).Time; !rt.IsZero() && !rt.Before(t) {
			return o, true, nil
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
		// The floor rises with each removal, under the same lock
		// (invariant 1): no reader sees the rows gone and the floor not.
		size := l.popFront()
		freed += size
		l.bytes -= size
		removed++
	}
	if !before.IsZero() {
		for l.live > 0 {
			t := l.at(l.floor).Time
			// A record with no time is never too old (it would read as 1754).
			if t.IsZero() || !t.Before(before) {
				break
			}
			remove()
		}
	}
	if maxBytes > 0 {
		for l.live > 0 && l.bytes > maxBytes {
			remove()
		}
	}
	var lost []string
	if removed > 0 {
		lost = l.pos.passed(oldFloor, l.floor)
		l.p.refund(freed)
	}
	l.mu.Unlock()
	l.p.reportRemoved(l.name, removed, lost)
	return removed, freed, nil
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

// ReleaseHeld implements store.Holder: the record moves from the hold to the
// log under one lock, so it is never in both and never in neither. The bytes
// it was charged as a hold are what it is charged as a record.
func (l *logStore) ReleaseHeld(clientID string, packetID uint16) (store.Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, size, err := l.takeHeld(clientID, packetID, l.opts.MaxBytes)
	if err != nil {
		return store.Record{}, err
	}
	l.appendLocked(&r, size)
	return r, nil
}

// copyOut copies the channel's state for a snapshot: the records from floor
// to next only, never a cleared slot (one written would restore records below
// the stored floor, contradicting the channel's two numbers at the next start).

func (l *logStore) copyOut() channelData {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := channelData{
		next:      l.next,
		floor:     l.floor,
		records:   make([]store.Record, 0, l.live),
		positions: l.pos.sorted(),
		holds:     l.holds.list(),
	}
	for i, c := range l.chunks {
		if i == 0 {
			c = c[l.head:]
		}
		d.records = append(d.records, c...)
	}
	return d
}

var _ store.AppendLog = (*logStore)(nil)
