package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/lockfile"
)

// Channel is one channel's whole stored state, the form the offline
// migration commands carry between providers (notes-0004 "Moving the
// records with the channel"): next and floor as they are, every record at
// its offset, a queue's jobs with their attempts and delivery times, every
// reader's position, the exactly-once publishes held for it.
type Channel struct {
	Name string
	// Kind is "append", "latest" or "queue".
	Kind        string
	Next, Floor uint64
	// Records are an append channel's records, or a latest channel's values
	// and tombstones, Deleted parallel to them.
	Records   []store.Record
	Deleted   []bool
	Jobs      []store.Job
	Positions []store.Position
	Held      []store.Held
	// DeadLetters is a queue's dead-letter channel: the two move together,
	// in one transaction, never half-way.
	DeadLetters *Channel
}

// Exporter reads channels out of a stopped provider's database without
// changing it: nothing a starting broker would do (dropping expired
// positions) is done, and the connection is read-only.
type Exporter struct {
	path string
	lock *lockfile.Lock
	db   *sql.DB
	c    *conn
}

// OpenExport opens the database at path for reading, taking its lock so a
// running broker's provider is refused, and refusing a file of another
// schema version as a starting broker would.
func OpenExport(path string) (*Exporter, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("database %s: %w", path, err)
	}
	lock, err := lockfile.Acquire(path+".lock", path, 0)
	if err != nil {
		return nil, err
	}
	// Read-only at the file level, not just query_only: a read-write
	// connection closing last would checkpoint the log into the main file
	// and delete it, which is a change to the source.
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("_query_only", "1")
	q.Set("_busy_timeout", "5000")
	db := sql.OpenDB(&connector{dsn: dsn(path, q)})
	db.SetMaxOpenConns(1)
	e := &Exporter{path: path, lock: lock, db: db}
	c, err := db.Conn(context.Background())
	if err == nil {
		p := &Provider{opts: store.SQLiteOptions{FilePath: path}}
		if err = p.checkSchema(c, false); err == nil {
			e.c, err = prepare(c)
		}
		if err != nil {
			c.Close()
		}
	}
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("database %s: %w", path, err)
	}
	return e, nil
}

// Close ends the export and releases the lock.
func (e *Exporter) Close() error {
	var errs []error
	if e.c != nil {
		errs = append(errs, e.c.close())
	}
	errs = append(errs, e.db.Close(), e.lock.Release())
	return errors.Join(errs...)
}

type channelRow struct {
	id                 int64
	kind               string
	next, floor, bytes int64
}

func (e *Exporter) rows() (map[string]channelRow, error) {
	rows, err := e.c.c.QueryContext(context.Background(), `SELECT id, name, kind, next, floor, bytes FROM channels ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]channelRow{}
	for rows.Next() {
		var r channelRow
		var name string
		if err := rows.Scan(&r.id, &name, &r.kind, &r.next, &r.floor, &r.bytes); err != nil {
			return nil, err
		}
		out[name] = r
	}
	return out, rows.Err()
}

// Names lists the channels to carry, sorted: append, latest and queue
// channels. A queue's dead-letter channel travels inside its queue; the
// retained store and the broadcast log are not channels and stay behind with
// the sessions.
func (e *Exporter) Names() ([]string, error) {
	all, err := e.rows()
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", e.path, err)
	}
	var out []string
	for name, r := range all {
		switch r.kind {
		case kindAppend:
			if q, ok := strings.CutSuffix(name, store.DLQSuffix); ok && all[q].kind == kindQueue {
				continue
			}
		case kindLatest, kindQueue:
		default:
			continue
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out, nil
}

// Read reads one channel whole, a queue with its dead-letter channel, in
// one read transaction.
func (e *Exporter) Read(name string) (*Channel, error) {
	ctx := context.Background()
	if _, err := e.c.begin.ExecContext(ctx); err != nil {
		return nil, err
	}
	defer e.c.rollback.ExecContext(ctx)
	all, err := e.rows()
	if err != nil {
		return nil, fmt.Errorf("channel %s: %w", name, err)
	}
	r, ok := all[name]
	if !ok {
		return nil, fmt.Errorf("channel %s: %w", name, store.ErrNotFound)
	}
	c, err := e.read(name, r)
	if err != nil {
		return nil, fmt.Errorf("channel %s: %w", name, err)
	}
	if r.kind == kindQueue {
		dname := name + store.DLQSuffix
		if dr, ok := all[dname]; ok {
			if c.DeadLetters, err = e.read(dname, dr); err != nil {
				return nil, fmt.Errorf("channel %s: %w", dname, err)
			}
		} else {
			c.DeadLetters = &Channel{Name: dname, Kind: kindAppend, Next: 1, Floor: 1}
		}
	}
	return c, nil
}

func (e *Exporter) read(name string, r channelRow) (*Channel, error) {
	c := &Channel{Name: name, Kind: r.kind, Next: uint64(r.next), Floor: uint64(r.floor)}
	var err error
	switch r.kind {
	case kindAppend:
		c.Records, err = scanRecords(e.c.readRecords, nil, nil, r.id, int64(0), int64(-1))
	case kindLatest:
		err = e.readLatest(c, r.id)
	case kindQueue:
		err = e.readJobs(c, r.id)
	}
	if err != nil {
		return nil, err
	}
	if c.Positions, err = listPositions(e.c, r.id); err != nil {
		return nil, err
	}
	c.Held, err = holder{ch: &channel{id: r.id, name: name}}.heldOn(e.c)
	return c, err
}

func (e *Exporter) readLatest(c *Channel, id int64) error {
	return eachValue(e.c.latestChanges, nil, func(rec store.Record, deleted bool) {
		c.Records = append(c.Records, rec)
		c.Deleted = append(c.Deleted, deleted)
	}, id, 0, -1)
}

func (e *Exporter) readJobs(c *Channel, id int64) error {
	var err error
	c.Jobs, err = queryJobs(e.c.queueRead, id, 0, -1)
	return err
}

// Importer writes channels into a new database, one transaction per channel
// (a queue with its dead-letter channel in the same one).
type Importer struct {
	p *Provider
}

// CreateImport creates a new database at path for a migration; a path that
// exists is refused, since writing beside existing channels is how two
// histories end up under one name.
func CreateImport(path, writer string) (*Importer, error) {
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("database %s exists; a migration writes only a new one", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("database %s: %w", path, err)
	}
	p, err := Open(store.SQLiteOptions{Name: path, FilePath: path, ReadConnections: 0, Writer: writer, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, err
	}
	return &Importer{p: p}, nil
}

// Write stores c at its own offsets with its own counters, in one
// transaction; a channel already in the database is refused.
func (im *Importer) Write(c *Channel) error {
	p := im.p
	err := p.w.do(classAnswering, false, true, func(t *wtx) error {
		if err := writeChannel(t, c); err != nil {
			return err
		}
		if c.DeadLetters != nil {
			return writeChannel(t, c.DeadLetters)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("channel %s: %w", c.Name, unwrapDB(err))
	}
	return nil
}

// Close checkpoints the new database so the main file alone is complete,
// and releases its lock.
func (im *Importer) Close() error { return im.p.Close() }

func writeChannel(t *wtx, c *Channel) error {
	switch c.Kind {
	case kindAppend, kindLatest, kindQueue:
	default:
		return fmt.Errorf("unknown channel kind %q", c.Kind)
	}
	if c.Kind == kindLatest && len(c.Deleted) != len(c.Records) {
		return fmt.Errorf("%d deletion flags for %d values", len(c.Deleted), len(c.Records))
	}
	res, err := t.exec(t.c.insertChannel, c.Name, c.Kind)
	if err != nil {
		return err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return t.dbFail(err)
	}
	var bytes int64
	var hbuf []byte
	args := func(r *store.Record) [11]any {
		var hdr any
		hbuf, hdr = encodeHeaders(hbuf, r.Headers)
		size := store.RecordSize(r)
		bytes += size
		return recordArgs(r, hdr, size)
	}
	for i := range c.Records {
		r := &c.Records[i]
		a := args(r)
		switch c.Kind {
		case kindAppend:
			_, err = t.exec(t.c.insertRecord, id, int64(r.Offset), a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], int64(0), "")
		case kindLatest:
			_, err = t.exec(t.c.latestInsert, id, r.Topic, int64(r.Offset), boolInt(c.Deleted[i]), a[0], a[1], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10])
		}
		if err != nil {
			return err
		}
	}
	for i := range c.Jobs {
		j := &c.Jobs[i]
		a := args(&j.Record)
		if _, err := t.exec(t.c.queueInsert, id, int64(j.Offset), a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]); err != nil {
			return err
		}
		if _, err := t.exec(t.c.queueSetAttempts, int64(j.Attempts), store.UnixNanos(j.FirstDelivery), store.UnixNanos(j.LastDelivery), id, int64(j.Offset)); err != nil {
			return err
		}
	}
	for _, pos := range c.Positions {
		if _, err := t.exec(t.c.positionSave, id, pos.Reader, int64(pos.Offset), int64(pos.SessionExpiry), store.UnixNanos(pos.SavedAt)); err != nil {
			return err
		}
	}
	for _, h := range c.Held {
		a := args(&h.Record)
		bytes -= store.RecordSize(&h.Record) // a hold is not in the channel's bytes
		if _, err := t.exec(t.c.holdPut, id, h.ClientID, int64(h.PacketID), store.UnixNanos(h.HeldAt),
			a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]); err != nil {
			return err
		}
	}
	_, err = t.exec(t.c.setCounters, int64(c.Next), int64(c.Floor), bytes, id)
	return err
}
