package main

import (
	"bytes"
	"crypto/sha256"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/memory"
	"github.com/saguin-edge/saguin/store/sqlite"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

var epoch = time.Unix(1_700_000_000, 123_456_789)

func migRecord(i int) store.Record {
	return store.Record{
		MessageID: "id-" + string(rune('a'+i)),
		Time:      epoch.Add(time.Duration(i) * time.Second),
		Topic:     "t/" + string(rune('a'+i)),
		Headers:   []store.Header{{Key: "k", Value: "1"}, {Key: "k", Value: "2"}},
		Props:     []byte{1, 2, 3},
		Payload:   []byte("payload"),
		ClientID:  "pub",
		QoS:       1,
	}
}

// fill puts one channel of each kind into p: an append channel whose floor
// was raised, with a reader behind the head; a latest channel with a
// tombstone; a queue with a job whose attempt was spent and a dead letter.
func fill(t *testing.T, p store.Provider) {
	t.Helper()
	l, err := p.Append("events", store.ChannelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		if _, err := l.Append(migRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	r := migRecord(1)
	if _, _, err := l.Trim(time.Time{}, l.Bytes()-store.RecordSize(&r)); err != nil {
		t.Fatal(err)
	}
	if err := l.SavePosition(store.Position{Reader: store.ReaderBridge("up"), Offset: 4, SavedAt: epoch}); err != nil {
		t.Fatal(err)
	}
	lt, _ := p.Latest("state", store.ChannelOptions{})
	lt.Set(migRecord(1))
	lt.Set(migRecord(2))
	del := migRecord(1)
	lt.Delete(del)
	q, _ := p.Queue("jobs", store.QueueOptions{})
	q.Enqueue(migRecord(1))
	q.Enqueue(migRecord(2))
	_, d, ok, _ := q.Offer("w", epoch)
	if !ok {
		t.Fatal("no offer")
	}
	if _, err := q.Lease(d, epoch, epoch.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := q.DeadLetter(d, "jobs/__dlq/x", store.ReasonAttemptsExhausted, epoch); err != nil {
		t.Fatal(err)
	}
	_, d, _, _ = q.Offer("w", epoch)
	q.Lease(d, epoch, epoch.Add(time.Minute))
}

// check asserts what fill stored reads back the same from p.
func check(t *testing.T, p store.Provider) {
	t.Helper()
	l, err := p.Append("events", store.ChannelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Next() != 6 || l.Floor() != 2 || l.Len() != 4 {
		t.Fatalf("events: next %d floor %d len %d, want 6 2 4", l.Next(), l.Floor(), l.Len())
	}
	w, err := l.ReadFrom(2, 10, nil)
	if err != nil || len(w.Records) != 4 || w.Records[0].Offset != 2 || w.Records[0].MessageID != migRecord(2).MessageID ||
		len(w.Records[0].Headers) != 2 || w.Records[0].Headers[1].Value != "2" {
		t.Fatalf("events records: %+v %v", w.Records, err)
	}
	if pos, ok, _ := l.Position(store.ReaderBridge("up")); !ok || pos.Offset != 4 {
		t.Fatalf("position: %+v %v", pos, ok)
	}
	lt, _ := p.Latest("state", store.ChannelOptions{})
	if lt.Next() != 4 || lt.Count() != 1 || lt.Len() != 2 {
		t.Fatalf("state: next %d count %d len %d, want 4 1 2", lt.Next(), lt.Count(), lt.Len())
	}
	if v, ok, _ := lt.Get(migRecord(1).Topic); !ok || !v.Deleted || v.Offset != 3 {
		t.Fatalf("tombstone: %+v %v", v, ok)
	}
	q, _ := p.Queue("jobs", store.QueueOptions{})
	if q.Next() != 3 || q.Depth() != 1 {
		t.Fatalf("jobs: next %d depth %d, want 3 1", q.Next(), q.Depth())
	}
	j, _, ok, _ := q.Offer("w", epoch)
	if !ok || j.Offset != 2 || j.Attempts != 1 || !j.FirstDelivery.Equal(epoch) {
		t.Fatalf("job after migration: %+v %v (attempts and first delivery must travel)", j, ok)
	}
	dlq := q.DeadLetters()
	if dlq.Next() != 2 {
		t.Fatalf("dead letters next %d, want 2", dlq.Next())
	}
}

func memoryProvider(t *testing.T, dir string) *memory.Provider {
	t.Helper()
	p, err := memory.Open(store.MemoryOptions{Name: "mem", SnapshotDir: dir, Writer: "test", Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func sqliteProvider(t *testing.T, path string) *sqlite.Provider {
	t.Helper()
	p, err := sqlite.Open(store.SQLiteOptions{Name: "disk", FilePath: path, ReadConnections: 1, Writer: "test", Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func migrate(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := dispatch(args, &out, &errb)
	return code, out.String(), errb.String()
}

// digest hashes every file in dir but the lock, to prove a source untouched.
func digest(t *testing.T, paths ...string) string {
	t.Helper()
	h := sha256.New()
	for _, p := range paths {
		filepath.Walk(p, func(path string, info os.FileInfo, err error) error {
			if err != nil || info.IsDir() || strings.HasSuffix(path, ".lock") || strings.HasSuffix(path, "-shm") {
				return nil
			}
			b, _ := os.ReadFile(path)
			h.Write([]byte(path))
			h.Write(b)
			return nil
		})
	}
	return string(h.Sum(nil))
}

func TestSnapshotsToSQLiteCarriesOffsetsAttemptsAndPositions(t *testing.T) {
	snap := t.TempDir()
	mp := memoryProvider(t, snap)
	fill(t, mp)
	if err := mp.Close(); err != nil {
		t.Fatal(err)
	}
	before := digest(t, snap)
	db := filepath.Join(t.TempDir(), "saguin.db")
	code, out, errs := migrate(t, "--snapshots-to-sqlite", snap, db)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	if digest(t, snap) != before {
		t.Fatal("the source snapshot directory was modified")
	}
	sp := sqliteProvider(t, db)
	defer sp.Close()
	check(t, sp)
}

func TestSQLiteToSnapshotsCarriesOffsetsAttemptsAndPositions(t *testing.T) {
	db := filepath.Join(t.TempDir(), "saguin.db")
	sp := sqliteProvider(t, db)
	fill(t, sp)
	// An expired session's position a starting broker would drop: the
	// migration leaves the source alone, expired positions included.
	l, _ := sp.Append("events", store.ChannelOptions{})
	l.SavePosition(store.Position{Reader: store.ReaderMQTT("gone"), Offset: 3, SavedAt: epoch})
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}
	before := digest(t, db)
	snap := filepath.Join(t.TempDir(), "snapshots")
	code, out, errs := migrate(t, "--sqlite-to-snapshots", db, snap)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	if digest(t, db) != before {
		t.Fatal("the source database was modified")
	}
	mp := memoryProvider(t, snap)
	defer mp.Close()
	check(t, mp)
}

func TestMigrationWithConfigIsRefused(t *testing.T) {
	for _, flag := range []string{"--snapshots-to-sqlite", "--sqlite-to-snapshots"} {
		code, _, errs := migrate(t, flag, "a", "b", "--config", "saguin.yaml")
		if code == 0 || !strings.Contains(errs, "--config") {
			t.Errorf("%s with --config: exit %d %q", flag, code, errs)
		}
		var errb bytes.Buffer
		if code := runMigration(flag, []string{flag, "a", "b", "--config=x"}, io.Discard, &errb, nil); code == 0 {
			t.Errorf("%s with --config=x run directly: accepted", flag)
		}
	}
}

func TestMigrationToAnExistingDatabaseIsRefused(t *testing.T) {
	snap := t.TempDir()
	mp := memoryProvider(t, snap)
	fill(t, mp)
	mp.Close()
	db := filepath.Join(t.TempDir(), "saguin.db")
	os.WriteFile(db, nil, 0o600)
	if code, _, errs := migrate(t, "--snapshots-to-sqlite", snap, db); code == 0 || !strings.Contains(errs, "must not exist") {
		t.Fatalf("exit %d %q", code, errs)
	}
}

func TestMigrationToADirectoryHoldingSnapshotsIsRefused(t *testing.T) {
	db := filepath.Join(t.TempDir(), "saguin.db")
	sp := sqliteProvider(t, db)
	fill(t, sp)
	sp.Close()
	snap := t.TempDir()
	mp := memoryProvider(t, snap)
	fill(t, mp)
	mp.Close()
	if code, _, errs := migrate(t, "--sqlite-to-snapshots", db, snap); code == 0 || !strings.Contains(errs, "holds snapshots") {
		t.Fatalf("exit %d %q", code, errs)
	}
}

func TestMigrationCreatesNothingWhenThereIsNothingToMigrate(t *testing.T) {
	empty := t.TempDir()
	db := filepath.Join(t.TempDir(), "saguin.db")
	if code, _, errs := migrate(t, "--snapshots-to-sqlite", empty, db); code == 0 || !strings.Contains(errs, "nothing to migrate") {
		t.Fatalf("exit %d %q", code, errs)
	}
	if _, err := os.Stat(db); err == nil {
		t.Fatal("a database was created with nothing to migrate")
	}
	src := filepath.Join(t.TempDir(), "empty.db")
	sp := sqliteProvider(t, src)
	sp.Close()
	snap := filepath.Join(t.TempDir(), "snapshots")
	if code, _, errs := migrate(t, "--sqlite-to-snapshots", src, snap); code == 0 || !strings.Contains(errs, "nothing to migrate") {
		t.Fatalf("exit %d %q", code, errs)
	}
	if _, err := os.Stat(snap); err == nil {
		t.Fatal("a snapshot directory was created with nothing to migrate")
	}
}

func TestMigrationFromAProviderARunningBrokerHoldsIsRefused(t *testing.T) {
	db := filepath.Join(t.TempDir(), "saguin.db")
	sp := sqliteProvider(t, db)
	defer sp.Close()
	fill(t, sp)
	code, _, errs := migrate(t, "--sqlite-to-snapshots", db, filepath.Join(t.TempDir(), "s"))
	if code == 0 || !strings.Contains(errs, "held by another broker") {
		t.Fatalf("exit %d %q", code, errs)
	}
}

func TestMigrationOfADatabaseOfAnotherSchemaVersionIsRefused(t *testing.T) {
	db := filepath.Join(t.TempDir(), "saguin.db")
	sp := sqliteProvider(t, db)
	fill(t, sp)
	sp.Close()
	raw, err := sqlOpen(db)
	if err != nil {
		t.Fatal(err)
	}
	raw.Exec("PRAGMA user_version = 20")
	raw.Close()
	code, _, errs := migrate(t, "--sqlite-to-snapshots", db, filepath.Join(t.TempDir(), "s"))
	if code == 0 || !strings.Contains(errs, "schema version 20") {
		t.Fatalf("exit %d %q", code, errs)
	}
}

func TestSQLiteToSnapshotsLeavesACrashedDatabaseAndItsLogUntouched(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "saguin.db")
	sp := sqliteProvider(t, db)
	fill(t, sp)
	// A broker killed without a stop leaves its commits in the log: copy the
	// pair as it stands while the provider is open, as a crash would leave it.
	crashed := filepath.Join(t.TempDir(), "crashed.db")
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(db + suffix)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(crashed+suffix, b, 0o600)
	}
	sp.Close()
	before := digest(t, crashed, crashed+"-wal")
	snap := filepath.Join(t.TempDir(), "snapshots")
	if code, out, errs := migrate(t, "--sqlite-to-snapshots", crashed, snap); code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	if digest(t, crashed, crashed+"-wal") != before {
		t.Fatal("the source database or its log was modified")
	}
	mp := memoryProvider(t, snap)
	defer mp.Close()
	check(t, mp)
}
