package ops

import (
	"bytes"
	"compress/gzip"
	"io"
	"runtime/metrics"
	"strings"
	"sync"
	"time"

	vm "github.com/VictoriaMetrics/metrics"

	"github.com/saguin-edge/saguin/broker"
	"github.com/saguin-edge/saguin/broker/queue"
	"github.com/saguin-edge/saguin/netloop"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/sqlite"
)

// sample is one series of a scrape: a family of the Catalogue, its label
// values in the family's order, and its number - an integer, or a float
// where the RFC writes one (uptime, CPU seconds, the runtime's bytes).
type sample struct {
	family int
	labels []string
	u      uint64
	f      float64
	float  bool
}

// snapshot is every number one scrape publishes, copied - atomics loaded,
// tables walked under their own locks one at a time - before any of it is
// formatted, so that formatting and compressing hold no broker lock (RFC
// 0005 "What a metric is allowed to cost").
type snapshot struct {
	samples []sample
}

var familyIndex = func() map[string]int {
	m := make(map[string]int, len(Catalogue))
	for i, f := range Catalogue {
		m[f.Name] = i
	}
	return m
}()

func (s *snapshot) add(name string, v uint64, labels ...string) {
	s.samples = append(s.samples, sample{family: familyIndex[name], labels: labels, u: v})
}

func (s *snapshot) addInt(name string, v int64, labels ...string) {
	s.add(name, uint64(max(v, 0)), labels...)
}

func (s *snapshot) addFloat(name string, v float64, labels ...string) {
	s.samples = append(s.samples, sample{family: familyIndex[name], labels: labels, f: v, float: true})
}

// Provider is one storage provider the broker runs on, for the storage
// series.
type Provider struct {
	Name, Type string
	MaxBytes   int64
	// Bytes reads what the provider holds.
	Bytes func() int64
	// Errors counts the failures the provider met on its own (its hooks).
	Errors func() uint64
	// Sessions and Retained: this provider holds broker.session.storage's
	// or broker.retained.storage's store, whose failures the broker meets.
	Sessions, Retained bool
	// Commits are a sqlite provider's group-commit counters; nil on memory.
	Commits *sqlite.CommitCounts
	// CommitMaxRecords is publish_commit_max_records as the RFC reports it:
	// 256 where the key is absent, 0 with none.
	CommitMaxRecords int
}

// Channel is one served channel, for the channel families: its names and
// the numbers its store and engine keep (RFC 0005 "Channels"). Counts is the
// store's next, floor, bytes and held count; Lowest its lowest stored
// position and how many readers hold one (append only).
type Channel struct {
	Name, Type, Filter, Provider string
	Counts                       store.Counters
	Lowest                       func() (uint64, int) // nil on latest
	Published                    func() uint64
	PositionLost                 func() uint64 // nil: none can be lost (latest)
	RetentionRemoved             func() uint64
	Superseded                   func() uint64 // latest only
	// SharedDropped counts the records no member of a shared group over
	// the channel could take: the channel's part of
	// saguin_session_deliveries_dropped_total{cause="no_shared_member"}.
	SharedDropped func() uint64
	// Partitioned counts the subscribers that declared a partition slice
	// here (saguin_channel_partitioned_consumers).
	Partitioned func() int
	// Positions are an append channel's stored positions, listed on
	// /v1/operations/consumers; nil on latest.
	Positions store.Positions
}

// Queue is one served queue, for the queue families (RFC 0005 "The
// catalogue" / Queues): its names, its store's count of unresolved jobs and
// bytes, and the engine's counters, which are atomics read with no lock of
// the engine's held.
type Queue struct {
	Name, Filter, Provider string
	Depth                  func() int
	Bytes                  func() int64
	// Jobs lists the unresolved jobs for /v1/operations/queues/<channel>
	// (store.Queue.Jobs).
	Jobs     func(max int) ([]store.ListedJob, error)
	Counters *queue.Counters
}

// Source is where a scrape reads its numbers.
type Source struct {
	BrokerID  string
	Version   string
	Started   time.Time
	Broker    *broker.Broker
	Net       *netloop.Server
	Providers []Provider
	// Channels are the channels served, in name order.
	Channels []Channel
	// Queues are the queues served, in name order.
	Queues []Queue
	// QoS2MaxInflight and MaxSessionExpiry are configured values the
	// catalogue publishes beside what they bound.
	QoS2MaxInflight  int
	MaxSessionExpiry time.Duration
}

// runtimeNames are the runtime/metrics samples the go_ series read, in the
// catalogue's order.
var runtimeNames = []struct {
	metric, family string
	integer        bool
}{
	{"/gc/heap/live:bytes", "saguin_go_heap_live_bytes", false},
	{"/gc/heap/goal:bytes", "saguin_go_heap_goal_bytes", false},
	{"/gc/cycles/total:gc-cycles", "saguin_go_gc_cycles_total", true},
	{"/cpu/classes/gc/total:cpu-seconds", "saguin_go_gc_cpu_seconds_total", false},
	{"/cpu/classes/gc/mark/assist:cpu-seconds", "saguin_go_gc_assist_cpu_seconds_total", false},
	{"/memory/classes/heap/stacks:bytes", "saguin_go_stack_bytes", true},
	{"/gc/heap/allocs:bytes", "saguin_go_allocated_bytes_total", false},
	{"/gc/heap/allocs:objects", "saguin_go_allocated_objects_total", true},
	{"/gc/gogc:percent", "saguin_go_gogc_percent", true},
	{"/gc/gomemlimit:bytes", "saguin_go_memory_limit_bytes", false},
}

// collect copies every number of the catalogue the broker has today. The
// bridge families are absent until their engines keep
// their counters (docs/operations.md "Readings chosen").
func (src *Source) collect(now time.Time) *snapshot {
	s := &snapshot{samples: make([]sample, 0, 128)}
	bc := src.Broker.Counters()
	nc := src.Net.Counters()
	census := src.Broker.Census()
	v311, v5 := src.Net.ConnectedByProtocol()

	s.add("saguin_build_info", 1, src.Version, src.BrokerID)
	s.addFloat("saguin_uptime_seconds", now.Sub(src.Started).Seconds())
	s.addInt("saguin_connections", nc.Connections.Load())
	s.add("saguin_connections_by_protocol", uint64(v5), "5")
	s.add("saguin_connections_by_protocol", uint64(v311), "3.1.1")
	s.add("saguin_connections_total", nc.ConnectionsTotal.Load())
	s.add("saguin_sessions_offline", uint64(census.SessionsOffline))
	for c := broker.WillImmediate; c <= broker.WillStart; c++ {
		if n := bc.WillsPublished[c].Load(); n > 0 {
			s.add("saguin_wills_published_total", n, c.String())
		}
	}
	s.add("saguin_wills_cancelled_total", bc.WillsCancelled.Load())
	s.add("saguin_wills_waiting", uint64(census.WillsWaiting))
	s.add("saguin_sessions_restored_total", bc.SessionsRestored.Load())
	s.add("saguin_sessions_dropped_total", bc.SessionsDroppedStorageFull.Load(), "storage_full")
	s.add("saguin_sessions_dropped_total", bc.SessionsExpiredWhileStopped.Load(), "expired_while_stopped")
	s.add("saguin_sessions_dropped_total", bc.SessionsDroppedSubscriptionRefused.Load(), "subscription_refused")
	s.addInt("saguin_session_queue_messages", bc.LogMessages.Load())
	s.addInt("saguin_session_queue_bytes", bc.LogBytes.Load())
	s.add("saguin_retained_messages", uint64(max(src.Broker.RetainedMessages(), 0)))
	s.addInt("saguin_qos2_held", bc.QoS2Held.Load())
	s.add("saguin_qos2_abandoned_total", bc.QoS2Abandoned.Load())
	s.add("saguin_qos2_max_inflight_per_client", uint64(max(src.QoS2MaxInflight, 0)))
	s.addInt("saguin_subscriptions", bc.Subscriptions.Load())
	s.add("saguin_session_expiry_shortened_total", nc.SessionExpiryShortened.Load()+bc.SessionExpiryShortened.Load())
	s.add("saguin_max_session_expiry_seconds", uint64(src.MaxSessionExpiry/time.Second))

	s.add("saguin_bytes_received_total", nc.BytesReceived.Load())
	s.add("saguin_bytes_sent_total", nc.BytesSent.Load())
	s.add("saguin_publishes_received_total", nc.PublishesReceived.Load())
	s.add("saguin_deliveries_sent_total", nc.DeliveriesSent.Load())
	s.add("saguin_deliveries_refused_total", 0)

	for _, ch := range src.Channels {
		s.add("saguin_published_total", ch.Published(), ch.Name)
	}
	for _, q := range src.Queues {
		s.add("saguin_published_total", q.Counters.Published.Load(), q.Name)
	}
	s.add("saguin_published_total", bc.BroadcastPublished.Load(), "broadcast")
	reasons := func(name string, rc *delivery.ReasonCounts) {
		rc.Each(func(r delivery.Reason, n uint64) { s.add(name, n, r.String()) })
	}
	reasons("saguin_connections_refused_total", &nc.ConnectionsRefused)
	reasons("saguin_publish_refused_total", &bc.PublishRefused)
	reasons("saguin_subscriptions_refused_total", &nc.SubscriptionsRefused)
	s.add("saguin_broadcast_unmatched_total", bc.BroadcastUnmatched.Load())
	s.add("saguin_deliveries_dropped_total", nc.DeliveriesDropped.Load())
	s.add("saguin_deliveries_expired_total", bc.DeliveriesExpired.Load()+nc.DeliveriesExpired.Load())
	s.add("saguin_shares_held_total", bc.SharesHeld.Load())
	s.add("saguin_shares_drained_total", bc.SharesDrained.Load())
	s.add("saguin_shares_dropped_total", bc.SharesDroppedBacklogFull.Load(), "backlog_full")
	s.add("saguin_shares_dropped_total", bc.SharesDroppedNoMemberLeft.Load(), "no_member_left")
	s.add("saguin_shares_dropped_total", bc.SharesDroppedExpired.Load(), "expired")
	s.add("saguin_shares_dropped_total", bc.SharesDroppedStorageFull.Load(), "storage_full")
	s.add("saguin_shares_dropped_total", bc.SharesDroppedMemberEnded.Load(), "member_ended")
	s.add("saguin_shares_dropped_total", 0, "not_authorized")
	s.add("saguin_session_deliveries_dropped_total", bc.DeliveriesDroppedStorageFull.Load(), "storage_full")
	s.add("saguin_session_deliveries_dropped_total", bc.DeliveriesDroppedQueue.Load()+nc.DeliveriesDroppedQueue.Load(), "session_queue_full")
	s.add("saguin_session_deliveries_dropped_total", bc.SharesDroppedNoMember.Load()+src.sharedDropped(), "no_shared_member")
	s.add("saguin_session_deliveries_dropped_total", 0, "packet_ids_exhausted")
	s.add("saguin_session_deliveries_dropped_total", nc.DeliveriesTooLarge.Load(), "too_large")

	src.collectChannels(s)
	src.collectQueues(s)
	for _, p := range src.Providers {
		s.add("saguin_provider_info", 1, p.Name, p.Type)
	}
	for _, p := range src.Providers {
		s.addInt("saguin_provider_bytes", p.Bytes(), p.Name)
	}
	for _, p := range src.Providers {
		s.addInt("saguin_provider_max_bytes", p.MaxBytes, p.Name)
	}
	for _, p := range src.Providers {
		n := p.Errors()
		if p.Sessions {
			n += bc.SessionStorageErrors.Load()
		}
		if p.Retained {
			n += bc.RetainedStorageErrors.Load()
		}
		if n > 0 {
			s.add("saguin_storage_errors_total", n, p.Name)
		}
	}
	for _, p := range src.Providers {
		if c := p.Commits; c != nil {
			s.add("saguin_storage_commits_total", c.Records.Load(), p.Name, "records")
			s.add("saguin_storage_commits_total", c.Interval.Load(), p.Name, "interval")
			s.add("saguin_storage_commits_total", c.Commit.Load(), p.Name, "commit")
			s.add("saguin_storage_commits_total", c.Unbatched.Load(), p.Name, "unbatched")
		}
	}
	for _, p := range src.Providers {
		if c := p.Commits; c != nil {
			s.add("saguin_storage_committed_records_total", c.CommittedRecords.Load(), p.Name)
		}
	}
	for _, p := range src.Providers {
		if p.Commits != nil {
			s.add("saguin_provider_publish_commit_max_records", uint64(max(p.CommitMaxRecords, 0)), p.Name)
		}
	}

	rs := make([]metrics.Sample, len(runtimeNames))
	for i, n := range runtimeNames {
		rs[i].Name = n.metric
	}
	metrics.Read(rs)
	for i, n := range runtimeNames {
		switch v := rs[i].Value; v.Kind() {
		case metrics.KindUint64:
			// Counts print as integers; byte figures in %g, as the RFC's
			// sample scrape shows them.
			switch {
			case n.family == "saguin_go_gogc_percent" && int64(v.Uint64()) < 0:
				// GOGC=off is stored as -1 in an unsigned sample.
				s.addFloat(n.family, float64(int64(v.Uint64())))
			case n.integer:
				s.add(n.family, v.Uint64())
			default:
				s.addFloat(n.family, float64(v.Uint64()))
			}
		case metrics.KindFloat64:
			s.addFloat(n.family, v.Float64())
		}
	}
	return s
}

// collectChannels copies the channel families: each number is a field the
// store or engine keeps, and the lowest position is computed every time
// (never cached: a cached minimum would not rise as consumers catch up).
// A series exists only where the number does: offsets and bytes on append,
// records on both, the lowest position while somebody holds one, the
// superseded count on latest (RFC 0005 "Channels").
// sharedDropped is what the channels' shared groups dropped with no member
// to take it: a group over a channel is served by the channel's engine, not
// broadcast's, and counts there.
func (src *Source) sharedDropped() uint64 {
	var n uint64
	for _, ch := range src.Channels {
		if ch.SharedDropped != nil {
			n += ch.SharedDropped()
		}
	}
	return n
}

func (src *Source) collectChannels(s *snapshot) {
	for _, ch := range src.Channels {
		s.add("saguin_channel_info", 1, ch.Name, ch.Filter, ch.Type, ch.Provider)
		c := ch.Counts
		if ch.Type == "append" {
			next, floor := c.Next(), c.Floor()
			s.add("saguin_channel_records", next-min(floor, next), ch.Name)
			s.addInt("saguin_channel_bytes", c.Bytes(), ch.Name)
			s.add("saguin_channel_next_offset", next, ch.Name)
			s.add("saguin_channel_floor_offset", floor, ch.Name)
		} else {
			s.add("saguin_channel_records", uint64(max(c.Len(), 0)), ch.Name)
		}
		s.add("saguin_channel_retention_removed_total", ch.RetentionRemoved(), ch.Name)
		if ch.Lowest != nil {
			lowest, readers := ch.Lowest()
			if readers > 0 {
				s.add("saguin_channel_consumer_position_min", lowest, ch.Name)
			}
			s.add("saguin_channel_consumers", uint64(readers), ch.Name)
		}
		if ch.Partitioned != nil {
			s.add("saguin_channel_partitioned_consumers", uint64(max(ch.Partitioned(), 0)), ch.Name)
		}
		var lost uint64
		if ch.PositionLost != nil {
			lost = ch.PositionLost()
		}
		s.add("saguin_channel_position_lost_total", lost, ch.Name)
		if ch.Superseded != nil {
			s.add("saguin_latest_superseded_total", ch.Superseded(), ch.Name)
		}
	}
}

// collectQueues copies the queue families from each engine's counters and
// its store's depth; a queue also has its channel_info and bytes, and no
// records, offsets or consumers (RFC 0005 "Channels": a queue carries
// saguin_queue_depth instead). The numbers are copied here, so formatting
// holds nothing of the engine's.
func (src *Source) collectQueues(s *snapshot) {
	for _, q := range src.Queues {
		c := q.Counters
		s.add("saguin_channel_info", 1, q.Name, q.Filter, "queue", q.Provider)
		s.addInt("saguin_channel_bytes", q.Bytes(), q.Name)
		s.add("saguin_queue_depth", uint64(max(q.Depth(), 0)), q.Name)
		s.add("saguin_queue_inflight", uint64(max(c.Inflight.Load(), 0)), q.Name)
		s.add("saguin_queue_delivered_total", c.Delivered.Load(), q.Name)
		s.add("saguin_queue_acknowledged_total", c.Acknowledged.Load(), q.Name)
		s.add("saguin_queue_returned_total", c.Returned.Load(), q.Name)
		s.add("saguin_queue_redelivered_total", c.Redelivered.Load(), q.Name)
		s.add("saguin_queue_dead_lettered_total", c.DeadLettered.Load(), q.Name)
		s.add("saguin_queue_expired_total", c.Expired.Load(), q.Name)
		s.add("saguin_queue_retain_ignored_total", c.RetainIgnored.Load(), q.Name)
		// A queue is never trimmed (invariant 2) and keeps no positions, so
		// both are 0 - a series all the same, as the RFC's example scrape
		// has for its queue, so one rule covers every channel.
		// saguin-filter on a queue's form is refused (checklist C2.9), so
		// nobody partitions a queue.
		s.add("saguin_channel_partitioned_consumers", 0, q.Name)
		s.add("saguin_channel_retention_removed_total", 0, q.Name)
		s.add("saguin_channel_position_lost_total", 0, q.Name)
	}
}

// write formats a snapshot in the Prometheus text exposition format, the
// families in catalogue order, each family's HELP and TYPE once before its
// first series; a family with no series is left out whole.
func (s *snapshot) write(w io.Writer) {
	byFamily := make([][]int, len(Catalogue))
	for i, x := range s.samples {
		byFamily[x.family] = append(byFamily[x.family], i)
	}
	var name strings.Builder
	for fi, idx := range byFamily {
		if len(idx) == 0 {
			continue
		}
		f := &Catalogue[fi]
		io.WriteString(w, "# HELP "+f.Name+" "+f.Help+"\n# TYPE "+f.Name+" "+f.Type+"\n")
		for _, i := range idx {
			x := &s.samples[i]
			name.Reset()
			name.WriteString(f.Name)
			if len(f.Labels) > 0 {
				name.WriteByte('{')
				for j, l := range f.Labels {
					if j > 0 {
						name.WriteByte(',')
					}
					name.WriteString(l)
					name.WriteString(`="`)
					writeLabelValue(&name, x.labels[j])
					name.WriteByte('"')
				}
				name.WriteByte('}')
			}
			switch {
			case x.float && f.Type == "counter":
				vm.WriteCounterFloat64(w, name.String(), x.f)
			case x.float:
				vm.WriteGaugeFloat64(w, name.String(), x.f)
			case f.Type == "counter":
				vm.WriteCounterUint64(w, name.String(), x.u)
			default:
				vm.WriteGaugeUint64(w, name.String(), x.u)
			}
		}
	}
}

// writeLabelValue escapes a label value as the exposition format requires:
// backslash, double quote and line feed.
func writeLabelValue(b *strings.Builder, v string) {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteByte(c)
		}
	}
}

// scrape is one computation of the catalogue, in both encodings, so that an
// early scrape asking for either is answered from it (GAP-20).
type scrape struct {
	at        time.Time
	plain, gz []byte
}

// scraper keeps the latest computation and recomputes it at most once per
// min_scrape_interval, however many scrapers ask (RFC 0005 "The observer
// does not set the cost"). The gzip encoding is made the first time a
// scraper asks for it and kept with the computation.
type scraper struct {
	src      *Source
	interval time.Duration
	now      func() time.Time

	mu   sync.Mutex // one computation at a time; never a broker lock
	last *scrape
	// zw is reused across computations: a new gzip writer costs a megabyte
	// of tables, more than the scrape it compresses.
	zw *gzip.Writer
}

// get returns the computation to answer with: the previous one while it is
// younger than the interval, a new one otherwise.
func (sc *scraper) get(wantGzip bool) *scrape {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	now := sc.now()
	if sc.last == nil || now.Sub(sc.last.at) >= sc.interval || now.Before(sc.last.at) {
		snap := sc.src.collect(now)
		var buf bytes.Buffer
		snap.write(&buf)
		sc.last = &scrape{at: now, plain: buf.Bytes()}
	}
	if wantGzip && sc.last.gz == nil {
		var buf bytes.Buffer
		if sc.zw == nil {
			sc.zw, _ = gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		} else {
			sc.zw.Reset(&buf)
		}
		sc.zw.Write(sc.last.plain)
		sc.zw.Close()
		sc.last.gz = buf.Bytes()
	}
	return sc.last
}
