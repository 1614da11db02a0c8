package sqlite

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// stall parks the writer goroutine inside a read until release is called,
// so a test can queue work and then let the writer see all of it at once.
func stall(t *testing.T, p *Provider) (release func()) {
	t.Helper()
	started, gate := make(chan struct{}), make(chan struct{})
	go p.w.read(func(*conn) error {
		close(started)
		<-gate
		return nil
	})
	<-started
	return func() { close(gate) }
}

// waitQueued waits until the writer holds n publishes and m other writes.
func waitQueued(t *testing.T, p *Provider, pubs, others int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.w.mu.Lock()
		np := len(p.w.pubs)
		no := 0
		for _, q := range p.w.queues {
			no += len(q)
		}
		p.w.mu.Unlock()
		if np >= pubs && no >= others {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("writer holds %d publishes and %d writes, want %d and %d", np, no, pubs, others)
		}
		time.Sleep(time.Millisecond)
	}
}

func appendConcurrently(l store.AppendLog, n int) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = l.Append(record(i, 16))
		}()
	}
	wg.Wait()
	return errs
}

func TestCollectWithoutWaitingStoresALonePublishInATransactionOfItsOwn(t *testing.T) {
	p := mustOpen(t, testOptions(t))
	l, _ := p.Append("events", store.ChannelOptions{})
	if _, err := l.Append(record(1, 16)); err != nil {
		t.Fatal(err)
	}
	c := p.Commits()
	if c.Commit.Load() != 1 || c.CommittedRecords.Load() != 1 || c.Unbatched.Load()+c.Interval.Load()+c.Records.Load() != 0 {
		t.Fatalf("commits commit=%d records=%d", c.Commit.Load(), c.CommittedRecords.Load())
	}
}

func TestCollectWithoutWaitingGroupsWhatArrivedDuringACommitUpTo256(t *testing.T) {
	p := mustOpen(t, testOptions(t))
	l, _ := p.Append("events", store.ChannelOptions{})
	release := stall(t, p)
	done := make(chan []error)
	go func() { done <- appendConcurrently(l, 600) }()
	waitQueued(t, p, 600, 0)
	release()
	for _, err := range <-done {
		if err != nil {
			t.Fatal(err)
		}
	}
	c := p.Commits()
	if c.Commit.Load() != 3 || c.CommittedRecords.Load() != 600 {
		t.Fatalf("600 queued publishes took %d transactions (%d records), want 3: 256 + 256 + 88", c.Commit.Load(), c.CommittedRecords.Load())
	}
	if l.Next() != 601 {
		t.Fatalf("next %d", l.Next())
	}
}

func TestCommitNoneIsATransactionPerPublish(t *testing.T) {
	o := testOptions(t)
	o.CommitMode = store.CommitEach
	p := mustOpen(t, o)
	l, _ := p.Append("events", store.ChannelOptions{})
	release := stall(t, p)
	done := make(chan []error)
	go func() { done <- appendConcurrently(l, 20) }()
	waitQueued(t, p, 20, 0)
	release()
	<-done
	c := p.Commits()
	if c.Unbatched.Load() != 20 || c.CommittedRecords.Load() != 20 || c.Commit.Load() != 0 {
		t.Fatalf("unbatched %d records %d commit %d, want 20 20 0", c.Unbatched.Load(), c.CommittedRecords.Load(), c.Commit.Load())
	}
}

func TestCommitIntervalClosesOnTheRecordCountFirst(t *testing.T) {
	o := testOptions(t)
	o.CommitMode, o.PublishCommitInterval, o.PublishCommitMaxRecords = store.CommitInterval, time.Second, 4
	p := mustOpen(t, o)
	l, _ := p.Append("events", store.ChannelOptions{})
	release := stall(t, p)
	done := make(chan []error)
	go func() { done <- appendConcurrently(l, 8) }()
	waitQueued(t, p, 8, 0)
	release()
	<-done
	c := p.Commits()
	if c.Records.Load() != 2 || c.Interval.Load() != 0 || c.CommittedRecords.Load() != 8 {
		t.Fatalf("closed by records %d interval %d, %d records; want 2 0 8", c.Records.Load(), c.Interval.Load(), c.CommittedRecords.Load())
	}
}

func TestCommitIntervalClosesOnTheIntervalWhenTheCountIsNotReached(t *testing.T) {
	o := testOptions(t)
	o.CommitMode, o.PublishCommitInterval, o.PublishCommitMaxRecords = store.CommitInterval, 2*time.Millisecond, 32
	p := mustOpen(t, o)
	l, _ := p.Append("events", store.ChannelOptions{})
	if _, err := l.Append(record(1, 16)); err != nil {
		t.Fatal(err)
	}
	c := p.Commits()
	if c.Interval.Load() != 1 || c.Records.Load() != 0 {
		t.Fatalf("closed by interval %d records %d, want 1 0", c.Interval.Load(), c.Records.Load())
	}
}

func TestCommitIntervalWaitHoldsNothing(t *testing.T) {
	o := testOptions(t)
	o.ReadConnections = 0 // reads share the write connection
	o.CommitMode, o.PublishCommitInterval, o.PublishCommitMaxRecords = store.CommitInterval, time.Second, 32
	p := mustOpen(t, o)
	l, _ := p.Append("events", store.ChannelOptions{})
	published := make(chan error, 1)
	go func() {
		_, err := l.Append(record(1, 16))
		published <- err
	}()
	waitQueued(t, p, 1, 0)
	// A read on the write connection is served while the batch waits out
	// its interval: the leader opens the transaction only afterwards.
	if _, err := l.ReadFrom(1, 10, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-published:
		t.Fatal("the publish committed before its interval ran out; the read proved nothing")
	default:
	}
	if err := <-published; err != nil {
		t.Fatal(err)
	}
}

func TestARecordOverItsChannelBoundIsRefusedAloneInItsBatch(t *testing.T) {
	p := mustOpen(t, testOptions(t))
	small, _ := p.Append("small", store.ChannelOptions{MaxBytes: 10})
	big, _ := p.Append("big", store.ChannelOptions{})
	release := stall(t, p)
	var refused, stored error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _, refused = small.Append(record(1, 100)) }()
	go func() { defer wg.Done(); _, stored = big.Append(record(2, 100)) }()
	waitQueued(t, p, 2, 0)
	release()
	wg.Wait()
	if !errors.Is(refused, store.ErrChannelFull) || stored != nil {
		t.Fatalf("over-bound record: %v; its neighbour: %v", refused, stored)
	}
	if small.Next() != 1 || big.Next() != 2 || p.Commits().Commit.Load() != 1 {
		t.Fatalf("small next %d big next %d commits %d", small.Next(), big.Next(), p.Commits().Commit.Load())
	}
}

func TestWritesAClientWaitsOnGoBeforeBackgroundWrites(t *testing.T) {
	p := mustOpen(t, testOptions(t))
	release := stall(t, p)
	var mu sync.Mutex
	var order []string
	run := func(class opClass, name string, wg *sync.WaitGroup) {
		defer wg.Done()
		p.w.do(class, false, true, func(*wtx) error {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			return nil
		})
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go run(classConnected, "background", &wg)
	waitQueued(t, p, 0, 1)
	wg.Add(1)
	go run(classAnswering, "answering", &wg)
	waitQueued(t, p, 0, 2)
	release()
	wg.Wait()
	if len(order) != 2 || order[0] != "answering" {
		t.Fatalf("order %v, want the answering write first", order)
	}
}

func TestBackgroundWritesAreNotStarvedByAPublishStream(t *testing.T) {
	p := mustOpen(t, testOptions(t))
	l, _ := p.Append("events", store.ChannelOptions{})
	release := stall(t, p)
	ran := make(chan struct{})
	go p.w.do(classConnected, false, true, func(*wtx) error { close(ran); return nil })
	waitQueued(t, p, 0, 1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					l.Append(record(i, 16))
				}
			}
		}()
	}
	release()
	<-ran // a fifth turn comes round however busy the publishers keep the writer
	close(stop)
	wg.Wait()
}

func TestASharedWriteGroupRetriesWithoutTheFailedWrite(t *testing.T) {
	p := mustOpen(t, testOptions(t))
	release := stall(t, p)
	boom := errors.New("disk on fire")
	results := make([]error, 3)
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = p.w.do(classConnected, false, false, func(t *wtx) error {
				if i == 1 {
					return t.dbFail(boom)
				}
				return nil
			})
		}()
		waitQueued(t, p, 0, i+1)
	}
	release()
	wg.Wait()
	if results[0] != nil || results[2] != nil || !errors.Is(results[1], boom) {
		t.Fatalf("results %v: the failed write alone should fail", results)
	}
}

func TestAwaitedClientsQueuedWritesArePromotedAheadOfOtherDepartures(t *testing.T) {
	p := mustOpen(t, testOptions(t))
	release := stall(t, p)
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	write := func(client string, class opClass, name string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.w.doFor(client, class, false, true, func(*wtx) error {
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				return nil
			})
		}()
	}
	write("b", classDeparted, "b ends")
	waitQueued(t, p, 0, 1)
	write("a", classDeparted, "a's old connection ends")
	waitQueued(t, p, 0, 2)
	done := p.AwaitClient("a") // a's CONNECT is read
	write("a", classConnected, "a's new session")
	waitQueued(t, p, 0, 3)
	release()
	wg.Wait()
	done()
	want := []string{"a's old connection ends", "a's new session", "b ends"}
	if len(order) != 3 || order[0] != want[0] || order[1] != want[1] {
		t.Fatalf("order %q, want %q: a reconnecting client waits only behind its own id's writes", order, want)
	}
}

// The broadcast log's window is read on a read connection: a session's next
// delivery never waits for the writer, here held inside another operation.
func TestTheBroadcastLogIsReadWhileTheWriterIsBusy(t *testing.T) {
	p := mustOpen(t, testOptions(t))
	ss, err := p.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	log := ss.Log()
	e, err := log.Append(store.BroadcastEntry{Record: record(1, 16)})
	if err != nil {
		t.Fatal(err)
	}
	release := stall(t, p)
	defer release()
	got := make(chan []store.BroadcastEntry, 1)
	go func() {
		r, err := log.ReadFrom(e.Offset, 8, nil)
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	select {
	case r := <-got:
		if len(r) != 1 || r[0].Offset != e.Offset || string(r[0].Payload) != string(e.Payload) {
			t.Fatalf("read %+v, want the one appended at %d", r, e.Offset)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the broadcast log's read waited for the busy writer")
	}
}

// A run of records handed over in one call (store.RunAppender, a
// connection's window of publishes) goes in one commit at consecutive
// offsets in its order; one over the channel's bound is refused alone, its
// offset never taken.
func TestARunOfRecordsSharesOneCommitAtConsecutiveOffsets(t *testing.T) {
	p := mustOpen(t, testOptions(t))
	l, _ := p.Append("events", store.ChannelOptions{MaxBytes: 2000})
	run := make([]store.Record, 10)
	for i := range run {
		run[i] = record(i, 16)
	}
	run[4] = record(4, 4000) // past max_bytes alone
	out := make([]store.Record, len(run))
	errs := make([]error, len(run))
	l.(store.RunAppender).AppendRun(run, out, errs)
	want := uint64(1)
	for i := range run {
		if i == 4 {
			if !errors.Is(errs[i], store.ErrChannelFull) || out[i].Offset != 0 {
				t.Fatalf("record 4 past max_bytes: %v at %d, want ErrChannelFull and no offset", errs[i], out[i].Offset)
			}
			continue
		}
		if errs[i] != nil || out[i].Offset != want || out[i].MessageID != run[i].MessageID {
			t.Fatalf("record %d: %v at offset %d (%s), want offset %d", i, errs[i], out[i].Offset, out[i].MessageID, want)
		}
		want++
	}
	c := p.Commits()
	if c.Commit.Load() != 1 || c.CommittedRecords.Load() != 9 {
		t.Fatalf("%d commits of %d records, want the run's 9 in 1", c.Commit.Load(), c.CommittedRecords.Load())
	}
}
