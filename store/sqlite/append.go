package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// logStore is an append channel (or a queue's dead-letter channel).
type logStore struct {
	*channel
	positions
	holder
	opts store.ChannelOptions
}

var _ store.AppendLog = (*logStore)(nil)

// Append opens the append channel name; asking twice returns the same store.
func (p *Provider) Append(name string, opts store.ChannelOptions) (store.AppendLog, error) {
	return p.appendLog(name, opts)
}

func (p *Provider) appendLog(name string, opts store.ChannelOptions) (*logStore, error) {
	return openOnce(p, p.logs, name, func() (*logStore, error) { return p.openLog(name, opts) })
}

func (p *Provider) openLog(name string, opts store.ChannelOptions) (*logStore, error) {
	ch, err := p.openChannel(name, kindAppend)
	if err != nil {
		return nil, err
	}
	// An append channel only ever loses records from its oldest end, so
	// what it holds is exactly floor..next-1: no count is read at open.
	ch.count.Store(int64(ch.Next() - ch.Floor()))
	ch.resetPending()
	ch.maxBytes.Store(opts.MaxBytes)
	if err := p.dropExpiredPositions(ch); err != nil {
		return nil, err
	}
	return &logStore{channel: ch, positions: positions{ch}, holder: holder{ch, pubAppend}, opts: opts}, nil
}

// Append implements store.AppendLog: one of the publish paths that share a
// group commit. The record is durable before this returns.
func (s *logStore) Append(r store.Record) (store.Record, error) {
	return s.publish(pubAppend, r)
}

// AppendRun implements store.RunAppender: the records are handed to the
// writer together, in order, so they go in one group commit (up to
// store.MaxCollectBatch) with whatever else is collecting, and each is
// answered as Append answers it.
func (s *logStore) AppendRun(rs []store.Record, out []store.Record, errs []error) {
	ops := make([]*op, len(rs))
	for i, r := range rs {
		o := getOp()
		o.pub, o.ch, o.rec = pubAppend, s.channel, r
		ops[i] = o
	}
	s.channel.p.w.submitRun(ops)
	for i, o := range ops {
		out[i], errs[i] = o.out, o.err
		if o.err != nil {
			out[i] = store.Record{}
		}
		putOp(o)
	}
}

// ReadFrom implements store.AppendLog: the floor, next and the records above
// from in one read transaction.
func (s *logStore) ReadFrom(from uint64, max int, dst []store.Record) (store.Window, error) {
	return readWindow(s.channel, from, max, dst)
}

func readWindow(ch *channel, from uint64, max int, dst []store.Record) (store.Window, error) {
	w := store.Window{Records: dst[:0]}
	var below bool
	err := ch.p.readTx(func(c *conn) error {
		w.Records = w.Records[:0]
		var next, floor int64
		if err := c.readWindowHead.QueryRow(ch.id).Scan(&next, &floor); err != nil {
			return err
		}
		w.Next, w.Floor = uint64(next), uint64(floor)
		if from < w.Floor {
			below = true
			return nil
		}
		if max <= 0 || from >= w.Next {
			return nil
		}
		var err error
		w.Records, err = scanRecords(c.readRecords, w.Records, nil, ch.id, int64(from), int64(max))
		return err
	})
	if err != nil {
		return store.Window{}, ch.p.mapErr("reading "+ch.name, err)
	}
	if below {
		return store.Window{Floor: w.Floor, Next: w.Next}, &store.BelowFloorError{Channel: ch.name, Requested: from, Floor: w.Floor}
	}
	return w, nil
}

// scanRecords appends the rows of a records query to dst; extras, when not
// nil, receives each row's broadcast columns.
func scanRecords(st *sql.Stmt, dst []store.Record, extras *[]broadcastExtra, args ...any) ([]store.Record, error) {
	rows, err := st.Query(args...)
	if err != nil {
		return dst, err
	}
	defer rows.Close()
	var rs recordScan
	var off, forShares int64
	var owedTo string
	d := append([]any{&off}, rs.dest()...)
	d = append(d, &forShares, &owedTo)
	for rows.Next() {
		if err := rows.Scan(d...); err != nil {
			return dst, err
		}
		r, err := rs.record(uint64(off))
		if err != nil {
			return dst, err
		}
		dst = append(dst, r)
		if extras != nil {
			*extras = append(*extras, broadcastExtra{forShares: forShares != 0, owedTo: owedTo})
		}
	}
	return dst, rows.Err()
}

// FirstAtOrAfter implements store.AppendLog: the lowest offset whose time is
// at or after t, examining every candidate.
func (s *logStore) FirstAtOrAfter(t time.Time) (uint64, bool, error) {
	var off sql.NullInt64
	err := s.p.readConn(func(c *conn) error {
		return c.firstAtOrAfter.QueryRow(s.id, store.UnixNanos(t)).Scan(&off)
	})
	if err != nil {
		return 0, false, s.p.mapErr("seeking by time on "+s.name, err)
	}
	if !off.Valid {
		return 0, false, nil
	}
	return uint64(off.Int64), true, nil
}

// Trim implements store.AppendLog.
func (s *logStore) Trim(before time.Time, maxBytes int64) (int, int64, error) {
	return s.p.trimRecords(s.channel, before, maxBytes)
}

// trimRecords removes from the oldest end of a records channel: those older
// than before, then the oldest while the channel is over maxBytes, stopping
// at the first record that stays - a sweep reads what it removes, not the
// channel. The deletion, the new floor and the new byte total are one
// transaction: rows gone under an unmoved floor would let a reader be served
// the oldest survivor as though nothing were missing (invariant 1). It runs
// on the writer, after any batch already reserving offsets, and does not use
// the reserve: a deletion frees pages rather than needing them.
func (p *Provider) trimRecords(ch *channel, before time.Time, maxBytes int64) (int, int64, error) {
	cut := store.UnixNanos(before)
	if cut == 0 && maxBytes <= 0 {
		return 0, 0, nil
	}
	// An age rule alone asks a read connection first whether the oldest
	// record is old enough: a sweep over channels with nothing to remove
	// costs one read each and puts nothing in the writer's way.
	if maxBytes <= 0 {
		var ts int64
		err := p.readConn(func(c *conn) error { return c.oldestTime.QueryRow(ch.id).Scan(&ts) })
		if errors.Is(err, sql.ErrNoRows) {
			return 0, 0, nil
		}
		if err != nil {
			return 0, 0, p.mapErr("reading the oldest record of "+ch.name, err)
		}
		if ts == 0 || ts >= cut {
			return 0, 0, nil
		}
	}
	var removed int
	var freed int64
	var lost []string
	err := p.w.do(classConnected, false, true, func(t *wtx) error {
		removed, freed, lost = 0, 0, nil
		bytes := ch.pBytes
		newFloor := ch.pFloor
	walk:
		for {
			rows, err := t.c.oldestRecords.Query(ch.id, 256)
			if err != nil {
				return t.dbFail(err)
			}
			n := 0
			stop := false
			for rows.Next() {
				var off, ts, size int64
				if err := rows.Scan(&off, &ts, &size); err != nil {
					rows.Close()
					return t.dbFail(err)
				}
				n++
				if uint64(off) < newFloor {
					continue // already counted in this pass
				}
				old := cut != 0 && ts != 0 && ts < cut
				over := maxBytes > 0 && bytes > maxBytes
				if !old && !over {
					stop = true
					break
				}
				bytes -= size
				freed += size
				removed++
				newFloor = uint64(off) + 1
			}
			rows.Close()
			if stop || n < 256 {
				break walk
			}
			// Delete what this page removed before reading the next one.
			if _, err := t.exec(t.c.deleteRecordsBelow, ch.id, int64(newFloor)); err != nil {
				return err
			}
		}
		if removed == 0 {
			return nil
		}
		if _, err := t.exec(t.c.deleteRecordsBelow, ch.id, int64(newFloor)); err != nil {
			return err
		}
		list, err := listPositions(t.c, ch.id)
		if err != nil {
			return t.dbFail(err)
		}
		lost = passedReaders(list, ch.pFloor, newFloor)
		t.touch(ch)
		ch.pFloor = newFloor
		ch.pBytes = bytes
		ch.pCount -= int64(removed)
		if _, err := t.exec(t.c.updateFloor, int64(newFloor), bytes, ch.id); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return 0, 0, p.mapErr(fmt.Sprintf("trimming %s", ch.name), err)
	}
	p.reportRemoved(ch.name, removed, lost)
	return removed, freed, nil
}

// reportRemoved tells the metrics what a removal did.
func (p *Provider) reportRemoved(channel string, removed int, lost []string) {
	if removed > 0 {
		if h := p.opts.Hooks.RetentionRemoved; h != nil {
			h(channel, removed)
		}
	}
	if h := p.opts.Hooks.PositionLost; h != nil {
		for _, r := range lost {
			h(channel, r)
		}
	}
}
