package memory

import (
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/store"
)

func benchProvider(b *testing.B, dir string) *Provider {
	b.Helper()
	p, err := Open(store.MemoryOptions{Name: "bench", SnapshotDir: dir, Writer: "bench", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// benchRecord is a 128-byte-payload record, the size the spec's figures use.
func benchRecord() store.Record {
	return store.Record{
		MessageID: "0190b5f0-7d3a-7000-8000-000000000001",
		Time:      time.Unix(1_700_000_000, 0),
		Topic:     "sensors/site-1/dev-42/temp",
		Payload:   make([]byte, 128),
		ClientID:  "dev-42",
		QoS:       1,
	}
}

// BenchmarkAppend is one append into a memory channel: what it allocates is
// the slot it keeps the record in (amortized slice growth), nothing else.
func BenchmarkAppend(b *testing.B) {
	p := benchProvider(b, "")
	defer p.Close()
	l, _ := p.Append("events", store.ChannelOptions{})
	r := benchRecord()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := l.Append(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendWithRetention appends into a channel kept at a size bound by
// trimming, the steady state of a long-running retained channel.
func BenchmarkAppendWithRetention(b *testing.B) {
	p := benchProvider(b, "")
	defer p.Close()
	r := benchRecord()
	size := store.RecordSize(&r)
	l, _ := p.Append("events", store.ChannelOptions{})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		l.Append(r)
		if l.Bytes() > 10_000*size {
			l.Trim(time.Time{}, 5_000*size)
		}
	}
}

func BenchmarkLowestPosition(b *testing.B) {
	for _, n := range []int{100, 1_000, 10_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			p := benchProvider(b, "")
			defer p.Close()
			l, _ := p.Append("events", store.ChannelOptions{})
			for i := 0; i < 100; i++ {
				l.Append(benchRecord())
			}
			for i := 0; i < n; i++ {
				l.SavePosition(store.Position{Reader: store.ReaderMQTT("dev-" + strconv.Itoa(i)), Offset: uint64(1 + i%100)})
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, c := l.LowestPosition(); c != n {
					b.Fatal(c)
				}
			}
		})
	}
}

func BenchmarkLatestSet(b *testing.B) {
	b.Run("new-topic", func(b *testing.B) {
		p := benchProvider(b, "")
		defer p.Close()
		l, _ := p.Latest("state", store.ChannelOptions{})
		topics := make([]string, 1<<20)
		for i := range topics {
			topics[i] = "devices/" + strconv.Itoa(i) + "/state"
		}
		r := benchRecord()
		b.ReportAllocs()
		b.ResetTimer()
		i := 0
		for b.Loop() {
			if i == len(topics) {
				b.StopTimer()
				p.Close()
				p = benchProvider(b, "")
				l, _ = p.Latest("state", store.ChannelOptions{})
				i = 0
				b.StartTimer()
			}
			r.Topic = topics[i]
			i++
			l.Set(r)
		}
	})
	b.Run("replacement", func(b *testing.B) {
		p := benchProvider(b, "")
		defer p.Close()
		l, _ := p.Latest("state", store.ChannelOptions{})
		topics := make([]string, 1000)
		for i := range topics {
			topics[i] = "devices/" + strconv.Itoa(i) + "/state"
		}
		r := benchRecord()
		for _, t := range topics {
			r.Topic = t
			l.Set(r)
		}
		b.ReportAllocs()
		b.ResetTimer()
		i := 0
		for b.Loop() {
			r.Topic = topics[i%len(topics)]
			i++
			l.Set(r)
		}
	})
}

// channelsWithRecords opens n append channels of 8 records each, with both
// retention bounds set and nothing over them (the steady state a sweep meets).
func channelsWithRecords(b *testing.B, p *Provider, n int) {
	b.Helper()
	for c := 0; c < n; c++ {
		l, err := p.Append(fmt.Sprintf("ch-%05d", c), store.ChannelOptions{RetentionBytes: 1 << 20, RetentionPeriod: 365 * 24 * time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < 8; i++ {
			l.Append(benchRecord())
		}
	}
}

func BenchmarkRetentionSweepBySize(b *testing.B) {
	for _, n := range []int{10, 100, 1_000, 10_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			p := benchProvider(b, "")
			defer p.Close()
			channelsWithRecords(b, p, n)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if removed, _ := p.SweepBySize(); removed != 0 {
					b.Fatal(removed)
				}
			}
		})
	}
}

func BenchmarkRetentionSweepByAge(b *testing.B) {
	for _, n := range []int{10, 100, 1_000, 10_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			p := benchProvider(b, "")
			defer p.Close()
			channelsWithRecords(b, p, n)
			now := time.Unix(1_700_000_100, 0)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if removed, _ := p.SweepByAge(now); removed != 0 {
					b.Fatal(removed)
				}
			}
		})
	}
}

// BenchmarkTrimOnALongChannel removes one record from the front of a long
// channel: flat in channel length.
func BenchmarkTrimOnALongChannel(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			p := benchProvider(b, "")
			defer p.Close()
			l, _ := p.Append("events", store.ChannelOptions{})
			r := benchRecord()
			size := store.RecordSize(&r)
			for i := 0; i < n; i++ {
				l.Append(r)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				l.Append(r) // keep the length
				l.Trim(time.Time{}, int64(n)*size)
			}
		})
	}
}

// BenchmarkSnapshotWrite1000Channels is a graceful stop's whole write of
// 1,000 channels of 8 records each: manifest, 1,000 files four at a time,
// directory syncs. Put TMPDIR on real storage: tmpfs makes fsync free.
func BenchmarkSnapshotWrite1000Channels(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		p := benchProvider(b, dir)
		channelsWithRecords(b, p, 1_000)
		b.StartTimer()
		if err := p.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSnapshotLoad1000Channels opens a provider and loads the 1,000
// channel files a stop wrote (read, checksum, decode, validate).
func BenchmarkSnapshotLoad1000Channels(b *testing.B) {
	dir := b.TempDir()
	p := benchProvider(b, dir)
	channelsWithRecords(b, p, 1_000)
	if err := p.Close(); err != nil {
		b.Fatal(err)
	}
	names := make([]string, 1_000)
	for c := range names {
		names[c] = fmt.Sprintf("ch-%05d", c)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p := benchProvider(b, dir)
		for _, n := range names {
			if _, err := p.Append(n, store.ChannelOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		// Discard without writing: the load is what is measured.
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		p.lock.Release()
		b.StartTimer()
	}
}

// BenchmarkSnapshotCopyUnderLock is phase 1 of a stop for one channel of
// 10,000 records: the only part that holds a store's lock.
func BenchmarkSnapshotCopyUnderLock(b *testing.B) {
	p := benchProvider(b, "")
	defer p.Close()
	l, _ := p.Append("events", store.ChannelOptions{})
	for i := 0; i < 10_000; i++ {
		l.Append(benchRecord())
	}
	ls := p.logs["events"]
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if d := ls.copyOut(); len(d.records) != 10_000 {
			b.Fatal(len(d.records))
		}
	}
}
