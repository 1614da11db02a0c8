package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/store"
)

func testOptions(t testing.TB) store.SQLiteOptions {
	return store.SQLiteOptions{
		Name:            "disk",
		FilePath:        filepath.Join(t.TempDir(), "saguin.db"),
		ReadConnections: 2,
		Writer:          "test",
		Logger:          quiet,
	}
}

func mustOpen(t testing.TB, o store.SQLiteOptions) *Provider {
	t.Helper()
	p, err := Open(o)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func record(i int, payload int) store.Record {
	return store.Record{
		MessageID: fmt.Sprintf("0190b5f0-0000-7000-8000-%012d", i),
		Time:      time.Unix(1_700_000_000, int64(i)),
		Topic:     "sensors/a/temp",
		Headers:   []store.Header{{Key: "k", Value: "v"}},
		Payload:   make([]byte, payload),
		ClientID:  "pub",
		QoS:       1,
	}
}

func TestSecondProviderOnTheSameFileIsRefusedNamingTheLock(t *testing.T) {
	o := testOptions(t)
	mustOpen(t, o)
	start := time.Now()
	_, err := Open(o)
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), o.FilePath+".lock") || !strings.Contains(err.Error(), o.Name) {
		t.Fatalf("refusal %q does not name the provider and its lock", err)
	}
	if waited := time.Since(start); waited > 2*time.Second {
		t.Fatalf("refusal took %v: a second broker is refused promptly", waited)
	}
}

func TestLockIsReleasedByClose(t *testing.T) {
	o := testOptions(t)
	p := mustOpen(t, o)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	mustOpen(t, o)
}

func TestDatabaseFileIsCreatedWithMode0600(t *testing.T) {
	o := testOptions(t)
	mustOpen(t, o)
	info, err := os.Stat(o.FilePath)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Fatalf("database mode %o, want 600", mode)
	}
}

// rawDB opens the provider's file as any other SQLite reader would.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestCreatedDatabaseHasPageSize4096WALAndTheSchemaVersion(t *testing.T) {
	o := testOptions(t)
	p := mustOpen(t, o)
	p.Close()
	db := rawDB(t, o.FilePath)
	var pageSize, version int
	var mode string
	db.QueryRow("PRAGMA page_size").Scan(&pageSize)
	db.QueryRow("PRAGMA user_version").Scan(&version)
	db.QueryRow("PRAGMA journal_mode").Scan(&mode)
	if pageSize != 4096 || version != SchemaVersion || mode != "wal" {
		t.Fatalf("page_size %d user_version %d journal_mode %s, want 4096 %d wal", pageSize, version, mode, SchemaVersion)
	}
	var strict int
	db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE '%) STRICT%'`).Scan(&strict)
	if strict != 0 {
		t.Fatalf("%d tables are not STRICT", strict)
	}
}

func TestEveryConnectionRunsWALWithSynchronousNormal(t *testing.T) {
	p := mustOpen(t, testOptions(t))
	check := func(c *conn, who string) {
		var mode string
		var sync int
		ctx := context.Background()
		c.c.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode)
		c.c.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync)
		if mode != "wal" || sync != 1 {
			t.Errorf("%s connection: journal_mode %s synchronous %d, want wal 1 (NORMAL)", who, mode, sync)
		}
	}
	check(p.wc, "write")
	rc := <-p.readers
	check(rc, "read")
	p.readers <- rc
}

func TestReadConnectionsCannotWrite(t *testing.T) {
	p := mustOpen(t, testOptions(t))
	rc := <-p.readers
	defer func() { p.readers <- rc }()
	if _, err := rc.c.ExecContext(context.Background(), `INSERT INTO meta (key, value) VALUES ('x', 'y')`); err == nil {
		t.Fatal("a read connection wrote")
	}
}

func TestSchemaVersionOfAnotherLayoutIsRefusedByName(t *testing.T) {
	o := testOptions(t)
	p := mustOpen(t, o)
	p.Close()
	db := rawDB(t, o.FilePath)
	if _, err := db.Exec("PRAGMA user_version = 5"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err := Open(o)
	if err == nil || !strings.Contains(err.Error(), "schema version 5") || !strings.Contains(err.Error(), "saguin test") ||
		!strings.Contains(err.Error(), fmt.Sprintf("reads version %d", SchemaVersion)) {
		t.Fatalf("open of a version-5 file: %v", err)
	}
}

// A file of version 100 (subscriptions in the sessions row) is refused, and
// the refusal says how its data is carried across: there is no in-place
// upgrade (notes-0004 "Versioning / no in-place upgrade").
func TestOlderSchemaVersionIsRefusedNamingTheExportThatCarriesItAcross(t *testing.T) {
	o := testOptions(t)
	p := mustOpen(t, o)
	p.Close()
	db := rawDB(t, o.FilePath)
	if _, err := db.Exec("PRAGMA user_version = 100"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err := Open(o)
	if err == nil || !strings.Contains(err.Error(), "schema version 100") ||
		!strings.Contains(err.Error(), "--sqlite-to-snapshots") || !strings.Contains(err.Error(), "--snapshots-to-sqlite") {
		t.Fatalf("open of a version-100 file: %v", err)
	}
}

func TestTablesWithNoSchemaVersionAreRefused(t *testing.T) {
	o := testOptions(t)
	db := rawDB(t, o.FilePath)
	if _, err := db.Exec("CREATE TABLE records (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(o); err == nil || !strings.Contains(err.Error(), "no schema version") {
		t.Fatalf("open of a file with tables and no version: %v", err)
	}
}

func TestMaxBytesBelowTwiceTheReserveIsRefused(t *testing.T) {
	o := testOptions(t)
	o.MaxBytes, o.Reserve = 1<<20, 600<<10
	if _, err := Open(o); err == nil || !strings.Contains(err.Error(), "twice the reserve") {
		t.Fatalf("open: %v", err)
	}
}

// A bound of less than a page is refused at start (here by the rule that it
// must be above the empty database): SQLite reads max_page_count 0 as "no
// bound", so a provider given a few hundred bytes would be unbounded.
func TestMaxBytesRoundingToZeroPagesIsRefused(t *testing.T) {
	o := testOptions(t)
	o.MaxBytes = 1000
	if _, err := Open(o); err == nil {
		t.Fatal("a bound of less than one page was accepted (SQLite reads max_page_count 0 as no bound)")
	}
}

// fullProvider is a provider bounded just above its empty size, filled until
// an ordinary append is refused.
func fullProvider(t *testing.T) (*Provider, store.AppendLog) {
	o := testOptions(t)
	o.MaxBytes, o.Reserve = 400<<10, 64<<10
	p := mustOpen(t, o)
	l, err := p.Append("events", store.ChannelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; ; i++ {
		if i > 10000 {
			t.Fatal("the provider never filled")
		}
		if _, err := l.Append(record(i, 2000)); err != nil {
			if !errors.Is(err, store.ErrProviderFull) {
				t.Fatalf("append %d: %v, want ErrProviderFull", i, err)
			}
			break
		}
	}
	return p, l
}

func TestSQLiteFullIsAnsweredProviderFull(t *testing.T) {
	p, l := fullProvider(t)
	next := l.Next()
	_, err := l.Append(record(0, 2000))
	if !errors.Is(err, store.ErrProviderFull) || store.IsFull(err) == false {
		t.Fatalf("append at the bound: %v", err)
	}
	if l.Next() != next {
		t.Fatalf("a refused append moved next from %d to %d", next, l.Next())
	}
	if p.Bytes() > p.MaxBytes() {
		t.Fatalf("file %d bytes past max_bytes %d", p.Bytes(), p.MaxBytes())
	}
}

func TestRelievingWritesMayUseTheReserve(t *testing.T) {
	_, l := fullProvider(t)
	// Positions are relieving: a full provider still records progress.
	for i := 0; i < 50; i++ {
		if err := l.SavePosition(store.Position{Reader: fmt.Sprintf("bridge:b%d", i), Offset: 1}); err != nil {
			t.Fatalf("position %d at a full provider: %v", i, err)
		}
	}
	// The ceiling was restored after each relieving write.
	if _, err := l.Append(record(2, 2000)); !errors.Is(err, store.ErrProviderFull) {
		t.Fatalf("append after relieving writes: %v, want ErrProviderFull (reserve leaked to publishes)", err)
	}
}

func TestFailedBatchHandsBackItsOffsets(t *testing.T) {
	_, l := fullProvider(t)
	next := l.Next()
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.Append(record(i, 4000))
		}()
	}
	wg.Wait()
	if l.Next() != next {
		t.Fatalf("next %d after refused batches, want %d", l.Next(), next)
	}
	if _, _, err := l.Trim(time.Time{}, l.Bytes()/2); err != nil {
		t.Fatal(err)
	}
	r, err := l.Append(record(99, 100))
	if err != nil || r.Offset != next {
		t.Fatalf("append after room freed: offset %d err %v, want %d", r.Offset, err, next)
	}
}

func TestRetentionFreesRoomAtAFullProvider(t *testing.T) {
	_, l := fullProvider(t)
	removed, freed, err := l.Trim(time.Time{}, l.Bytes()/2)
	if err != nil || removed == 0 || freed == 0 {
		t.Fatalf("trim at a full provider: removed %d freed %d err %v", removed, freed, err)
	}
	if _, err := l.Append(record(1, 2000)); err != nil {
		t.Fatalf("append after retention: %v", err)
	}
}

func TestCountersAreKeptFromCommittedTransactions(t *testing.T) {
	o := testOptions(t)
	p := mustOpen(t, o)
	l, _ := p.Append("events", store.ChannelOptions{})
	var bytes int64
	for i := 1; i <= 10; i++ {
		r := record(i, 100)
		bytes += store.RecordSize(&r)
		l.Append(r)
	}
	l.Trim(time.Time{}, bytes-1)
	p.Close()
	db := rawDB(t, o.FilePath)
	var next, floor, stored, rows, sum int64
	db.QueryRow(`SELECT next, floor, bytes FROM channels WHERE name = 'events'`).Scan(&next, &floor, &stored)
	db.QueryRow(`SELECT count(*), sum(size) FROM records`).Scan(&rows, &sum)
	if next != 11 || floor != 2 || stored != sum || rows != 9 {
		t.Fatalf("stored next %d floor %d bytes %d; rows %d summing %d", next, floor, stored, rows, sum)
	}
	if l.Next() != 11 || l.Floor() != 2 || l.Bytes() != sum || l.Len() != 9 {
		t.Fatalf("in memory next %d floor %d bytes %d len %d", l.Next(), l.Floor(), l.Bytes(), l.Len())
	}
}

func TestHeadersKeepOrderAndRepeatsAsJSON(t *testing.T) {
	o := testOptions(t)
	p := mustOpen(t, o)
	l, _ := p.Append("events", store.ChannelOptions{})
	r := record(1, 1)
	r.Headers = []store.Header{{Key: "b", Value: "1"}, {Key: "a", Value: "\"q\"\n"}, {Key: "b", Value: "ü"}}
	l.Append(r)
	p.Close()
	var h string
	rawDB(t, o.FilePath).QueryRow(`SELECT headers FROM records`).Scan(&h)
	if h != `[["b","1"],["a","\"q\"\n"],["b","ü"]]` {
		t.Fatalf("headers stored as %s", h)
	}
}

func TestReadConnectionsZeroServesReadsOnTheWriteConnection(t *testing.T) {
	o := testOptions(t)
	o.ReadConnections = 0
	p := mustOpen(t, o)
	if p.readers != nil {
		t.Fatal("read connections opened with read_connections: 0")
	}
	l, _ := p.Append("events", store.ChannelOptions{})
	l.Append(record(1, 10))
	w, err := l.ReadFrom(1, 10, nil)
	if err != nil || len(w.Records) != 1 || w.Next != 2 {
		t.Fatalf("read: %+v %v", w, err)
	}
}

func TestAWriteThatReturnedIsSeenByTheNextRead(t *testing.T) {
	p := mustOpen(t, testOptions(t))
	l, _ := p.Append("events", store.ChannelOptions{})
	for i := 1; i <= 50; i++ {
		r, err := l.Append(record(i, 10))
		if err != nil {
			t.Fatal(err)
		}
		w, err := l.ReadFrom(r.Offset, 1, nil)
		if err != nil || len(w.Records) != 1 || w.Records[0].MessageID != r.MessageID {
			t.Fatalf("read after append %d: %+v %v", i, w, err)
		}
	}
}

func TestFlushForcesTheLogOnlyAfterACommit(t *testing.T) {
	o := testOptions(t)
	o.FlushInterval = time.Hour // the test drives flushOnce itself
	p := mustOpen(t, o)
	if p.dirty.Load() {
		t.Fatal("dirty before anything was committed")
	}
	l, _ := p.Append("events", store.ChannelOptions{})
	l.Append(record(1, 10))
	if !p.dirty.Load() {
		t.Fatal("a commit did not mark the log for the next flush")
	}
	p.flushOnce()
	if p.dirty.Load() {
		t.Fatal("still dirty after a flush")
	}
	var errs []error
	p.opts.Hooks.StorageError = func(err error) { errs = append(errs, err) }
	p.flushOnce() // idle: nothing to do, nothing touched
	if len(errs) != 0 {
		t.Fatal(errs)
	}
}

func TestFailedFlushIsCountedAndRetried(t *testing.T) {
	o := testOptions(t)
	o.FlushInterval = time.Hour
	p := mustOpen(t, o)
	var errs []error
	p.opts.Hooks.StorageError = func(err error) { errs = append(errs, err) }
	p.opts.FilePath = filepath.Join(t.TempDir(), "missing", "x.db") // the flusher's path only
	p.dirty.Store(true)
	p.flushOnce()
	p.flushOnce()
	if len(errs) != 2 || !p.dirty.Load() {
		t.Fatalf("failed flushes counted %d, dirty %v; want 2 and still owed", len(errs), p.dirty.Load())
	}
}

func TestCloseCheckpointsSoTheMainFileIsComplete(t *testing.T) {
	o := testOptions(t)
	p := mustOpen(t, o)
	l, _ := p.Append("events", store.ChannelOptions{})
	l.Append(record(1, 10))
	p.Close()
	if info, err := os.Stat(o.FilePath + "-wal"); err == nil && info.Size() != 0 {
		t.Fatalf("write-ahead log holds %d bytes after close", info.Size())
	}
	copyPath := filepath.Join(t.TempDir(), "copy.db")
	b, _ := os.ReadFile(o.FilePath)
	os.WriteFile(copyPath, b, 0o600)
	var n int
	if err := rawDB(t, copyPath).QueryRow(`SELECT count(*) FROM records`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("a copy of the closed main file: %d records, %v", n, err)
	}
}

func TestWindowFloorAndRecordsComeFromOneSnapshot(t *testing.T) {
	p := mustOpen(t, testOptions(t))
	l, _ := p.Append("events", store.ChannelOptions{})
	r := record(0, 50)
	size := store.RecordSize(&r)
	for i := 0; i < 20; i++ {
		l.Append(record(i, 50))
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			l.Append(record(i, 50))
			l.Trim(time.Time{}, 10*size)
		}
	}()
	defer func() { close(stop); <-done }()
	for i := 0; i < 300; i++ {
		from := l.Floor()
		w, err := l.ReadFrom(from, 5, nil)
		var below *store.BelowFloorError
		if errors.As(err, &below) {
			if len(w.Records) != 0 || below.Floor <= from {
				t.Fatalf("below-floor answer: %+v %+v", w, below)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		// The reader asked from at or above the window's floor: the first
		// record served must be exactly the one asked for, never a survivor
		// standing in for records a trim removed between two reads.
		if len(w.Records) == 0 || w.Records[0].Offset != from || from < w.Floor {
			t.Fatalf("window from %d: floor %d, first %v", from, w.Floor, offsetsOf(w.Records))
		}
	}
}

func offsetsOf(rs []store.Record) []uint64 {
	out := make([]uint64, len(rs))
	for i := range rs {
		out[i] = rs[i].Offset
	}
	return out
}

func TestEmptyDatabaseSizeIsTheDocumentedFigure(t *testing.T) {
	p := mustOpen(t, testOptions(t))
	if p.Bytes() != EmptyDatabaseBytes {
		t.Fatalf("a new database takes %d bytes; EmptyDatabaseBytes says %d", p.Bytes(), EmptyDatabaseBytes)
	}
}

func TestMaxBytesNotAboveTheEmptyDatabasePlusTwiceTheReserveIsRefused(t *testing.T) {
	o := testOptions(t)
	o.MaxBytes, o.Reserve = EmptyDatabaseBytes+2*4096, 4096
	if _, err := Open(o); err == nil || !strings.Contains(err.Error(), "empty database") {
		t.Fatalf("open: %v", err)
	}
}

func TestALiveProviderIsReadableByOrdinarySQLiteClients(t *testing.T) {
	o := testOptions(t)
	p := mustOpen(t, o)
	l, _ := p.Append("events", store.ChannelOptions{})
	for i := 0; i < 3; i++ {
		l.Append(record(i, 10))
	}
	var n int
	if err := rawDB(t, o.FilePath).QueryRow(`SELECT count(*) FROM records`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("an outside reader of the live database: %d records, %v", n, err)
	}
}
