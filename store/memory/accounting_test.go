package memory

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// TestProviderBytesAreTheSumOfWhatItHolds drives every kind of store on one
// provider and checks the shared counter against the sizes held, then that
// every removal gave its bytes back.
func TestProviderBytesAreTheSumOfWhatItHolds(t *testing.T) {
	p := open(t, "")
	defer p.Close()
	r := record(1)
	rs := store.RecordSize(&r)
	l, _ := p.Append("events", store.ChannelOptions{})
	lt, _ := p.Latest("state", store.ChannelOptions{})
	q, _ := p.Queue("jobs", store.QueueOptions{})
	ret, _ := p.Retained(0)
	ss, _ := p.Sessions()
	l.Append(r)
	l.Append(r)
	lt.Set(r)
	lt.Set(r) // a replacement counts once
	q.Enqueue(r)
	ret.Set(r)
	sess := store.Session{ClientID: "dev", Subscriptions: []store.Subscription{{Filter: "a/b"}}}
	ss.Put(sess)
	ss.Log().Append(store.BroadcastEntry{Record: r})
	l.Hold(store.Held{ClientID: "c", PacketID: 1, Record: r})
	want := 7*rs + store.SessionSize(&sess)
	if got := p.Bytes(); got != want {
		t.Fatalf("provider bytes %d, want %d", got, want)
	}
	// Move things around: a release and a dead-letter move change nothing.
	l.ReleaseHeld("c", 1)
	_, d, _, _ := q.Offer("w", t0)
	q.Lease(d, t0, t0.Add(time.Second))
	moved, _ := q.DeadLetter(d, "jobs/__dlq", store.ReasonAttemptsExhausted, t0)
	want += store.RecordSize(&moved) - rs // the moved record gains its dlq headers
	if got := p.Bytes(); got != want {
		t.Fatalf("after release and move: provider bytes %d, want %d", got, want)
	}
	// Everything out again.
	l.Trim(time.Time{}, 1)
	l.Trim(time.Time{}, 1)
	l.Trim(time.Time{}, 1)
	q.DeadLetters().Trim(time.Time{}, 1)
	lt.Trim(t0.Add(time.Hour), t0.Add(time.Hour))
	ret.Delete(r.Topic)
	ss.End("dev", nil)
	ss.Log().Release([]uint64{1})
	if got := p.Bytes(); got != 0 {
		t.Fatalf("everything removed, provider still counts %d bytes", got)
	}
}

func TestFullProviderRefusesEveryOrdinaryWriteAndKeepsWhatItHolds(t *testing.T) {
	r := record(1)
	rs := store.RecordSize(&r)
	sess := store.Session{ClientID: "dev"}
	p := open(t, "", func(o *store.MemoryOptions) { o.MaxBytes, o.Reserve = 6*rs, 2*rs })
	defer p.Close()
	l, _ := p.Append("events", store.ChannelOptions{})
	for i := 0; i < 4; i++ {
		if _, err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	lt, _ := p.Latest("state", store.ChannelOptions{})
	ret, _ := p.Retained(0)
	ss, _ := p.Sessions()
	q, _ := p.Queue("jobs", store.QueueOptions{})
	for name, op := range map[string]func() error{
		"append":    func() error { _, err := l.Append(r); return err },
		"latest":    func() error { _, err := lt.Set(r); return err },
		"retained":  func() error { return ret.Set(r) },
		"session":   func() error { return ss.Put(sess) },
		"broadcast": func() error { _, err := ss.Log().Append(store.BroadcastEntry{Record: r}); return err },
		"enqueue":   func() error { _, err := q.Enqueue(r); return err },
		"hold":      func() error { return l.Hold(store.Held{ClientID: "c", PacketID: 1, Record: r}) },
	} {
		if err := op(); !errors.Is(err, store.ErrProviderFull) {
			t.Errorf("%s at a full provider: %v, want ErrProviderFull", name, err)
		}
	}
	if l.Len() != 4 || p.Bytes() != 4*rs {
		t.Fatalf("refusals changed what is held: len %d bytes %d", l.Len(), p.Bytes())
	}
}

func TestRemovedRecordIsClearedAtOnce(t *testing.T) {
	p := open(t, "")
	defer p.Close()
	al, _ := p.Append("events", store.ChannelOptions{})
	l := al.(*logStore)
	for i := 1; i <= 3; i++ {
		l.Append(record(i))
	}
	l.Trim(time.Time{}, 1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.chunks[0][0].Payload != nil || l.chunks[0][1].Payload != nil {
		t.Fatal("a removed record's payload is still reachable")
	}
}

func TestDeadLetterMovesRaceNothingWithSweepsAndReads(t *testing.T) {
	p := open(t, "")
	defer p.Close()
	q, _ := p.Queue("jobs", store.QueueOptions{DLQ: store.ChannelOptions{RetentionBytes: 1000}})
	const jobs = 200
	for i := 0; i < jobs; i++ {
		q.Enqueue(record(i))
	}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		for i := uint64(1); i <= jobs; i++ {
			if _, err := q.DeadLetter(store.Delivery{Offset: i}, "jobs/__dlq", store.ReasonExpired, t0); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < jobs; i++ {
			p.SweepBySize()
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < jobs; i++ {
			d := q.DeadLetters()
			w, err := d.ReadFrom(d.Floor(), 10, nil)
			if err != nil && !errors.Is(err, store.ErrBelowFloor) {
				t.Error(err)
				return
			}
			for j, r := range w.Records {
				if r.Offset != w.Floor+uint64(j) {
					t.Errorf("read from floor %d: record %d at offset %d", w.Floor, j, r.Offset)
				}
			}
		}
	}()
	wg.Wait()
	if q.Depth() != 0 || q.DeadLetters().Next() != jobs+1 {
		t.Fatalf("after the race: depth %d dlq next %d", q.Depth(), q.DeadLetters().Next())
	}
}

func fileWrittenAt(t *testing.T, path string) time.Time {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return store.FromUnixNanos(int64(binary.LittleEndian.Uint64(b[37:45])))
}

func TestSnapshotWritesTheManifestFirstAndTheLogBeforeTheSessions(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	tick := t0
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); tick = tick.Add(time.Millisecond); return tick }
	p := open(t, dir, func(o *store.MemoryOptions) { o.Now = clock })
	l, _ := p.Append("events", store.ChannelOptions{})
	l.Append(record(1))
	ss, _ := p.Sessions()
	ss.Put(store.Session{ClientID: "dev", Expiry: time.Hour})
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	manifest := fileWrittenAt(t, filepath.Join(dir, manifestName))
	log := fileWrittenAt(t, filepath.Join(dir, broadcastName))
	sessions := fileWrittenAt(t, filepath.Join(dir, sessionsName))
	channel := fileWrittenAt(t, filepath.Join(dir, FileName("events")))
	if !manifest.Before(log) || !log.Before(sessions) || !manifest.Before(channel) {
		t.Fatalf("write order: manifest %v, log %v, sessions %v, channel %v", manifest, log, sessions, channel)
	}
	m, err := decodeManifest(mustRead(t, filepath.Join(dir, manifestName)))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.files) != 3 {
		t.Fatalf("manifest lists %v", m.files)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A filter added or removed moves the provider's count by that filter's
// SubscriptionSize, and one with no room is refused, the session as it was.
func TestSubscribeChargesItsFilterAndIsRefusedWithoutRoom(t *testing.T) {
	p := open(t, "", func(o *store.MemoryOptions) { o.MaxBytes, o.Reserve = 20_000, 5_000 })
	ss, _ := p.Sessions()
	if err := ss.Put(store.Session{ClientID: "dev", Expiry: time.Hour}); err != nil {
		t.Fatal(err)
	}
	before := p.Bytes()
	sub := store.Subscription{Filter: "$share/g/a/b/c", ShareGroup: "g", QoS: 1}
	if err := ss.Subscribe("dev", sub, 1); err != nil {
		t.Fatal(err)
	}
	if got, want := p.Bytes()-before, store.SubscriptionSize(&sub); got != want {
		t.Fatalf("subscribe charged %d, want %d", got, want)
	}
	var err error
	n := 0
	for ; err == nil; n++ {
		err = ss.Subscribe("dev", store.Subscription{Filter: fmt.Sprintf("f/%d", n)}, 0)
	}
	if !errors.Is(err, store.ErrProviderFull) {
		t.Fatalf("subscribe past max_bytes less reserve: %v, want ErrProviderFull", err)
	}
	if got, _, _ := ss.Get("dev"); len(got.Subscriptions) != n {
		t.Fatalf("a refused subscribe was kept: %d filters, want %d", len(got.Subscriptions), n)
	}
	if _, err := ss.Unsubscribe("dev", sub.Filter); err != nil {
		t.Fatal(err)
	}
	got, _, _ := ss.Get("dev")
	if p.Bytes()-before != store.SessionSize(&got)-store.SessionSize(&store.Session{ClientID: "dev"}) {
		t.Fatalf("provider counts %d for the filters, SessionSize says %d", p.Bytes()-before,
			store.SessionSize(&got)-store.SessionSize(&store.Session{ClientID: "dev"}))
	}
}
