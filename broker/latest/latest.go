// Package latest is the engine of a latest channel (RFC 0002 "latest",
// notes-0003 "`latest`"): one current value per topic in a store.Latest, each
// value and each deletion at a new offset of the channel's one counter; a
// subscriber is sent the current state with RETAIN, then every change without
// it; a session that comes back is sent only what changed while it was away;
// one value can be read without subscribing (the point read).
//
// The publisher waits only on the store (invariant 16). Each session reading
// the channel has one delivery routine (reader.run) that alone writes to its
// connection, within the client's Receive Maximum and half of
// limits.session_queue_bytes; what does not fit waits in the session's reader,
// at most one value per topic, a newer value replacing a waiting older one
// (counted as superseded).
//
// Time - retention_period, deletion_retention_period, the receipt time of a
// value - comes from the host's clock only.
package latest

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saguin-edge/saguin/broker/acl"
	"github.com/saguin-edge/saguin/broker/channel"
	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// Builder makes the PUBLISH a channel delivers a record as, with Sagüin's
// labels (saguin-id, -offset, -timestamp, -expires, -channel): broker/channel's
// Out. The PUBLISH aliases the builder's buffers until its next Build.
type Builder interface {
	// Build labels r for a connection of protocol version; label is the
	// saguin-channel value, "" for none.
	Build(r *store.Record, version, qos uint8, retainAsPublished bool, label string, now time.Time) *codec.Publish
}

// outBuilder is broker/channel's Out as a Builder.
type outBuilder struct{ o channel.Out }

func (b *outBuilder) Build(r *store.Record, version, qos uint8, rap bool, label string, now time.Time) *codec.Publish {
	return b.o.Build(r, channel.Label{Version: version, QoS: qos, RetainAsPublished: rap, Channel: label}, now)
}

// Config is one latest channel as the configuration names it.
type Config struct {
	Name    string
	Filters []string
	Store   store.Latest
	// RetentionPeriod: a value set longer ago is never served and the
	// sweep removes it (0: none). DeletionRetentionPeriod is a tombstone's.
	RetentionPeriod         time.Duration
	DeletionRetentionPeriod time.Duration
	// SessionQueueBytes is limits.session_queue_bytes: a reader keeps at
	// most half of it in flight (RFC 0002 "How much a session may hold").
	SessionQueueBytes int64
	// Disk: the store waits on a disk commit (sqlite), so a publish leaves
	// the connection's loop.
	Disk bool
	// Record makes the record a publish becomes; nil is broker/channel's
	// RecordOf.
	Record func(p *codec.Publish, publisher string, now time.Time) store.Record
	// NewBuilder gives each delivery routine its own Builder; nil is
	// broker/channel's Out.
	NewBuilder func() Builder
	// ShareExpiresAfter is broker.share.expires_after: how long a shared
	// group holds a change for a member to come back (0: as long as a
	// member's session lasts).
	ShareExpiresAfter time.Duration
	// Reaches counts the channels (queues aside) a subscription filter
	// reaches: above one, deliveries carry saguin-channel (checklist E5).
	// nil: never.
	Reaches func(filter string) int
}

// Counters are the channel's RFC 0005 series and what operations reads,
// plain atomics read with no lock held (checklist D9).
type Counters struct {
	Published     atomic.Uint64 // saguin_published_total{channel}
	Superseded    atomic.Uint64 // saguin_latest_superseded_total{channel}
	Delivered     atomic.Uint64 // deliveries handed to connections (saguin_deliveries_sent_total's share)
	Undelivered   atomic.Uint64 // values refused by a subscriber's Maximum Packet Size
	Expired       atomic.Uint64 // values let go unsent, past retention_period while waiting
	PointReads    atomic.Uint64 // $saguin/kv/get answered
	StorageError  atomic.Uint64 // a store call failed
	SharedDropped atomic.Uint64 // a change for a shared group with no member connected and nothing held (no_shared_member)
	// SharedBacklogFull: a change a shared group held, let go at
	// session_queue_bytes (backlog_full); SharedExpired: one held past
	// broker.share.expires_after.
	SharedBacklogFull atomic.Uint64
	SharedExpired     atomic.Uint64
}

// Engine serves one latest channel (engine.Engine).
type Engine struct {
	cfg  Config
	host engine.Host
	clk  clock.Clock
	log  *slog.Logger
	st   store.Latest

	counters Counters

	// mu guards readers, groups and the write window below; taken under a
	// shard lock, and above every reader's mu.
	mu      sync.Mutex
	readers map[string]*reader // by client id
	groups  map[string]*group  // by the whole $share/<g>/<filter>
	// writing counts publishes between their store call and their fan-out;
	// writeLow is the channel's Next before the first of them, a bound below
	// any offset they may get: a session detaching meanwhile is marked below
	// it, so a value stored but not yet fanned out is not stepped over.
	writing  int
	writeLow uint64

	closed atomic.Bool
}

var _ engine.Engine = (*Engine)(nil)

// New builds the engine of cfg on host.
func New(cfg Config, host engine.Host) (*Engine, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("latest channel %s: no store", cfg.Name)
	}
	if cfg.Record == nil {
		cfg.Record = channel.RecordOf
	}
	if cfg.NewBuilder == nil {
		cfg.NewBuilder = func() Builder { return new(outBuilder) }
	}
	if len(cfg.Filters) == 0 {
		return nil, fmt.Errorf("latest channel %s: no filter", cfg.Name)
	}
	return &Engine{
		cfg: cfg, host: host, clk: clock.Or(host.Clock()), log: host.Logger(), st: cfg.Store,
		readers: map[string]*reader{}, groups: map[string]*group{},
	}, nil
}

// Kind implements engine.Engine.
func (e *Engine) Kind() delivery.Kind { return delivery.KindLatest }

// Name implements engine.Engine.
func (e *Engine) Name() string { return e.cfg.Name }

// Filters implements engine.Engine.
func (e *Engine) Filters() []string { return e.cfg.Filters }

// Counters are the channel's counters, for ops.
func (e *Engine) Counters() *Counters { return &e.counters }

// Records is saguin_channel_records{channel}: topics holding a value,
// tombstones included.
func (e *Engine) Records() int { return e.st.Len() }

// Holder implements engine.Engine: a QoS 2 publish waits in the channel's
// own store.
func (e *Engine) Holder() store.Holder { return e.st }

// Waits implements engine.Engine.
func (e *Engine) Waits(string, *codec.Publish) bool { return e.cfg.Disk }

// Publish implements engine.Engine: B1. A zero-length payload deletes the
// topic's value (a tombstone at its own offset); deleting a topic that holds
// none stores nothing and is still answered 0x00.
func (e *Engine) Publish(publisher string, p *codec.Publish) (codec.ReasonCode, string) {
	if len(p.Payload) == 0 && !e.host.Allows(publisher, string(p.Topic), acl.Delete) {
		// Removing a key is its own verb (checklist B1.8, E21).
		return codec.NotAuthorized, "the acl_file grants this client no delete on the topic"
	}
	r := e.cfg.Record(p, publisher, e.clk.Now())
	low := e.beginWrite()
	v, ok, err := e.write(r)
	if err != nil {
		e.endWrite(low, store.Value{}, false)
		return e.refuse(err)
	}
	e.endWrite(low, v, ok)
	return codec.Success, ""
}

// write stores r: a value, or a deletion for an empty payload. ok is false
// when nothing was stored (a deletion of nothing).
func (e *Engine) write(r store.Record) (store.Value, bool, error) {
	if len(r.Payload) == 0 {
		r.Payload = nil
		v, ok, err := e.st.Delete(r)
		if err != nil {
			return store.Value{}, false, fmt.Errorf("latest channel %s: deleting %q: %w", e.cfg.Name, r.Topic, err)
		}
		return v, ok, nil
	}
	w, err := e.st.Set(r)
	if err != nil {
		return store.Value{}, false, fmt.Errorf("latest channel %s: setting %q: %w", e.cfg.Name, r.Topic, err)
	}
	return store.Value{Record: w}, true, nil
}

// refuse answers a store failure: no room is 0x97, anything else 0x80.
func (e *Engine) refuse(err error) (codec.ReasonCode, string) {
	if errors.Is(err, store.ErrProviderFull) || errors.Is(err, store.ErrChannelFull) {
		return codec.QuotaExceeded, "the channel's storage provider is full"
	}
	e.counters.StorageError.Add(1)
	e.log.Error("latest channel write failed", "error", err)
	return codec.UnspecifiedError, "storage failed"
}

// beginWrite opens a write's window (see Engine.writing).
func (e *Engine) beginWrite() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.writing == 0 {
		e.writeLow = e.st.Next()
	}
	e.writing++
	return e.writeLow
}

// endWrite fans a stored value out and closes its window.
func (e *Engine) endWrite(_ uint64, v store.Value, stored bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.writing--
	if !stored {
		return
	}
	e.counters.Published.Add(1)
	e.fanOut(v)
}

// Release implements engine.Engine: the held publish becomes the topic's
// value (or its deletion) in one store operation.
func (e *Engine) Release(h store.Held) (engine.Released, codec.ReasonCode, string, error) {
	low := e.beginWrite()
	r, err := e.st.ReleaseHeld(h.ClientID, h.PacketID)
	if err != nil {
		e.endWrite(low, store.Value{}, false)
		if errors.Is(err, store.ErrNotFound) {
			return engine.Released{}, codec.Success, "", err
		}
		code, why := e.refuse(err)
		return engine.Released{}, code, why, err
	}
	// Fanned out here rather than in Released: the write window must close
	// with the value handed to every connected reader.
	e.endWrite(low, store.Value{Record: r, Deleted: len(r.Payload) == 0}, r.Offset != 0)
	return engine.Released{Publisher: h.ClientID, Record: r}, codec.Success, "", nil
}

// Released implements engine.Engine: Release fanned the value out already.
func (e *Engine) Released(engine.Released) {}

// expired: v is past its channel's period at now and is never served
// (notes-0003 "Every value says when it was set"). A value with no time is
// never too old.
func (e *Engine) expired(v *store.Value, now time.Time) bool {
	if v.Time.IsZero() {
		return false
	}
	period := e.cfg.RetentionPeriod
	if v.Deleted {
		period = e.cfg.DeletionRetentionPeriod
	}
	return period > 0 && now.Sub(v.Time) >= period
}

// Get is the point read (B8) once the front has judged the request: the
// topic's current value, ok false for none (never set, deleted, or past
// retention_period - the same answer).
func (e *Engine) Get(t string) (store.Value, bool, error) {
	v, ok, err := e.st.Get(t)
	if err != nil {
		e.counters.StorageError.Add(1)
		return store.Value{}, false, fmt.Errorf("latest channel %s: reading %q: %w", e.cfg.Name, t, err)
	}
	e.counters.PointReads.Add(1)
	if !ok || v.Deleted || e.expired(&v, e.clk.Now()) {
		return store.Value{}, false, nil
	}
	return v, true, nil
}

// Owns reports whether t is a topic of this channel's filters (not whether
// the channel holds it most exactly: the router decides that).
func (e *Engine) Owns(t string) bool {
	for _, f := range e.cfg.Filters {
		if topic.Match(f, t) {
			return true
		}
	}
	return false
}

// Restore implements engine.Engine: the startup line of values whose topics
// the filters no longer match (B7.3). Marks are in memory only, so every
// session restored gets the full state at its resume (B5.7).
func (e *Engine) Restore() error {
	var buf []store.Value
	var from uint64
	stray := 0
	for {
		vs, err := e.st.Changes(from, true, nil, 1024, buf[:0])
		if err != nil {
			return fmt.Errorf("latest channel %s: reading its values: %w", e.cfg.Name, err)
		}
		for i := range vs {
			if !e.Owns(vs[i].Topic) {
				stray++
			}
			from = vs[i].Offset + 1
		}
		if len(vs) < 1024 {
			break
		}
		buf = vs
	}
	if stray > 0 {
		e.log.Warn("latest channel holds values its filter no longer matches (unreachable until the filter matches again)", "values", stray)
	}
	// A value refused by the acl_file is sent once a re-read grants it
	// back, not only at the next resume (RFC 0002 "What a refused client
	// sees": the grant coming back is itself what wakes the subscriber).
	e.host.OnGrantsChanged(e.retryMissed)
	return nil
}

// retryMissed runs after each re-read of the acl_file: every connected
// reader holding a value it could not be sent (its missed mark) walks the
// store again from that mark. The walk keeps the reader's generation, so a
// value it was handed since is not handed again; one still refused is
// logged again and stays below the mark. The mark itself is kept until a
// new SUBSCRIBE, as at a resume (B5.5).
func (e *Engine) retryMissed() {
	e.mu.Lock()
	rs := make([]*reader, 0, len(e.readers))
	for _, r := range e.readers {
		rs = append(rs, r)
	}
	e.mu.Unlock()
	for _, r := range rs {
		r.mu.Lock()
		if !r.away && r.missed != 0 && len(r.subs) > 0 {
			r.passes = append(r.passes, &pass{from: r.missed, upto: e.st.Next(), match: r.matcher(), gen: r.gen})
			r.startLocked()
		}
		r.mu.Unlock()
	}
}

// Close implements engine.Engine: every delivery routine is told to stop;
// nothing of the engine's is stored beyond the values (marks are memory).
func (e *Engine) Close() error {
	e.closed.Store(true)
	e.mu.Lock()
	rs := make([]*reader, 0, len(e.readers))
	for _, r := range e.readers {
		rs = append(rs, r)
	}
	e.mu.Unlock()
	for _, r := range rs {
		r.mu.Lock()
		r.era++
		r.mu.Unlock()
		r.poke()
	}
	return nil
}

// PartitionedConsumers counts the readers holding a subscription here that
// declared a saguin-filter slice (saguin_channel_partitioned_consumers): a
// scrape's walk, e.mu then each reader's lock as everywhere here.
func (e *Engine) PartitionedConsumers() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, r := range e.readers {
		r.mu.Lock()
		for _, s := range r.subs {
			if s.accept != nil {
				n++
				break
			}
		}
		r.mu.Unlock()
	}
	return n
}
