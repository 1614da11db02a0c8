// Package sqlite is the sqlite storage provider: one database file per
// provider on github.com/mattn/go-sqlite3, one write connection owned by one
// goroutine that groups publishes into shared transactions (RFC 0002 "How a
// sqlite provider commits publishes"), read-only connections for the
// channels' reads, WAL with synchronous=NORMAL and a periodic fsync of the
// log (notes-0004 "SQLite").
package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/lockfile"
)

// Defaults of the provider keys RFC 0002 gives a value for.
const (
	defaultFlushInterval = 150 * time.Millisecond
	// EmptyDatabaseBytes is what the schema takes before any record: 22
	// pages of 4096 bytes, the 88KiB of RFC 0002 "Validation". max_bytes
	// must be above it plus twice the reserve, or the provider would open
	// over its own bound. TestEmptyDatabaseSizeIsTheDocumentedFigure keeps
	// it true.
	EmptyDatabaseBytes = 22 * pageSize
)

// Provider is one sqlite storage provider.
type Provider struct {
	opts store.SQLiteOptions
	log  *slog.Logger
	now  func() time.Time

	lock *lockfile.Lock
	wdb  *sql.DB
	wc   *conn // the write connection; only the writer goroutine uses it
	cdb  *sql.DB
	ckpt *sql.Conn // the flusher's checkpoint connection
	rdb  *sql.DB
	// readers is the pool of read connections, each with its statements
	// prepared at open, so a read never asks for a second connection while
	// holding one. nil with read_connections: 0.
	readers chan *conn

	pageSize int64
	// publishPages is max_page_count for ordinary writes (max_bytes less the
	// reserve); reliefPages the higher ceiling a relieving transaction raises
	// it to and restores inside the transaction. 0: unbounded.
	publishPages, reliefPages int64

	// bytes is the database's size in pages times the page size, refreshed by
	// the writer after each commit (saguin_provider_bytes: no table scanned).
	bytes atomic.Int64
	// dirty says something was committed since the log was last forced to disk.
	dirty atomic.Bool

	w *writer

	commits CommitCounts // atomics, see Commits

	flushStop, flushDone chan struct{}
	flushFailing         bool      // flusher goroutine only
	walDirSynced         bool      // flusher goroutine only
	lastCheckpoint       time.Time // flusher goroutine only

	// shut is set once Close begins: reads are refused from then on, as
	// writes are by the stopping writer.
	shut atomic.Bool

	mu       sync.Mutex // guards the maps below; never held across I/O
	closed   bool
	chans    map[string]*channel
	logs     map[string]*logStore
	latests  map[string]*latestStore
	queues   map[string]*queueStore
	retained *retainedStore
	sessions *sessionStore
}

// CommitCounts are the group-commit counters RFC 0005 names:
// saguin_storage_commits_total{closed_by} and
// saguin_storage_committed_records_total. Read them with Commits.
type CommitCounts struct {
	Records, Interval, Commit, Unbatched atomic.Uint64
	CommittedRecords                     atomic.Uint64
}

// Commits is the provider's group-commit counters, for the metrics.
func (p *Provider) Commits() *CommitCounts { return &p.commits }

// Open opens (creating when absent) the database at opts.FilePath. The lock
// <file_path>.lock is taken before the database is touched at all, so a
// broker not entitled to the provider never writes into a running one on the
// way to finding out.
func Open(opts store.SQLiteOptions) (*Provider, error) {
	p := &Provider{
		opts:    opts,
		log:     opts.Logger,
		now:     opts.Now,
		chans:   map[string]*channel{},
		logs:    map[string]*logStore{},
		latests: map[string]*latestStore{},
		queues:  map[string]*queueStore{},
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	if p.now == nil {
		p.now = time.Now
	}
	if p.opts.FlushInterval <= 0 {
		p.opts.FlushInterval = defaultFlushInterval
	}
	if opts.FilePath == "" {
		return nil, fmt.Errorf("storage %s: no file_path", opts.Name)
	}
	if opts.ReadConnections < 0 || opts.ReadConnections > 8 {
		return nil, fmt.Errorf("storage %s: read_connections %d is outside 0..8", opts.Name, opts.ReadConnections)
	}
	if opts.CommitMode == store.CommitInterval && (opts.PublishCommitInterval <= 0 || opts.PublishCommitMaxRecords < 2) {
		return nil, fmt.Errorf("storage %s: publish_commit_interval needs a duration and publish_commit_max_records of at least 2", opts.Name)
	}
	if opts.MaxBytes > 0 {
		if opts.MaxBytes < 2*opts.Reserve {
			return nil, fmt.Errorf("storage %s: max_bytes %d is below twice the reserve %d (max_message_size + max_header_bytes): lower those limits or raise max_bytes",
				opts.Name, opts.MaxBytes, opts.Reserve)
		}
		if opts.MaxBytes <= EmptyDatabaseBytes+2*opts.Reserve {
			return nil, fmt.Errorf("storage %s: max_bytes %d is not above the empty database's %d bytes plus twice the reserve %d: it could never hold a record",
				opts.Name, opts.MaxBytes, EmptyDatabaseBytes, opts.Reserve)
		}
	}
	lock, err := lockfile.Acquire(opts.FilePath+".lock", opts.Name, opts.LockTimeout)
	if err != nil {
		return nil, err
	}
	p.lock = lock
	if err := p.open(); err != nil {
		p.closeConns()
		lock.Release()
		return nil, fmt.Errorf("storage %s: %s: %w", opts.Name, opts.FilePath, err)
	}
	p.w = newWriter(p)
	go p.w.loop()
	p.flushStop, p.flushDone = make(chan struct{}), make(chan struct{})
	go p.flusher()
	p.log.Info("sqlite provider open", "provider", opts.Name, "file", opts.FilePath,
		"page_size", p.pageSize, "publish_ceiling_bytes", p.publishPages*p.pageSize,
		"reserve_ceiling_bytes", p.reliefPages*p.pageSize, "read_connections", opts.ReadConnections)
	return p, nil
}

// open creates the file when needed, checks its schema version and page
// size, and opens the write connection and the read pool.
func (p *Provider) open() error {
	info, err := os.Stat(p.opts.FilePath)
	fresh := errors.Is(err, os.ErrNotExist) || (err == nil && info.Size() == 0)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if fresh {
		if err := p.create(); err != nil {
			return fmt.Errorf("creating the database: %w", err)
		}
	}
	// The write connection: WAL and synchronous=NORMAL in the connection
	// string, so a connection that is reopened can never lack them.
	wq := url.Values{}
	wq.Set("_journal_mode", "WAL")
	wq.Set("_synchronous", "NORMAL")
	wq.Set("_busy_timeout", "5000")
	p.wdb = sql.OpenDB(&connector{dsn: dsn(p.opts.FilePath, wq), hook: p.writeHook})
	p.wdb.SetMaxOpenConns(1)
	p.wdb.SetConnMaxLifetime(0)
	p.wdb.SetMaxIdleConns(1)
	c, err := p.wdb.Conn(context.Background())
	if err != nil {
		return err
	}
	if err := p.checkSchema(c, fresh); err != nil {
		c.Close()
		return err
	}
	if p.opts.MaxBytes > 0 {
		p.reliefPages = p.opts.MaxBytes / p.pageSize
		// Never zero: SQLite reads max_page_count 0 as "no bound", and Open
		// refused a max_bytes not above the empty database plus the reserve.
		p.publishPages = (p.opts.MaxBytes - p.opts.Reserve) / p.pageSize
		if _, err := c.ExecContext(context.Background(), "PRAGMA max_page_count = "+strconv.FormatInt(p.publishPages, 10)); err != nil {
			c.Close()
			return err
		}
	}
	if p.wc, err = prepare(c); err != nil {
		c.Close()
		return err
	}
	// The checkpointer copies committed pages from the log into the main
	// file; it never writes content of its own.
	p.cdb = sql.OpenDB(&connector{dsn: dsn(p.opts.FilePath, wq), hook: commonHook})
	p.cdb.SetMaxOpenConns(1)
	if p.ckpt, err = p.cdb.Conn(context.Background()); err != nil {
		return fmt.Errorf("checkpoint connection: %w", err)
	}
	if err := p.refreshBytes(); err != nil {
		return err
	}
	if n := p.opts.ReadConnections; n > 0 {
		rq := url.Values{}
		rq.Set("mode", "ro")
		rq.Set("_query_only", "1")
		rq.Set("_journal_mode", "WAL")
		rq.Set("_synchronous", "NORMAL")
		rq.Set("_busy_timeout", "5000")
		p.rdb = sql.OpenDB(&connector{dsn: dsn(p.opts.FilePath, rq), hook: commonHook})
		p.rdb.SetMaxOpenConns(n)
		p.rdb.SetMaxIdleConns(n)
		p.readers = make(chan *conn, n)
		for i := 0; i < n; i++ {
			rc, err := p.rdb.Conn(context.Background())
			if err != nil {
				return fmt.Errorf("read connection: %w", err)
			}
			cc, err := prepare(rc)
			if err != nil {
				rc.Close()
				return fmt.Errorf("read connection: %w", err)
			}
			p.readers <- cc
		}
	}
	return nil
}

// create makes a new database: the file first with mode 0600 (it holds
// whatever applications published, and SQLite would make it 0644 minus
// umask), then page_size 4096 before the first write - a WAL database cannot
// change it afterwards - then the schema and user_version in one transaction.
func (p *Provider) create() error {
	f, err := os.OpenFile(p.opts.FilePath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	db := sql.OpenDB(&connector{dsn: dsn(p.opts.FilePath, url.Values{})})
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, s := range []string{"PRAGMA page_size = " + strconv.Itoa(pageSize), "PRAGMA journal_mode = WAL"} {
		if _, err := c.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	tx, err := c.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, s := range schema {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("schema: %w", err)
		}
	}
	now := time.Now().UTC().Format(time.RFC3339)
	for k, v := range map[string]string{"created_by": writerName(p.opts.Writer), "created_at": now} {
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?)`, k, v); err != nil {
			return err
		}
	}
	for _, s := range []string{
		"PRAGMA user_version = " + strconv.Itoa(SchemaVersion),
		"PRAGMA application_id = " + strconv.Itoa(applicationID),
	} {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// checkSchema refuses a database this build does not read: another schema
// version (named with the build that created it), or tables with no version
// at all. Adopting either would be plausible wrong state, silently.
func (p *Provider) checkSchema(c *sql.Conn, fresh bool) error {
	ctx := context.Background()
	var version, tables int64
	if err := c.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return err
	}
	if err := c.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table'").Scan(&tables); err != nil {
		return err
	}
	if version == 0 {
		if tables > 0 {
			return fmt.Errorf("the file has tables and states no schema version; this broker reads version %d and will not adopt it", SchemaVersion)
		}
		return fmt.Errorf("the file is an empty SQLite database with no schema; remove it or give a new file_path")
	}
	if version != SchemaVersion {
		by, at := "an unknown build", "an unknown time"
		var v string
		if c.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'created_by'").Scan(&v) == nil {
			by = "saguin " + v
		}
		if c.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'created_at'").Scan(&v) == nil {
			at = v
		}
		err := fmt.Errorf("schema version %d (created by %s at %s); this broker reads version %d", version, by, at, SchemaVersion)
		if version < SchemaVersion {
			// notes-0004: no in-place upgrade; the older binary exports.
			err = fmt.Errorf("%w; it does not upgrade a file in place: with the build that wrote it, stop the broker and run "+
				"saguin --sqlite-to-snapshots <this file> <dir>, then with this build saguin --snapshots-to-sqlite <dir> <new file> "+
				"(channels, positions and jobs are carried; sessions are not)", err)
		}
		return err
	}
	if err := c.QueryRowContext(ctx, "PRAGMA page_size").Scan(&p.pageSize); err != nil {
		return err
	}
	// A file this build created has 4096-byte pages; anything else means the
	// pragma did not take, and every bound computed from it would be wrong.
	if fresh && p.pageSize != pageSize {
		return fmt.Errorf("page size is %d after creating the database with %d", p.pageSize, pageSize)
	}
	return nil
}

// commonHook runs on every new connection, read or write, and refuses one
// that is not in WAL with synchronous=NORMAL: the connection string sets
// both, and this is what makes "a pool that reconnects can never hand out a
// connection lacking them" hold whatever the driver does with the string.
func commonHook(c *sqlite3.SQLiteConn) error {
	if _, err := c.Exec("PRAGMA synchronous = NORMAL", nil); err != nil {
		return fmt.Errorf("synchronous: %w", err)
	}
	rows, err := c.Query("PRAGMA journal_mode", nil)
	if err != nil {
		return fmt.Errorf("journal_mode: %w", err)
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil {
		return fmt.Errorf("journal_mode: %w", err)
	}
	if mode, _ := v[0].(string); mode != "wal" {
		return fmt.Errorf("journal_mode is %v, not wal", v[0])
	}
	return nil
}

// writeHook runs on every new write connection, for what the connection
// string cannot carry: the page ceiling (max_page_count) is connection state.
func (p *Provider) writeHook(c *sqlite3.SQLiteConn) error {
	if err := commonHook(c); err != nil {
		return err
	}
	// The writer never checkpoints: a checkpoint fsyncs, and paid on the
	// write connection it stalls every publish behind it. The flusher
	// checkpoints on a connection of its own instead (checkpointer).
	if _, err := c.Exec("PRAGMA wal_autocheckpoint = 0", nil); err != nil {
		return fmt.Errorf("wal_autocheckpoint: %w", err)
	}
	if p.publishPages > 0 {
		if _, err := c.Exec("PRAGMA max_page_count = "+strconv.FormatInt(p.publishPages, 10), nil); err != nil {
			return fmt.Errorf("max_page_count: %w", err)
		}
	}
	return nil
}

// refreshBytes reads the database's size from its header (PRAGMA
// page_count) at open, before the writer starts; the flusher keeps it from
// then on (refreshBytesOnFlush). No table is scanned.
func (p *Provider) refreshBytes() error {
	var pages int64
	if err := p.wc.pageCount.QueryRowContext(context.Background()).Scan(&pages); err != nil {
		return err
	}
	p.bytes.Store(pages * p.pageSize)
	return nil
}

// connector opens connections to one database through its own driver value,
// so each provider's ConnectHook sees its own settings without a global
// driver registration per provider.
type connector struct {
	dsn  string
	hook func(*sqlite3.SQLiteConn) error
}

func (c *connector) Connect(context.Context) (driver.Conn, error) {
	d := &sqlite3.SQLiteDriver{ConnectHook: c.hook}
	return d.Open(c.dsn)
}

func (c *connector) Driver() driver.Driver { return &sqlite3.SQLiteDriver{ConnectHook: c.hook} }

// dsn is a file: URI for path with q; escaping the path keeps a '?' or '#'
// in a directory name from starting the query.
func dsn(path string, q url.Values) string {
	s := "file:" + (&url.URL{Path: path}).EscapedPath()
	if len(q) > 0 {
		s += "?" + q.Encode()
	}
	return s
}

// Name implements store.Provider.
func (p *Provider) Name() string { return p.opts.Name }

// Type implements store.Provider.
func (p *Provider) Type() string { return "sqlite" }

// Bytes implements store.Provider: the database's pages in use, freed ones
// included (they are reused, never returned).
func (p *Provider) Bytes() int64 { return p.bytes.Load() }

// MaxBytes implements store.Provider.
func (p *Provider) MaxBytes() int64 { return p.opts.MaxBytes }

// Close stops the writer (answering what is queued), checkpoints the log with
// TRUNCATE so that the main file alone is the whole database, closes every
// connection and releases the lock. A failed checkpoint is logged and does
// not stop the close: the data is committed either way.
func (p *Provider) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.shut.Store(true)
	p.mu.Unlock()
	p.w.stop()
	close(p.flushStop)
	<-p.flushDone
	var errs []error
	if _, err := p.wc.c.ExecContext(context.Background(), "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		p.log.Error("checkpoint at close failed; the next open replays the log", "provider", p.opts.Name, "error", err)
	}
	if err := p.closeConns(); err != nil {
		errs = append(errs, err)
	}
	if err := p.lock.Release(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("storage %s: close: %w", p.opts.Name, err)
	}
	return nil
}

func (p *Provider) closeConns() error {
	var errs []error
	if p.readers != nil {
		for i := 0; i < cap(p.readers); i++ {
			select {
			case c := <-p.readers:
				errs = append(errs, c.close())
			default:
			}
		}
	}
	if p.rdb != nil {
		errs = append(errs, p.rdb.Close())
	}
	if p.ckpt != nil {
		errs = append(errs, p.ckpt.Close())
	}
	if p.cdb != nil {
		errs = append(errs, p.cdb.Close())
	}
	if p.wc != nil {
		errs = append(errs, p.wc.close())
	}
	if p.wdb != nil {
		errs = append(errs, p.wdb.Close())
	}
	return errors.Join(errs...)
}

// flusher forces the write-ahead log to disk every flush_interval when
// something was committed since the last time, so an idle broker writes
// nothing. synchronous=NORMAL does not sync at commit; this bounds what a
// power cut takes to about one interval. A failure is counted every time and
// logged once per streak, and the next tick tries again.
func (p *Provider) flusher() {
	defer close(p.flushDone)
	t := time.NewTicker(p.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-p.flushStop:
			p.flushOnce()
			return
		case <-t.C:
			p.flushOnce()
		}
	}
}

func (p *Provider) flushOnce() {
	if !p.dirty.Swap(false) {
		return
	}
	err := syncFile(p.opts.FilePath + "-wal")
	if err == nil && !p.walDirSynced {
		// The log's directory entry is made durable once, so a power cut
		// cannot keep the log's bytes and lose the name that finds them.
		if err = syncFile(filepath.Dir(p.opts.FilePath)); err == nil {
			p.walDirSynced = true
		}
	}
	if err == nil {
		p.refreshBytesOnFlush()
		p.checkpoint()
		if p.flushFailing {
			// At the level of the error it retracts (RFC 0002 "How much
			// the broker says").
			p.log.Error("forcing the write-ahead log to disk works again", "provider", p.opts.Name)
		}
		p.flushFailing = false
		return
	}
	p.dirty.Store(true)
	err = fmt.Errorf("storage %s: forcing the write-ahead log to disk: %w", p.opts.Name, err)
	p.storageError(err)
	if !p.flushFailing {
		p.log.Error("acknowledged commits may not be on disk", "provider", p.opts.Name, "error", err)
	}
	p.flushFailing = true
}

// refreshBytesOnFlush reads the database's size on the flusher's own
// connection after a commit, so the writer does not pay a statement per
// transaction for a metric: saguin_provider_bytes lags by at most one
// flush_interval.
func (p *Provider) refreshBytesOnFlush() {
	var pages int64
	if err := p.ckpt.QueryRowContext(context.Background(), "PRAGMA page_count").Scan(&pages); err != nil {
		p.log.Warn("reading the database size failed", "provider", p.opts.Name, "error", err)
		return
	}
	p.bytes.Store(pages * p.pageSize)
}

// checkpointPeriod is how often, at most, the flusher copies the log into
// the main file while something is being committed: one fsync of the main
// file a second under load, none while idle, and the log bounded by about a
// second of traffic (unless a reader holds it).
const checkpointPeriod = time.Second

// checkpoint runs a passive checkpoint on the flusher's own connection: it
// never waits for the writer or a reader, and the writer, which has
// automatic checkpoints turned off, never pays for it.
func (p *Provider) checkpoint() {
	if time.Since(p.lastCheckpoint) < checkpointPeriod {
		return
	}
	p.lastCheckpoint = time.Now()
	var busy, frames, copied int64
	err := p.ckpt.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied)
	if err != nil {
		p.storageError(fmt.Errorf("storage %s: checkpoint: %w", p.opts.Name, err))
		p.log.Warn("checkpoint failed; the next one retries", "provider", p.opts.Name, "error", err)
	}
}

func syncFile(path string) error {
	flag := os.O_RDWR
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		flag = os.O_RDONLY
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (p *Provider) storageError(err error) {
	if h := p.opts.Hooks.StorageError; h != nil {
		h(err)
	}
}

// mapErr turns a failure into the store's answer: SQLITE_FULL is the
// provider at its bound (0x97, a refusal, not counted as an error); the
// store's own refusals pass through; anything else is a storage failure
// (0x83), counted in saguin_storage_errors_total.
func (p *Provider) mapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	err = unwrapDB(err)
	var se sqlite3.Error
	if errors.As(err, &se) && se.Code == sqlite3.ErrFull {
		return fmt.Errorf("storage %s: %s: %w", p.opts.Name, what, store.ErrProviderFull)
	}
	for _, known := range refusals {
		if errors.Is(err, known) {
			return err
		}
	}
	err = fmt.Errorf("storage %s: %s: %w", p.opts.Name, what, err)
	p.storageError(err)
	return err
}

// refusals are the store's own answers, which are not storage failures.
var refusals = []error{store.ErrProviderFull, store.ErrChannelFull, store.ErrBelowFloor, store.ErrStaleDelivery,
	store.ErrNotFound, store.ErrKindMismatch, store.ErrClosed}

func (p *Provider) checkOpen() error {
	if p.closed {
		return fmt.Errorf("storage %s: %w", p.opts.Name, store.ErrClosed)
	}
	return nil
}
