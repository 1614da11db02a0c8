package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// latestStore is a latest channel: latest_values keyed by (channel, topic),
// each row carrying the offset of the write that set it. A deletion is kept
// as a tombstone row with an offset of its own.
type latestStore struct {
	*channel
	positions
	holder
	opts store.ChannelOptions
}

var _ store.Latest = (*latestStore)(nil)

// Latest opens the latest channel name; asking twice returns the same store.
func (p *Provider) Latest(name string, opts store.ChannelOptions) (store.Latest, error) {
	s, err := openOnce(p, p.latests, name, func() (*latestStore, error) { return p.openLatest(name, opts) })
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (p *Provider) openLatest(name string, opts store.ChannelOptions) (*latestStore, error) {
	ch, err := p.openLatestChannel(name, kindLatest)
	if err != nil {
		return nil, err
	}
	if err := p.dropExpiredPositions(ch); err != nil {
		return nil, err
	}
	return &latestStore{channel: ch, positions: positions{ch}, holder: holder{ch, pubLatestSet}, opts: opts}, nil
}

// openLatestChannel opens a channel kept in latest_values and counts its
// current values and bytes once: a map is a working set, and the count is
// then advanced from committed transactions, never asked for on a scrape.
func (p *Provider) openLatestChannel(name, kind string) (*channel, error) {
	ch, err := p.openChannel(name, kind)
	if err != nil {
		return nil, err
	}
	var rows, deleted, bytes int64
	err = p.w.read(func(c *conn) error {
		return c.latestCount.QueryRow(ch.id).Scan(&rows, &deleted, &bytes)
	})
	if err != nil {
		return nil, p.mapErr("counting "+name, err)
	}
	ch.count.Store(rows)
	ch.live.Store(rows - deleted)
	ch.bytes.Store(bytes)
	ch.resetPending()
	return ch, nil
}

// execLatest sets or deletes one topic's value inside a batch. The row is
// read first, so the count of current values and the byte total move by
// exactly what changed (a replacement, a new topic, a revived tombstone).
// A deletion of a topic with no current value writes nothing and takes no
// offset.
func (w *writer) execLatest(t *wtx, o *op) {
	ch := o.ch
	r := &o.rec
	var oldOff, oldDeleted, oldSize int64
	err := t.c.latestGet.QueryRow(ch.id, r.Topic).Scan(&oldOff, &oldDeleted, &oldSize)
	exists := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.dbFail(err)
		return
	}
	deleting := o.pub == pubLatestDelete
	if deleting {
		if !exists || oldDeleted != 0 {
			o.ok = false
			return
		}
		r.Payload, r.Props = nil, nil
	}
	size := store.RecordSize(r)
	off := ch.pNext
	var hdr any
	w.hbuf, hdr = encodeHeaders(w.hbuf, r.Headers)
	a := recordArgs(r, hdr, size)
	del := boolInt(deleting)
	if exists {
		_, err = t.exec(t.c.latestUpdate, int64(off), del, a[0], a[1], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], ch.id, r.Topic)
	} else {
		_, err = t.exec(t.c.latestInsert, ch.id, r.Topic, int64(off), del, a[0], a[1], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10])
	}
	if err != nil {
		return
	}
	t.touch(ch)
	ch.pNext++
	ch.countersDirty = true
	ch.pBytes += size
	if exists {
		ch.pBytes -= oldSize
	}
	if !exists {
		ch.pCount++
	}
	switch {
	case deleting:
		ch.pLive--
	case !exists || oldDeleted != 0:
		ch.pLive++
	}
	o.out = *r
	o.out.Offset = off
	o.ok = true
}

// Set implements store.Latest: one of the publish paths that share a group
// commit.
func (s *latestStore) Set(r store.Record) (store.Record, error) {
	return s.publish(pubLatestSet, r)
}

// Delete implements store.Latest.
func (s *latestStore) Delete(r store.Record) (store.Value, bool, error) {
	out, ok, err := s.write(pubLatestDelete, r)
	if err != nil || !ok {
		return store.Value{}, false, err
	}
	return store.Value{Record: out, Deleted: true}, true, nil
}

// Get implements store.Latest.
func (s *latestStore) Get(topic string) (store.Value, bool, error) {
	return getValue(s.channel, topic)
}

func getValue(ch *channel, topic string) (store.Value, bool, error) {
	var v store.Value
	var found bool
	err := ch.p.readConn(func(c *conn) error {
		var off, del int64
		var rs recordScan
		d := append([]any{&off, &del}, rs.dest()...)
		err := c.latestGetFull.QueryRow(ch.id, topic).Scan(d...)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		v.Deleted = del != 0
		v.Record, err = rs.record(uint64(off))
		return err
	})
	if err != nil {
		return store.Value{}, false, ch.p.mapErr("reading "+topic+" on "+ch.name, err)
	}
	return v, found, nil
}

// eachValue runs a latest_values query (latestChanges, latestRange) and
// hands fn each row whose topic match accepts (nil accepts every row),
// decoded at its offset, with its deletion flag. A topic match refuses is
// not decoded.
func eachValue(st *sql.Stmt, match func(string) bool, fn func(r store.Record, deleted bool), args ...any) error {
	rows, err := st.Query(args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var rs recordScan
	var off, del int64
	d := append([]any{&off, &del}, rs.dest()...)
	for rows.Next() {
		if err := rows.Scan(d...); err != nil {
			return err
		}
		if match != nil && !match(rs.topic) {
			continue
		}
		r, err := rs.record(uint64(off))
		if err != nil {
			return err
		}
		fn(r, del != 0)
	}
	return rows.Err()
}

// Changes implements store.Latest, in offset order, in one read transaction.
func (s *latestStore) Changes(since uint64, withDeletions bool, match func(string) bool, max int, dst []store.Value) ([]store.Value, error) {
	out := dst[:0]
	if max <= 0 {
		return out, nil
	}
	err := s.p.readTx(func(c *conn) error {
		out = out[:0]
		from := since
		for {
			rows, err := c.latestChanges.Query(s.id, int64(from), int64(max+64))
			if err != nil {
				return err
			}
			n := 0
			var rs recordScan
			var off, del int64
			d := append([]any{&off, &del}, rs.dest()...)
			for rows.Next() {
				n++
				if err := rows.Scan(d...); err != nil {
					rows.Close()
					return err
				}
				from = uint64(off) + 1
				if (del != 0 && !withDeletions) || (match != nil && !match(rs.topic)) {
					continue
				}
				r, err := rs.record(uint64(off))
				if err != nil {
					rows.Close()
					return err
				}
				out = append(out, store.Value{Record: r, Deleted: del != 0})
				if len(out) == max {
					break
				}
			}
			err = rows.Err()
			rows.Close()
			if err != nil || len(out) == max || n < max+64 {
				return err
			}
		}
	})
	if err != nil {
		return nil, s.p.mapErr("reading changes on "+s.name, err)
	}
	return out, nil
}

// Count implements store.Latest: the current (non-deleted) values.
func (s *latestStore) Count() int { return int(s.live.Load()) }

// Trim implements store.Latest: values set before valuesBefore and
// tombstones stored before deletionsBefore go, and the floor rises past the
// highest offset removed, in one transaction.
func (s *latestStore) Trim(valuesBefore, deletionsBefore time.Time) (int, int64, error) {
	return s.p.trimLatest(s.channel, valuesBefore, deletionsBefore, true)
}

func (p *Provider) trimLatest(ch *channel, valuesBefore, deletionsBefore time.Time, moveFloor bool) (int, int64, error) {
	vb, db := store.UnixNanos(valuesBefore), store.UnixNanos(deletionsBefore)
	if vb == 0 && db == 0 {
		return 0, 0, nil
	}
	if vb == 0 {
		vb = -1 // no value is older than nothing
	}
	if db == 0 {
		db = -1
	}
	// Asked on a read connection first, so a sweep with nothing to remove
	// puts nothing in the writer's way.
	var one int64
	err := p.readConn(func(c *conn) error { return c.latestAnyTrimmable.QueryRow(ch.id, vb, db).Scan(&one) })
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, p.mapErr("reading what "+ch.name+" could trim", err)
	}
	var removed int
	var freed int64
	var lost []string
	err = p.w.do(classConnected, false, true, func(t *wtx) error {
		removed, freed, lost = 0, 0, nil
		type victim struct {
			topic     string
			off, size int64
			deleted   bool
		}
		var vs []victim
		rows, err := t.c.latestTrimmable.Query(ch.id, vb, db)
		if err != nil {
			return t.dbFail(err)
		}
		for rows.Next() {
			var v victim
			var del int64
			if err := rows.Scan(&v.off, &del, &v.size, &v.topic); err != nil {
				rows.Close()
				return t.dbFail(err)
			}
			v.deleted = del != 0
			vs = append(vs, v)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return t.dbFail(err)
		}
		if len(vs) == 0 {
			return nil
		}
		newFloor := ch.pFloor
		for _, v := range vs {
			if _, err := t.exec(t.c.latestDeleteRow, ch.id, v.topic); err != nil {
				return err
			}
			freed += v.size
			ch.pCount--
			if !v.deleted {
				ch.pLive--
			}
			if uint64(v.off)+1 > newFloor {
				newFloor = uint64(v.off) + 1
			}
		}
		removed = len(vs)
		t.touch(ch)
		ch.pBytes -= freed
		if moveFloor {
			list, err := listPositions(t.c, ch.id)
			if err != nil {
				return t.dbFail(err)
			}
			lost = passedReaders(list, ch.pFloor, newFloor)
			ch.pFloor = newFloor
		}
		_, err = t.exec(t.c.updateFloor, int64(ch.pFloor), ch.pBytes, ch.id)
		return err
	})
	if err != nil {
		return 0, 0, p.mapErr(fmt.Sprintf("trimming %s", ch.name), err)
	}
	p.reportRemoved(ch.name, removed, lost)
	return removed, freed, nil
}
