package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/saguin-edge/saguin/store"
)

// channel is one row of the channels table and the counters kept beside it.
// The committed counters are read by anyone without a lock; the pending ones
// belong to the writer goroutine, which moves them inside a transaction and
// makes them committed only once it has committed (notes-0004 "Counters
// never fail": advanced only from what a committed transaction wrote).
type channel struct {
	p    *Provider
	id   int64
	name string
	kind string

	next, floor atomic.Uint64
	bytes       atomic.Int64
	count       atomic.Int64 // records, values with tombstones, or jobs (Len)
	live        atomic.Int64 // a latest channel's current values (Count)
	maxBytes    atomic.Int64

	// writer goroutine only
	pNext, pFloor uint64
	pBytes        int64
	pCount, pLive int64
	inTx          bool
	countersDirty bool

	queue *queueStore // set on a queue's channel, for the enqueue path
}

func (ch *channel) commitPending() {
	ch.next.Store(ch.pNext)
	ch.floor.Store(ch.pFloor)
	ch.bytes.Store(ch.pBytes)
	ch.count.Store(ch.pCount)
	ch.live.Store(ch.pLive)
}

func (ch *channel) resetPending() {
	ch.pNext = ch.next.Load()
	ch.pFloor = ch.floor.Load()
	ch.pBytes = ch.bytes.Load()
	ch.pCount = ch.count.Load()
	ch.pLive = ch.live.Load()
}

// Name implements store.Counters.
func (ch *channel) Name() string { return ch.name }

// Next implements store.Counters.
func (ch *channel) Next() uint64 { return ch.next.Load() }

// Floor implements store.Counters.
func (ch *channel) Floor() uint64 { return ch.floor.Load() }

// Bytes implements store.Counters.
func (ch *channel) Bytes() int64 { return ch.bytes.Load() }

// Len implements store.Counters.
func (ch *channel) Len() int { return int(ch.count.Load()) }

// SetMaxBytes implements the channel's max_bytes (0 for none).
func (ch *channel) SetMaxBytes(n int64) { ch.maxBytes.Store(n) }

// write submits one record to the group commit as kind (an append, an
// enqueue, a latest set or deletion) and waits for its outcome: the record
// at its offset, and whether a latest deletion stored a tombstone.
func (ch *channel) write(kind pubKind, r store.Record) (store.Record, bool, error) {
	o := getOp()
	o.pub, o.ch, o.rec = kind, ch, r
	err := ch.p.w.submit(o)
	out, ok := o.out, o.ok
	putOp(o)
	return out, ok, err
}

// publish is write for the paths that return the record alone, and no
// record when it failed.
func (ch *channel) publish(kind pubKind, r store.Record) (store.Record, error) {
	out, _, err := ch.write(kind, r)
	if err != nil {
		return store.Record{}, err
	}
	return out, nil
}

// removedRows moves the pending counters for n rows of size bytes that t
// deleted from anywhere in the channel, and raises the floor to the lowest
// offset left, which lowest (a min(offset) statement) reads - next when none
// is - storing floor and bytes in the same transaction as the deletion.
func (ch *channel) removedRows(t *wtx, lowest *sql.Stmt, n, size int64) error {
	var low sql.NullInt64
	if err := lowest.QueryRow(ch.id).Scan(&low); err != nil {
		return t.dbFail(err)
	}
	t.touch(ch)
	ch.pCount -= n
	ch.pBytes -= size
	if low.Valid {
		ch.pFloor = uint64(low.Int64)
	} else {
		ch.pFloor = ch.pNext
	}
	_, err := t.exec(t.c.updateFloor, int64(ch.pFloor), ch.pBytes, ch.id)
	return err
}

// openOnce returns the store m keeps for name, or opens one and keeps it.
// open runs without p.mu (it goes through the writer); when two callers open
// the same name at once, the store kept first is the one both are given.
func openOnce[S any](p *Provider, m map[string]S, name string, open func() (S, error)) (S, error) {
	p.mu.Lock()
	if s, ok := m[name]; ok {
		p.mu.Unlock()
		return s, nil
	}
	p.mu.Unlock()
	s, err := open()
	if err != nil {
		var none S
		return none, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if other, ok := m[name]; ok {
		return other, nil
	}
	m[name] = s
	return s, nil
}

// openChannel finds or creates the channels row for name. It runs on the
// writer, so a new row and the counters read back are one serial step.
func (p *Provider) openChannel(name, kind string) (*channel, error) {
	p.mu.Lock()
	if err := p.checkOpen(); err != nil {
		p.mu.Unlock()
		return nil, err
	}
	if ch, ok := p.chans[name]; ok {
		p.mu.Unlock()
		if ch.kind != kind {
			return nil, fmt.Errorf("storage %s: channel %s is open as %s, asked for as %s: %w", p.opts.Name, name, ch.kind, kind, store.ErrKindMismatch)
		}
		return ch, nil
	}
	p.mu.Unlock()
	ch := &channel{p: p, name: name, kind: kind}
	err := p.w.do(classAnswering, false, true, func(t *wtx) error {
		var stored string
		var next, floor int64
		err := t.queryRow(t.c.channelByName, name).Scan(&ch.id, &stored, &next, &floor, &ch.pBytes)
		if errors.Is(err, sql.ErrNoRows) {
			res, err := t.exec(t.c.insertChannel, name, kind)
			if err != nil {
				return err
			}
			if ch.id, err = res.LastInsertId(); err != nil {
				return t.dbFail(err)
			}
			ch.pNext, ch.pFloor, ch.pBytes = 1, 1, 0
			return nil
		}
		if err != nil {
			return t.dbFail(err)
		}
		if stored != kind {
			return fmt.Errorf("storage %s: channel %s is stored as %s, configured as %s: %w", p.opts.Name, name, stored, kind, store.ErrKindMismatch)
		}
		ch.pNext, ch.pFloor = uint64(next), uint64(floor)
		return nil
	})
	if err != nil {
		return nil, p.mapErr("opening channel "+name, err)
	}
	ch.commitPending()
	p.mu.Lock()
	defer p.mu.Unlock()
	if other, ok := p.chans[name]; ok { // opened meanwhile by another caller
		return other, nil
	}
	p.chans[name] = ch
	return ch, nil
}

// readConn runs fn on a read connection, or on the write connection with
// read_connections: 0. Each call that needs one snapshot wraps its queries
// in readTx.
func (p *Provider) readConn(fn func(c *conn) error) error {
	if p.shut.Load() {
		return fmt.Errorf("storage %s: %w", p.opts.Name, store.ErrClosed)
	}
	if p.readers == nil {
		return p.w.read(fn)
	}
	c := <-p.readers
	err := fn(c)
	p.readers <- c
	return err
}

// readTx runs fn in one read transaction - a fresh one, so it sees every
// commit before it - on a read connection.
func (p *Provider) readTx(fn func(c *conn) error) error {
	if p.shut.Load() {
		return fmt.Errorf("storage %s: %w", p.opts.Name, store.ErrClosed)
	}
	if p.readers == nil {
		// The writer is the write connection's only user: nothing commits
		// between fn's statements.
		return p.w.read(fn)
	}
	c := <-p.readers
	defer func() { p.readers <- c }()
	ctx := context.Background()
	if _, err := c.begin.ExecContext(ctx); err != nil {
		return err
	}
	err := fn(c)
	if _, cerr := c.commit.ExecContext(ctx); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		c.rollback.ExecContext(ctx)
	}
	return err
}

// execPublish stores one publish inside the batch's transaction, taking the
// channel's next offset. A record past its channel's max_bytes is refused
// alone, before anything is written for it.
func (w *writer) execPublish(t *wtx, o *op) {
	ch := o.ch
	r := &o.rec
	switch o.pub {
	case pubAppend, pubBroadcast, pubEnqueue:
		size := store.RecordSize(r)
		if max := ch.maxBytes.Load(); max > 0 && !o.unbounded && ch.pBytes+size > max {
			o.err = fmt.Errorf("channel %s: %d bytes held, a %d-byte record would pass max_bytes %d: %w", ch.name, ch.pBytes, size, max, store.ErrChannelFull)
			return
		}
		off := ch.pNext
		var hdr any
		w.hbuf, hdr = encodeHeaders(w.hbuf, r.Headers)
		a := recordArgs(r, hdr, size)
		var err error
		if o.pub == pubEnqueue {
			_, err = t.exec(t.c.queueInsert, ch.id, int64(off), a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10])
		} else {
			_, err = t.exec(t.c.insertRecord, ch.id, int64(off), a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10],
				boolInt(o.extra.forShares), o.extra.owedTo)
		}
		if err != nil {
			return
		}
		t.touch(ch)
		ch.pNext++
		ch.pBytes += size
		ch.pCount++
		ch.countersDirty = true
		o.out = *r
		o.out.Offset = off
		if o.pub == pubEnqueue {
			q := ch.queue
			t.after(func() { q.added(off, size) })
		}
	case pubLatestSet, pubLatestDelete:
		w.execLatest(t, o)
	}
}
