package sqlite

import (
	"time"

	"github.com/saguin-edge/saguin/store"
)

// broadcastExtra are the broadcast log's own columns on a records row.
type broadcastExtra struct {
	forShares bool
	owedTo    string
}

// retainedStore is the retained store for broadcast topics, kept in
// latest_values under the reserved channel name $saguin/retained: one
// current value per topic, no tombstones (a zero-length retained publish
// removes the row), bounded only by the provider.
type retainedStore struct {
	ch     *channel
	period time.Duration
}

var _ store.Retained = (*retainedStore)(nil)

// Retained opens the retained store.
func (p *Provider) Retained(period time.Duration) (store.Retained, error) {
	p.mu.Lock()
	if p.retained != nil {
		p.retained.period = period
		s := p.retained
		p.mu.Unlock()
		return s, nil
	}
	p.mu.Unlock()
	ch, err := p.openLatestChannel(retainedChannel, kindRetained)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.retained == nil {
		p.retained = &retainedStore{ch: ch, period: period}
	}
	return p.retained, nil
}

// Set implements store.Retained. It goes through the publish batches and may
// not use the reserve: a full provider refuses it, what is stored untouched.
func (s *retainedStore) Set(r store.Record) error {
	_, _, err := s.ch.write(pubLatestSet, r)
	return err
}

// Delete implements store.Retained: the row goes, no tombstone.
func (s *retainedStore) Delete(topic string) (bool, error) {
	ch := s.ch
	var deleted bool
	err := ch.p.w.do(classAnswering, true, false, func(t *wtx) error {
		var off, del, size int64
		if err := t.c.latestGet.QueryRow(ch.id, topic).Scan(&off, &del, &size); err != nil {
			return nil // nothing stored under the topic
		}
		if _, err := t.exec(t.c.latestDeleteRow, ch.id, topic); err != nil {
			return err
		}
		t.touch(ch)
		ch.pBytes -= size
		ch.pCount--
		if del == 0 {
			ch.pLive--
		}
		ch.countersDirty = true
		deleted = true
		return nil
	})
	return deleted, ch.p.mapErr("deleting retained "+topic, err)
}

// Get implements store.Retained.
func (s *retainedStore) Get(topic string) (store.Record, bool, error) {
	v, ok, err := getValue(s.ch, topic)
	if err != nil || !ok || v.Deleted {
		return store.Record{}, false, err
	}
	v.Record.Offset = 0 // a retained value has no offset for readers
	return v.Record, true, nil
}

// Range implements store.Retained, in topic order.
func (s *retainedStore) Range(match func(string) bool, fn func(store.Record) bool) error {
	var list []store.Record
	err := s.ch.p.readTx(func(c *conn) error {
		list = list[:0]
		return eachValue(c.latestRange, match, func(r store.Record, _ bool) {
			r.Offset = 0 // a retained value has no offset
			list = append(list, r)
		}, s.ch.id)
	})
	if err != nil {
		return s.ch.p.mapErr("reading retained values", err)
	}
	for _, r := range list {
		if !fn(r) {
			break
		}
	}
	return nil
}

// Page implements store.Retained: one read of at most pageScan rows from
// since in offset order, the rows match refuses not decoded.
func (s *retainedStore) Page(since uint64, match func(string) bool, limit int, dst []store.Record) ([]store.Record, uint64, error) {
	out := dst[:0]
	next := since
	err := s.ch.p.readTx(func(c *conn) error {
		out, next = out[:0], since
		rows, err := c.latestChanges.Query(s.ch.id, int64(since), pageScan)
		if err != nil {
			return err
		}
		defer rows.Close()
		var rs recordScan
		var off, del int64
		d := append([]any{&off, &del}, rs.dest()...)
		n := 0
		for rows.Next() && len(out) < limit {
			n++
			if err := rows.Scan(d...); err != nil {
				return err
			}
			next = uint64(off) + 1
			if del != 0 || (match != nil && !match(rs.topic)) {
				continue
			}
			r, err := rs.record(uint64(off))
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if n < pageScan && len(out) < limit {
			next = max(next, s.ch.Next()) // every row is read: nothing more set yet
		}
		return nil
	})
	if err != nil {
		return nil, since, s.ch.p.mapErr("reading a page of retained values", err)
	}
	return out, next, nil
}

// pageScan is how many rows one Page call reads.
const pageScan = 4096

// Next implements store.Retained.
func (s *retainedStore) Next() uint64 { return s.ch.Next() }

// Count implements store.Retained.
func (s *retainedStore) Count() int { return int(s.ch.live.Load()) }

// Bytes implements store.Retained.
func (s *retainedStore) Bytes() int64 { return s.ch.Bytes() }

// Trim implements store.Retained: values set before before go.
func (s *retainedStore) Trim(before time.Time) (int, error) {
	n, _, err := s.ch.p.trimLatest(s.ch, before, time.Time{}, false)
	return n, err
}
