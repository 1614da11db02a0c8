package memory

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/store"
)

var t0 = time.Unix(1_700_000_000, 0)

func open(t *testing.T, dir string, mut ...func(*store.MemoryOptions)) *Provider {
	t.Helper()
	p, err := tryOpen(dir, mut...)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return p
}

func tryOpen(dir string, mut ...func(*store.MemoryOptions)) (*Provider, error) {
	o := store.MemoryOptions{Name: "mem", SnapshotDir: dir, Writer: "test-build", Now: func() time.Time { return t0 }, Logger: slog.New(slog.DiscardHandler)}
	for _, m := range mut {
		m(&o)
	}
	return Open(o)
}

// notes-0003 "When retention removes": the age sweep runs every tenth of the
// shortest period (here 10m: every minute) and the size sweep every second,
// each on the injected clock - a record is removed once the clock passes its
// age, not before, with the floor raised and the removal reported; a size
// bound exceeded after the start is enforced at the next size tick.
func TestRetentionSweepsFollowTheInjectedClock(t *testing.T) {
	p := open(t, "")
	defer p.Close()
	r := record(1)
	size := store.RecordSize(&r)
	bySize, _ := p.Append("by-size", store.ChannelOptions{RetentionBytes: 2 * size})
	byAge, _ := p.Append("by-age", store.ChannelOptions{RetentionPeriod: 10 * time.Minute})
	bySize.Append(record(1))
	byAge.Append(record(0)) // received at t0
	byAge.Append(record(120))
	var mu sync.Mutex
	removed := map[string]int{}
	hooks := store.Hooks{RetentionRemoved: func(ch string, n int) { mu.Lock(); removed[ch] += n; mu.Unlock() }}
	p.opts.Hooks = hooks
	clk := clock.NewFake(t0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		store.RunRetention(ctx, p, clk, hooks, nil)
		close(done)
	}()
	defer func() { cancel(); <-done }()
	// The size ticker and the age timer are armed once the start's passes
	// ran; the age timer is armed again only after each of its passes, so
	// waiting for both armed after an Advance waits for that pass.
	clk.WaitArmed(2)
	minute := func() {
		clk.Advance(time.Minute)
		clk.WaitArmed(2)
	}
	for i := 0; i < 9; i++ {
		minute()
	}
	if byAge.Len() != 2 {
		t.Fatalf("at 9m of a 10m period: %d records, want both kept", byAge.Len())
	}
	for i := 0; i < 2; i++ {
		minute()
	}
	if byAge.Len() != 1 || byAge.Floor() != 2 {
		t.Fatalf("at 11m: %d records, floor %d; want the t0 record removed and the floor at 2", byAge.Len(), byAge.Floor())
	}
	for i := 2; i <= 5; i++ {
		bySize.Append(record(i))
	}
	// A tick is handed over only to a loop that finished its last pass:
	// the second Advance returns once the first tick's pass is done.
	clk.Advance(time.Second)
	clk.Advance(time.Second)
	if bySize.Len() != 2 || bySize.Floor() != 4 {
		t.Fatalf("after a size tick: %d records, floor %d; want 2 under retention_bytes, floor 4", bySize.Len(), bySize.Floor())
	}
	mu.Lock()
	defer mu.Unlock()
	if removed["by-size"] != 3 || removed["by-age"] != 1 {
		t.Fatalf("removed %v, want by-size 3 and by-age 1", removed)
	}
}

func record(i int) store.Record {
	return store.Record{MessageID: "id", Time: t0.Add(time.Duration(i) * time.Second), Topic: "t/x", Payload: []byte("payload"), Headers: []store.Header{{Key: "k", Value: "v"}}}
}

// writeOneChannel leaves a snapshot directory holding one append channel
// with a hold, and returns the channel file's path.
func writeOneChannel(t *testing.T, dir string) string {
	t.Helper()
	p := open(t, dir)
	l, err := p.Append("events", store.ChannelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		l.Append(record(i))
	}
	l.Hold(store.Held{ClientID: "c", PacketID: 1, HeldAt: t0, Record: record(9)})
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, FileName("events"))
}

// loadErr opens dir and asks for the events channel, returning what failed.
func loadErr(t *testing.T, dir string) error {
	t.Helper()
	p, err := tryOpen(dir)
	if err != nil {
		return err
	}
	defer func() {
		p.mu.Lock()
		p.closed = true // a refused start writes nothing
		p.mu.Unlock()
		p.lock.Release()
	}()
	_, err = p.Append("events", store.ChannelOptions{})
	return err
}

func TestSnapshotWithAnyFlippedByteRefusesToLoadNamingTheFile(t *testing.T) {
	dir := t.TempDir()
	path := writeOneChannel(t, dir)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range good {
		bad := append([]byte(nil), good...)
		bad[i] ^= 0x40
		if err := os.WriteFile(path, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		err := loadErr(t, dir)
		if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), path) {
			t.Fatalf("byte %d flipped: load answered %v; want a refusal naming %s", i, err, path)
		}
	}
}

func TestTruncatedSnapshotRefusesToLoadNamingTheFile(t *testing.T) {
	dir := t.TempDir()
	path := writeOneChannel(t, dir)
	good, _ := os.ReadFile(path)
	for n := 0; n < len(good); n++ {
		os.WriteFile(path, good[:n], 0o600)
		if err := loadErr(t, dir); !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), path) {
			t.Fatalf("truncated to %d bytes: %v", n, err)
		}
	}
}

// reseal rewrites a file's CRC32C trailer after a deliberate edit, so the
// check under test is the one after the checksum.
func reseal(b []byte) []byte {
	body := b[:len(b)-trailerSize]
	return binary.LittleEndian.AppendUint32(append([]byte(nil), body...), crc32.Checksum(body, castagnoli))
}

func TestSnapshotOfAnotherFormatVersionIsRefusedNamingVersionAndWriter(t *testing.T) {
	dir := t.TempDir()
	path := writeOneChannel(t, dir)
	b, _ := os.ReadFile(path)
	binary.LittleEndian.PutUint32(b[8:12], 21)
	os.WriteFile(path, reseal(b), 0o600)
	err := loadErr(t, dir)
	if err == nil {
		t.Fatal("a format-21 file loaded")
	}
	for _, want := range []string{path, "format 21", "test-build", "reads format 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
}

func TestSnapshotWithAHugeDamagedCountIsRefusedBeforeAllocating(t *testing.T) {
	dir := t.TempDir()
	path := writeOneChannel(t, dir)
	// Rebuild the file with a record count of 2^32-1 and a valid checksum.
	e := newEnc(fileChannel, "test-build", t0)
	e.str("events")
	e.u8(uint8(kindAppend))
	e.u64(4)
	e.u64(1)
	// Written as the uvarint itself: e.n takes an int, which is 32 bits on armhf.
	e.b = binary.AppendUvarint(e.b, 1<<32-1)
	os.WriteFile(path, e.finish(), 0o600)
	err := loadErr(t, dir)
	if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "does not fit") {
		t.Fatalf("huge count: %v", err)
	}
}

func TestSnapshotWithOffsetsOutOfOrderIsRefusedAfterTheChecksum(t *testing.T) {
	dir := t.TempDir()
	path := writeOneChannel(t, dir)
	d := channelData{next: 4, floor: 1, records: []store.Record{record(1), record(2), record(3)}}
	d.records[0].Offset, d.records[1].Offset, d.records[2].Offset = 1, 3, 2
	os.WriteFile(path, encodeChannel("events", kindAppend, &d, nil, "test-build", t0), 0o600)
	if err := loadErr(t, dir); !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "where 2 was due") {
		t.Fatalf("append offsets 1,3,2: %v", err)
	}
	// A latest channel's offsets may have gaps, but must still ascend.
	lt := d
	lt.deleted = []bool{false, false, false}
	lt.records = append([]store.Record(nil), d.records...)
	lt.records[0].Topic, lt.records[1].Topic, lt.records[2].Topic = "a", "b", "c"
	if err := validateSection(kindLatest, &lt); !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "ascend") {
		t.Fatalf("latest offsets 1,3,2: %v", err)
	}
	d.records[1].Offset, d.records[2].Offset = 2, 3
	d.positions = []store.Position{{Reader: "bridge:x", Offset: 9}}
	os.WriteFile(path, encodeChannel("events", kindAppend, &d, nil, "test-build", t0), 0o600)
	if err := loadErr(t, dir); !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "beyond next") {
		t.Fatalf("position beyond next: %v", err)
	}
}

func TestChannelConfiguredAsAnotherKindThanItsFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	writeOneChannel(t, dir)
	p := open(t, dir)
	defer p.Close()
	if _, err := p.Latest("events", store.ChannelOptions{}); !errors.Is(err, store.ErrKindMismatch) {
		t.Fatalf("append file opened as latest: %v", err)
	}
}

func TestSecondProviderOnTheSameSnapshotDirIsRefused(t *testing.T) {
	dir := t.TempDir()
	p := open(t, dir)
	_, err := tryOpen(dir, func(o *store.MemoryOptions) { o.Name = "other" })
	if !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), filepath.Join(dir, LockName)) || !strings.Contains(err.Error(), "other") {
		t.Fatalf("second provider: %v, want a refusal naming the provider and %s", err, LockName)
	}
	p.Close()
	p2 := open(t, dir) // the lock file left behind is just a file
	p2.Close()
}

func TestSnapshotIsWrittenOnlyAtGracefulStop(t *testing.T) {
	dir := t.TempDir()
	p := open(t, dir)
	l, _ := p.Append("events", store.ChannelOptions{})
	l.Append(record(1))
	if _, err := os.Stat(filepath.Join(dir, FileName("events"))); !os.IsNotExist(err) {
		t.Fatalf("a channel file exists before the stop: %v", err)
	}
	p.Close()
	for _, name := range []string{FileName("events"), manifestName} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("after the stop: %v", err)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestSnapshotWithoutADirectoryKeepsNothing(t *testing.T) {
	p := open(t, "")
	l, _ := p.Append("events", store.ChannelOptions{})
	l.Append(record(1))
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestEveryFailedSnapshotFileIsReportedAndOthersAreWritten(t *testing.T) {
	dir := t.TempDir()
	p := open(t, dir)
	for _, name := range []string{"a", "b", "c"} {
		l, _ := p.Append(name, store.ChannelOptions{})
		l.Append(record(1))
	}
	// A directory where a channel file should go: its rename fails.
	for _, name := range []string{"a", "c"} {
		if err := os.MkdirAll(filepath.Join(dir, FileName(name), "x"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	err := p.Close()
	if err == nil {
		t.Fatal("close reported no failure")
	}
	for _, name := range []string{"a", "c"} {
		if !strings.Contains(err.Error(), filepath.Join(dir, FileName(name))) {
			t.Errorf("failure report %q does not name %s", err, FileName(name))
		}
	}
	if strings.Contains(err.Error(), FileName("b")) {
		t.Errorf("b reported as failed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, FileName("b"))); err != nil {
		t.Fatalf("b was not written: %v", err)
	}
}

func TestFailedSnapshotWriteLeavesTheLastGoodOneWhole(t *testing.T) {
	dir := t.TempDir()
	path := writeOneChannel(t, dir)
	good, _ := os.ReadFile(path)
	sd := &snapshotDir{dir: filepath.Join(dir, "missing"), writer: "x"}
	if err := sd.writeFile(FileName("events"), []byte("new")); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
	if now, _ := os.ReadFile(path); string(now) != string(good) {
		t.Fatal("the last good snapshot changed")
	}
}

func TestStaleChannelFileLoadsItsRecordsAndAbandonsItsHolds(t *testing.T) {
	dir := t.TempDir()
	path := writeOneChannel(t, dir)
	old, _ := os.ReadFile(path)
	// A later shutdown that did not rewrite the channel (it was not open).
	clock := t0.Add(time.Hour)
	p := open(t, dir, func(o *store.MemoryOptions) { o.Now = func() time.Time { return clock } })
	p.Close()
	os.WriteFile(path, old, 0o600)
	var abandoned int
	p = open(t, dir, func(o *store.MemoryOptions) {
		o.Hooks.HoldAbandoned = func(ch string, n int) { abandoned += n }
	})
	defer p.Close()
	l, err := p.Append("events", store.ChannelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	held, _ := l.Held()
	if l.Len() != 3 || len(held) != 0 || abandoned != 1 {
		t.Fatalf("stale file: %d records, %d holds, %d abandoned; want 3, 0, 1", l.Len(), len(held), abandoned)
	}
}

func TestSessionsWithoutTheirBroadcastLogRefuseToLoad(t *testing.T) {
	dir := t.TempDir()
	p := open(t, dir)
	s, _ := p.Sessions()
	s.Put(store.Session{ClientID: "a", Expiry: time.Hour})
	p.Close()
	os.Remove(filepath.Join(dir, broadcastName))
	p = open(t, dir)
	defer p.Close()
	if _, err := p.Sessions(); !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), broadcastName) {
		t.Fatalf("sessions without a log: %v", err)
	}
}

func TestInFlightTableLargerThanItsWindowIsRefused(t *testing.T) {
	dir := t.TempDir()
	p := open(t, dir)
	s, _ := p.Sessions()
	s.Log().Append(store.BroadcastEntry{Record: record(1)})
	s.Log().Append(store.BroadcastEntry{Record: record(2)})
	s.Put(store.Session{ClientID: "a", Expiry: time.Hour, ReceiveMaximum: 1})
	p.Close()
	// A file written by a writer that let the window overflow.
	st := &sessionsState{
		sessions: []sessionData{{
			s:        store.Session{ClientID: "a", Expiry: time.Hour, ReceiveMaximum: 1},
			inflight: []store.InFlight{{Offset: 1, PacketID: 1}, {Offset: 2, PacketID: 2}},
		}},
	}
	if err := os.WriteFile(filepath.Join(dir, sessionsName), encodeSessions(st, "test-build", t0), 0o600); err != nil {
		t.Fatal(err)
	}
	p = open(t, dir)
	defer p.Close()
	if _, err := p.Sessions(); !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "window") {
		t.Fatalf("window 1 holding 2: %v", err)
	}
}

func TestSnapshotRestoredOverMaxBytesLoadsWholeThenRefusesPublishes(t *testing.T) {
	dir := t.TempDir()
	writeOneChannel(t, dir)
	r := record(1)
	size := store.RecordSize(&r)
	p := open(t, dir, func(o *store.MemoryOptions) { o.MaxBytes, o.Reserve = 4*size, size })
	defer p.Close()
	l, err := p.Append("events", store.ChannelOptions{})
	if err != nil || l.Len() != 3 {
		t.Fatalf("restore over max_bytes: len %d err %v, want all 3 records", l.Len(), err)
	}
	if _, err := l.Append(record(4)); !errors.Is(err, store.ErrProviderFull) {
		t.Fatalf("publish into a provider over its bound: %v", err)
	}
}

func TestFileNameEncodingIsInjectiveAndNeverADotName(t *testing.T) {
	cases := map[string]string{
		"events":           "events.snapshot",
		"a.b":              "a%2Eb.snapshot",
		".":                "%2E.snapshot",
		"..":               "%2E%2E.snapshot",
		"a%2Eb":            "a%252Eb.snapshot",
		"$saguin/retained": "%24saguin%2Fretained.snapshot",
		"ünï":              "%C3%BCn%C3%AF.snapshot",
	}
	for in, want := range cases {
		if got := FileName(in); got != want {
			t.Errorf("FileName(%q) = %q, want %q", in, got, want)
		}
	}
	if FileName("a.b") == FileName("a%2Eb") {
		t.Fatal("two names map to one file")
	}
}

func FuzzFileNameIsInjective(f *testing.F) {
	f.Add("a.b", "a%2Eb")
	f.Add("..", "%2E%2E")
	f.Fuzz(func(t *testing.T, a, b string) {
		if a != b && FileName(a) == FileName(b) {
			t.Fatalf("%q and %q share the file %q", a, b, FileName(a))
		}
		name := strings.TrimSuffix(FileName(a), snapshotExt)
		if name == "." || name == ".." || strings.ContainsAny(name, "/.") {
			t.Fatalf("%q encodes to %q", a, name)
		}
	})
}

func FuzzDecodeSnapshot(f *testing.F) {
	d := channelData{next: 3, floor: 1, records: []store.Record{record(1), record(2)}}
	d.records[0].Offset, d.records[1].Offset = 1, 2
	f.Add(encodeChannel("events", kindAppend, &d, nil, "w", t0))
	st := &sessionsState{
		log:     channelData{next: 3, floor: 1, records: d.records, holds: []store.Held{{ClientID: "c", PacketID: 1, Record: record(5)}}},
		meta:    []bcastMeta{{}, {forShares: true, owedTo: "a"}},
		cursors: map[string]uint64{"a": 2},
		sessions: []sessionData{{
			s:        store.Session{ClientID: "a", ReceiveMaximum: 2, Subscriptions: []store.Subscription{{Filter: "x/#", Partition: []byte{1}}}, Will: &store.Will{Topic: "w"}},
			inflight: []store.InFlight{{Offset: 2, PacketID: 7}},
		}},
		groups: map[string]*groupState{"g": {cursor: 2, returned: []uint64{1}}},
	}
	f.Add(encodeBroadcast(st, "w", t0))
	f.Add(encodeSessions(st, "w", t0))
	f.Add(encodeManifest(&manifest{began: t0, files: []string{"a.snapshot"}}, "w"))
	f.Add(encodeRetained(d.records, "w", t0))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Must refuse or accept, never panic or allocate without bound.
		decodeChannel(b, "events")
		decodeChannel(reseal(append(b, 0, 0, 0, 0)), "events")
		decodeManifest(b)
		decodeRetained(b)
		st := &sessionsState{}
		decodeBroadcast(b, st)
		decodeSessions(b, st)
	})
}

func TestRetentionRunsBothSweepsAtStartAndOnItsTicks(t *testing.T) {
	p := open(t, "")
	defer p.Close()
	r := record(1)
	size := store.RecordSize(&r)
	bySize, _ := p.Append("by-size", store.ChannelOptions{RetentionBytes: 2 * size})
	byAge, _ := p.Append("by-age", store.ChannelOptions{RetentionPeriod: time.Minute})
	for i := 1; i <= 5; i++ {
		bySize.Append(record(i))
		byAge.Append(record(i))
	}
	var mu sync.Mutex
	removed := map[string]int{}
	hooks := store.Hooks{RetentionRemoved: func(ch string, n int) { mu.Lock(); removed[ch] += n; mu.Unlock() }}
	p.opts.Hooks = hooks
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		store.RunRetention(ctx, p, clock.NewFake(t0.Add(time.Hour)), hooks, nil)
		close(done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for bySize.Len() != 2 || byAge.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("sweeps did not run at start: by-size len %d, by-age len %d", bySize.Len(), byAge.Len())
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if removed["by-size"] != 3 || removed["by-age"] != 5 {
		t.Fatalf("removed %v", removed)
	}
}

func TestSessionWritesALoadWouldRefuseAreRefused(t *testing.T) {
	p := open(t, "")
	defer p.Close()
	s, _ := p.Sessions()
	s.Log().Append(store.BroadcastEntry{Record: record(1)})
	s.Log().Append(store.BroadcastEntry{Record: record(2)})
	s.Put(store.Session{ClientID: "a", ReceiveMaximum: 1})
	if err := s.AddInFlight("a", []store.InFlight{{Offset: 1, PacketID: 1}, {Offset: 2, PacketID: 2}}); err == nil {
		t.Fatal("a window of 1 took 2 messages")
	}
	if err := s.AddInFlight("a", []store.InFlight{{Offset: 3, PacketID: 1}}); err == nil {
		t.Fatal("an in-flight entry at the log's next was taken")
	}
	if err := s.Ack("a", nil, 4); err == nil {
		t.Fatal("a cursor beyond the log's next was taken")
	}
	if err := s.AddInFlight("a", []store.InFlight{{Offset: 2, PacketID: 1}}); err != nil {
		t.Fatalf("a valid entry: %v", err)
	}
}

func TestAStartThatRefusedAFileWritesNothingAtStop(t *testing.T) {
	dir := t.TempDir()
	path := writeOneChannel(t, dir)
	manifest := mustRead(t, filepath.Join(dir, manifestName))
	b := mustRead(t, path)
	b[len(b)-1] ^= 1
	os.WriteFile(path, b, 0o600)
	p := open(t, dir, func(o *store.MemoryOptions) { o.Now = func() time.Time { return t0.Add(time.Hour) } })
	other, _ := p.Append("other", store.ChannelOptions{})
	other.Append(record(1))
	if _, err := p.Append("events", store.ChannelOptions{}); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("damaged file: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, filepath.Join(dir, manifestName)); string(got) != string(manifest) {
		t.Fatal("the manifest was rewritten by a start that refused a file")
	}
	if _, err := os.Stat(filepath.Join(dir, FileName("other"))); !os.IsNotExist(err) {
		t.Fatal("a channel file was written by a start that refused a file")
	}
}

func TestStaleBroadcastLogAbandonsItsHeldBroadcasts(t *testing.T) {
	dir := t.TempDir()
	p := open(t, dir)
	s, _ := p.Sessions()
	s.Put(store.Session{ClientID: "a", Expiry: time.Hour})
	s.Log().Hold(store.Held{ClientID: "a", PacketID: 3, HeldAt: t0, Record: record(1)})
	p.Close()
	old := mustRead(t, filepath.Join(dir, broadcastName))
	later := t0.Add(time.Hour)
	p = open(t, dir, func(o *store.MemoryOptions) { o.Now = func() time.Time { return later } })
	p.Sessions()
	p.Close()
	os.WriteFile(filepath.Join(dir, broadcastName), old, 0o600)
	abandoned := 0
	p = open(t, dir, func(o *store.MemoryOptions) { o.Hooks.HoldAbandoned = func(_ string, n int) { abandoned += n } })
	defer p.Close()
	s, err := p.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	held, _ := s.Log().Held()
	if len(held) != 0 || abandoned != 1 {
		t.Fatalf("stale broadcast log: %d holds kept, %d abandoned; want 0 and 1", len(held), abandoned)
	}
}
