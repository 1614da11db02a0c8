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

// Count implements store.Retained.
func (s *retainedStore) Count() int { return int(s.ch.live.Load()) }

// Bytes implements store.Retained.
func (s *retainedStore) Bytes() int64 { return s.ch.Bytes() }

// Trim implements store.Retained: values set before before go.
func (s *retainedStore) Trim(before time.Time) (int, error) {
	n, _, err := s.ch.p.trimLatest(s.ch, before, time.Time{}, false)
	return n, err
}
