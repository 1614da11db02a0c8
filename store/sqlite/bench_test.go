package sqlite

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// The database of every benchmark is in the test's temporary directory:
// run with TMPDIR on a real disk (on tmpfs fsync is free and the figures
// measure memory, notes-0004).

// BenchmarkPublishConcurrently is RFC 0002's table without the wire: each
// publisher appends a 128-byte record and waits for it to be committed
// before the next, under each way of committing.
func BenchmarkPublishConcurrently(b *testing.B) {
	type mode struct {
		name string
		set  func(o *store.SQLiteOptions, publishers int)
	}
	modes := []mode{
		{"none", func(o *store.SQLiteOptions, _ int) { o.CommitMode = store.CommitEach }},
		{"absent", func(o *store.SQLiteOptions, _ int) { o.CommitMode = store.CommitCollect }},
		{"interval2ms-count256", func(o *store.SQLiteOptions, _ int) {
			o.CommitMode, o.PublishCommitInterval, o.PublishCommitMaxRecords = store.CommitInterval, 2*time.Millisecond, 256
		}},
		{"interval2ms-countPublishers", func(o *store.SQLiteOptions, n int) {
			o.CommitMode, o.PublishCommitInterval, o.PublishCommitMaxRecords = store.CommitInterval, 2*time.Millisecond, max(n, 2)
		}},
	}
	for _, m := range modes {
		for _, n := range []int{1, 8, 32, 256} {
			b.Run(fmt.Sprintf("%s/publishers=%d", m.name, n), func(b *testing.B) {
				o := testOptions(b)
				m.set(&o, n)
				p := mustOpen(b, o)
				l, err := p.Append("events", store.ChannelOptions{})
				if err != nil {
					b.Fatal(err)
				}
				var left atomic.Int64
				left.Store(int64(b.N))
				b.ReportAllocs()
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for g := 0; g < n; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						r := record(g, 128)
						for left.Add(-1) >= 0 {
							if _, err := l.Append(r); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				c := p.Commits()
				commits := c.Commit.Load() + c.Unbatched.Load() + c.Interval.Load() + c.Records.Load()
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
				if commits > 0 {
					b.ReportMetric(float64(c.CommittedRecords.Load())/float64(commits), "records/commit")
				}
			})
		}
	}
}

// BenchmarkAppend is one publisher, one 128-byte record per commit: the
// cost of a commit in WAL with synchronous=NORMAL.
func BenchmarkAppend(b *testing.B) {
	p := mustOpen(b, testOptions(b))
	l, _ := p.Append("events", store.ChannelOptions{})
	r := record(1, 128)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Append(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLatestSet stores a value for a topic seen for the first time and
// replaces an existing one.
func BenchmarkLatestSet(b *testing.B) {
	for _, replace := range []bool{false, true} {
		name := "new-topic"
		if replace {
			name = "replacement"
		}
		b.Run(name, func(b *testing.B) {
			p := mustOpen(b, testOptions(b))
			l, _ := p.Latest("state", store.ChannelOptions{})
			r := record(1, 128)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if !replace {
					r.Topic = "devices/" + fmt.Sprint(i) + "/state"
				}
				if _, err := l.Set(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLowestPosition is what a metrics scrape pays per channel: the
// lowest stored position and the count, in one statement.
func BenchmarkLowestPosition(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("consumers=%d", n), func(b *testing.B) {
			p := mustOpen(b, testOptions(b))
			l, _ := p.Append("events", store.ChannelOptions{})
			l.Append(record(1, 16))
			for i := 0; i < n; i++ {
				if err := l.SavePosition(store.Position{Reader: fmt.Sprintf("bridge:%d", i), Offset: 1}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, readers := l.LowestPosition(); readers != n {
					b.Fatalf("%d readers", readers)
				}
			}
		})
	}
}

// BenchmarkRetentionSweepBySize and ByAge are one pass over channels with
// nothing over their bounds: the steady state.
func BenchmarkRetentionSweepBySize(b *testing.B) {
	benchmarkSweep(b, func(p *Provider) error { _, err := p.SweepBySize(); return err })
}

func BenchmarkRetentionSweepByAge(b *testing.B) {
	benchmarkSweep(b, func(p *Provider) error { _, err := p.SweepByAge(time.Unix(1_700_000_000, 0)); return err })
}

func benchmarkSweep(b *testing.B, sweep func(*Provider) error) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("channels=%d", n), func(b *testing.B) {
			p := mustOpen(b, testOptions(b))
			for i := 0; i < n; i++ {
				l, err := p.Append(fmt.Sprintf("c%d", i), store.ChannelOptions{RetentionPeriod: time.Hour, RetentionBytes: 1 << 20})
				if err != nil {
					b.Fatal(err)
				}
				l.Append(record(i, 128))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := sweep(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSubscribeBesideManyFilters is one SUBSCRIBE's write for a session
// already holding held filters: one row, whatever it holds. PutWholeSession
// is what a SUBSCRIBE cost when the record was rewritten whole (and what a
// session begun new still costs).
func BenchmarkSubscribeBesideManyFilters(b *testing.B) {
	for _, held := range []int{10, 1000, 10000} {
		subs := make([]store.Subscription, held)
		for i := range subs {
			subs[i] = store.Subscription{Filter: fmt.Sprintf("site/%d/sensor/+", i), QoS: 1}
		}
		b.Run(fmt.Sprintf("Subscribe/held=%d", held), func(b *testing.B) {
			ss := sessionsWith(b, subs)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if err := ss.Subscribe("dev", store.Subscription{Filter: fmt.Sprintf("new/%d", i), QoS: 1}, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("PutWholeSession/held=%d", held), func(b *testing.B) {
			ss := sessionsWith(b, subs)
			b.ResetTimer()
			for b.Loop() {
				if err := ss.Put(store.Session{ClientID: "dev", Expiry: time.Hour, Subscriptions: subs}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func sessionsWith(b *testing.B, subs []store.Subscription) store.Sessions {
	b.Helper()
	p := mustOpen(b, testOptions(b))
	b.Cleanup(func() { p.Close() })
	ss, err := p.Sessions()
	if err != nil {
		b.Fatal(err)
	}
	if err := ss.Put(store.Session{ClientID: "dev", Expiry: time.Hour, Subscriptions: subs}); err != nil {
		b.Fatal(err)
	}
	return ss
}

// BenchmarkReadFrom is a replaying consumer's read (the replay scenario's
// records: 128 bytes, no headers), 64 at a time as broker/appendch reads
// them, from a channel holding 4,096: an op is one record read.
func BenchmarkReadFrom(b *testing.B) {
	p := mustOpen(b, testOptions(b))
	l, _ := p.Append("events", store.ChannelOptions{})
	const held = 4096
	rs := make([]store.Record, 64)
	out := make([]store.Record, 64)
	errs := make([]error, 64)
	for i := range rs {
		rs[i] = record(i, 128)
		rs[i].Headers = nil
	}
	for range held / 64 {
		l.(store.RunAppender).AppendRun(rs, out, errs)
	}
	buf := make([]store.Record, 0, 64)
	b.ReportAllocs()
	b.ResetTimer()
	from := uint64(1)
	for i := 0; i < b.N; i += 64 {
		w, err := l.ReadFrom(from, 64, buf[:0])
		if err != nil || len(w.Records) == 0 {
			b.Fatal(err, len(w.Records))
		}
		from = w.Records[len(w.Records)-1].Offset + 1
		if from >= held {
			from = 1
		}
	}
}
