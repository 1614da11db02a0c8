// Package appendch is the append channel engine (RFC 0002 "append", RFC 0003
// "append"): a durable log of records at rising offsets, one position per
// durable consumer per channel, replay from a position or the channel's
// start, and live delivery in offset order - each consumer served by its own
// delivery goroutine, so no consumer can withhold another's delivery or a
// publisher's acknowledgement (invariant 16).
//
// It plugs into the broker through broker/engine and keeps its records and
// positions in the channel's store.AppendLog (one provider, the records and
// the positions that point into them together).
package appendch

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/saguin-edge/saguin/broker/channel"
	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// Options build one append channel's engine.
type Options struct {
	Name    string
	Filters []string // braces expanded
	Log     store.AppendLog
	Host    engine.Host
	// Tail: start: tail - a reader with no position is served only what
	// arrives after it subscribed. Otherwise it replays from the floor.
	Tail bool
	// OnDisk: the provider commits to disk, so a publish waits off the loop.
	OnDisk bool
	// AckCommitInterval bounds how long acknowledged progress waits to be
	// taken for writing (broker.session.ack_commit_interval).
	AckCommitInterval time.Duration
	// InFlightBytes bounds the bytes of a consumer's records in flight: half
	// of limits.session_queue_bytes (0: no bound beyond Receive Maximum).
	InFlightBytes int64
	// Limits are the header bounds a record is checked against.
	Limits channel.Limits
	// MaxBytes is the channel's max_bytes (0: none), which the store
	// enforces at the write; the engine asks it of a QoS 2 publish at its
	// PUBREC too, so a full channel holds nothing (A1.22).
	MaxBytes int64
	// OnPositionLost hears every passing positionLost counts: the reader
	// (store.ReaderMQTT), ledger.KindSession for a session its CONNECT
	// found passed (told with Session Present 0) or ledger.KindConsumer
	// for a reader passed while it read (told nothing), whether the reader
	// was told, and the position and floor (the
	// broker's record behind /v1/operations/position-lost). nil is none.
	OnPositionLost func(reader, kind string, reported bool, position, floor uint64)
	// Reaches reports how many channels a subscription filter reaches;
	// deliveries of a filter reaching more than one carry saguin-channel.
	// nil: one.
	Reaches func(filter string) int
}

// Counters are the channel's RFC 0005 series that are counts (the gauges -
// records, bytes, next, floor, consumers, lowest position - are read from
// the store and Consumers when scraped). Plain atomics: an ops package reads
// them with no lock of the engine's held.
type Counters struct {
	Published     atomic.Int64 // saguin_published_total{channel}
	PositionLost  atomic.Int64 // saguin_channel_position_lost_total{channel}
	Delivered     atomic.Int64 // this channel's part of saguin_deliveries_sent_total
	Refused       atomic.Int64 // publishes refused (counted by code by the broker)
	StorageErrors atomic.Int64
	// SharedDropped: records no member of a shared group could take
	// (saguin_session_deliveries_dropped_total{cause="no_shared_member"}).
	SharedDropped atomic.Int64
}

// Engine is one append channel.
type Engine struct {
	o     Options
	log   *slog.Logger
	clk   clock.Clock
	store store.AppendLog

	// Counters are read by the operations listener.
	Counters Counters

	// mu guards consumers and groups (the maps; each consumer has its own
	// lock, taken inside mu, never the other way round). The broker calls
	// in holding at most one session's shard lock; nothing here calls the
	// broker back.
	mu        sync.Mutex
	consumers map[string]*consumer
	// clients is the connection of each connected session that has no
	// consumer here: a SUBSCRIBE or a seek finds it when it makes one (the
	// broker calls in under the session's shard lock, where the Host's
	// lookup would take that lock again). A consumer - about 800 bytes with
	// its channels and map - is made only for a session that reads the
	// channel, not for every session at CONNECT.
	clients map[string]delivery.Client
	groups  map[string]*group
	closed  bool
	// live is a copy of consumers' values for live hand-overs (readers),
	// made again once liveStale says one was added or removed.
	live      atomic.Pointer[[]*consumer]
	liveStale atomic.Bool

	flushWake chan struct{}
	quit      chan struct{}
	wg        sync.WaitGroup
}

var (
	_ engine.Engine       = (*Engine)(nil)
	_ engine.RunPublisher = (*Engine)(nil)
)

// New builds the engine; Restore starts its position writer.
func New(o Options) *Engine {
	if o.AckCommitInterval <= 0 {
		o.AckCommitInterval = 200 * time.Millisecond
	}
	return &Engine{
		o: o, log: o.Host.Logger(), clk: clock.Or(o.Host.Clock()), store: o.Log,
		consumers: map[string]*consumer{}, clients: map[string]delivery.Client{}, groups: map[string]*group{},
		flushWake: make(chan struct{}, 1), quit: make(chan struct{}),
	}
}

func (e *Engine) Kind() delivery.Kind { return delivery.KindAppend }
func (e *Engine) Name() string        { return e.o.Name }
func (e *Engine) Filters() []string   { return e.o.Filters }

// Holder is the channel's store, which refuses a QoS 2 publish at its PUBREC
// when the channel is already at max_bytes: nothing is held for a record the
// PUBREL could not write (checklist A1.22; the channel may still fill
// before the PUBREL, which is then refused and the hold kept).
func (e *Engine) Holder() store.Holder { return roomHolder{e.store, e.o.MaxBytes} }

type roomHolder struct {
	store.AppendLog
	maxBytes int64
}

func (h roomHolder) Hold(held store.Held) error {
	if size := store.RecordSize(&held.Record); h.maxBytes > 0 && h.Bytes()+size > h.maxBytes {
		return fmt.Errorf("channel %s: %d bytes held, a %d-byte record passes max_bytes %d: %w", h.Name(), h.Bytes(), size, h.maxBytes, store.ErrChannelFull)
	}
	return h.AppendLog.Hold(held)
}

// Waits: a record on a disk provider waits for its commit.
func (e *Engine) Waits(string, *codec.Publish) bool { return e.o.OnDisk }

// Publish stores a record made from p (broker/channel.RecordOf) and answers
// its PUBACK only once the store has it; then it wakes the consumers. It
// never waits on a subscriber (invariant 16).
func (e *Engine) Publish(publisher string, p *codec.Publish) (codec.ReasonCode, string) {
	if code, why := channel.CheckHeaders(&p.Properties, e.o.Limits); code != codec.Success {
		e.Counters.Refused.Add(1)
		return code, why
	}
	r := channel.RecordOf(p, publisher, e.clk.Now())
	stored, err := e.store.Append(r)
	if err != nil {
		return e.refused(publisher, p, err)
	}
	e.Counters.Published.Add(1)
	e.deliverLive(&stored)
	return codec.Success, ""
}

// PublishRun implements engine.RunPublisher: a run of one publisher's
// publishes stored in one store call where the log takes runs
// (store.RunAppender: a sqlite provider, whose group commit then holds them
// together), each answered as Publish answers it; the consumers are woken
// once for the run.
func (e *Engine) PublishRun(publisher string, ps []*codec.Publish, codes []codec.ReasonCode, whys []string) {
	ra, ok := e.store.(store.RunAppender)
	if !ok {
		for i, p := range ps {
			codes[i], whys[i] = e.Publish(publisher, p)
		}
		return
	}
	now := e.clk.Now()
	rs := make([]store.Record, 0, len(ps))
	at := make([]int, 0, len(ps)) // ps index of each record in rs
	for i, p := range ps {
		if code, why := channel.CheckHeaders(&p.Properties, e.o.Limits); code != codec.Success {
			e.Counters.Refused.Add(1)
			codes[i], whys[i] = code, why
			continue
		}
		rs = append(rs, channel.RecordOf(p, publisher, now))
		at = append(at, i)
	}
	if len(rs) == 0 {
		return
	}
	out := make([]store.Record, len(rs))
	errs := make([]error, len(rs))
	ra.AppendRun(rs, out, errs)
	stored := 0
	for k, i := range at {
		if errs[k] != nil {
			codes[i], whys[i] = e.refused(publisher, ps[i], errs[k])
			continue
		}
		e.Counters.Published.Add(1)
		codes[i], whys[i] = codec.Success, ""
		out[stored] = out[k]
		stored++
	}
	if stored > 0 {
		e.deliverLiveRun(out[:stored])
	}
}

// refused maps a store refusal onto the PUBACK: 0x97 at the channel's or the
// provider's max_bytes, 0x83 when the storage could not keep it.
func (e *Engine) refused(publisher string, p *codec.Publish, err error) (codec.ReasonCode, string) {
	e.Counters.Refused.Add(1)
	switch {
	case errors.Is(err, store.ErrChannelFull):
		e.log.Warn("publish refused", "client_id", publisher, "topic", string(p.Topic), "code", "0x97", "why", "channel at max_bytes")
		return codec.QuotaExceeded, "channel " + e.o.Name + " is at its max_bytes"
	case errors.Is(err, store.ErrProviderFull):
		e.log.Warn("publish refused", "client_id", publisher, "topic", string(p.Topic), "code", "0x97", "why", "provider at max_bytes")
		return codec.QuotaExceeded, "channel " + e.o.Name + "'s storage provider is at its max_bytes"
	}
	e.Counters.StorageErrors.Add(1)
	e.log.Error("publish refused: the channel's storage could not keep the record", "client_id", publisher, "topic", string(p.Topic), "error", err)
	return codec.ImplementationSpecificError, "channel " + e.o.Name + "'s storage could not keep the record"
}

// Release writes a held QoS 2 publish at the channel's next offset and deletes
// the hold, in one store operation; 0x97 keeps the hold for the re-sent
// PUBREL when the channel filled meanwhile.
func (e *Engine) Release(h store.Held) (engine.Released, codec.ReasonCode, string, error) {
	r, err := e.store.ReleaseHeld(h.ClientID, h.PacketID)
	switch {
	case errors.Is(err, store.ErrChannelFull):
		return engine.Released{}, codec.QuotaExceeded, "channel " + e.o.Name + " is at its max_bytes", nil
	case err != nil:
		return engine.Released{}, 0, "", err
	}
	e.Counters.Published.Add(1)
	return engine.Released{Publisher: h.ClientID, Record: r, Live: true}, codec.Success, "", nil
}

// Released wakes the consumers for the record Release wrote.
func (e *Engine) Released(r engine.Released) {
	if r.Live {
		e.deliverLive(&r.Record)
	}
}

// Appended serves a record another writer put in this channel's log - a
// queue's dead-letter move into its derived channel - as a publish's
// would be: connected consumers read it now, shared groups are offered it.
// It counts nothing published: nobody published it (RFC 0005
// saguin_published_total{channel="<q>__dlq"} is always 0).
// The consumers are woken to read it rather than handed it: the queue's
// goroutine makes the move, and a hand-over asks the acl_file, which takes
// session locks a broker call waiting on that goroutine may hold.
func (e *Engine) Appended(r *store.Record) {
	e.pokeAll()
	e.offerGroups(unsafe.Slice(r, 1))
}

// deliverLive hands a record just stored to the consumers at it (handOver;
// the others are woken to read it from the log at their own positions) and
// offers it to the shared groups.
func (e *Engine) deliverLive(r *store.Record) { e.deliverLiveRun(unsafe.Slice(r, 1)) }

// deliverLiveRun is deliverLive for records in offset order.
func (e *Engine) deliverLiveRun(rs []store.Record) {
	e.handOver(rs)
	e.offerGroups(rs)
}

// offerGroups offers records, in offset order, to every shared group.
func (e *Engine) offerGroups(rs []store.Record) {
	e.mu.Lock()
	var gs []*group
	for _, g := range e.groups {
		gs = append(gs, g)
	}
	e.mu.Unlock()
	for _, g := range gs {
		for i := range rs {
			g.offer(e, &rs[i])
		}
	}
}

// consumerLocked is clientID's consumer, made now for a session that had
// none, with the connection Resume kept for it (as Resume would have handed
// it, under the first era). e.mu held.
func (e *Engine) consumerLocked(clientID string) *consumer {
	c := e.consumers[clientID]
	if c != nil {
		return c
	}
	c = newConsumer(clientID)
	if cl, ok := e.clients[clientID]; ok {
		delete(e.clients, clientID)
		c.client, c.era = cl, 1
	}
	e.consumers[clientID] = c
	e.liveStale.Store(true)
	return c
}

// pokeAll wakes every consumer.
func (e *Engine) pokeAll() {
	e.mu.Lock()
	for _, c := range e.consumers {
		c.poke()
	}
	e.mu.Unlock()
}

// Subscribe records one subscription of s reaching this channel before its
// SUBACK (A2.17); the consumer's goroutine serves it once the connection is
// resumed or, for a session already connected, at once.
func (e *Engine) Subscribe(s engine.Session, f engine.Filter) (codec.ReasonCode, string) {
	if f.Share != "" {
		if f.Options.NoLocal {
			return codec.ProtocolError, "No Local on a shared subscription"
		}
		e.joinGroup(s, f)
		return codec.Success, ""
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.consumerLocked(s.ClientID())
	c.mu.Lock()
	c.kept = s.Kept()
	// The declaration is the packet's, already judged by the broker; the
	// properties alias a read buffer, the parsed slice does not.
	d, _, _ := channel.ReadSubscribe(f.Properties)
	opts := f.Options
	opts.User = nil
	opts.More = false
	c.subs[f.Filter] = sub{opts: opts, multi: e.o.Reaches != nil && e.o.Reaches(f.Inner) > 1, part: d.Partition}
	// More filters of the packet follow: served once the last is recorded
	// (Arrived), one arrival (A4.6).
	c.arriving = f.Options.More && !s.Restoring()
	if !c.started {
		c.started = true
		c.start(e, f.Options.RetainHandling, s.Restoring())
	} else if f.Options.RetainHandling == 2 && c.kept && f.New && !s.Restoring() {
		// A stored position asked to begin at the head: seek -1 (A4.11).
		c.moveTo(e.store.Next())
	}
	serving, arriving := c.client != nil, c.arriving
	c.mu.Unlock()
	if arriving {
		return codec.Success, ""
	}
	if serving {
		e.runLocked(c)
	}
	c.poke()
	return codec.Success, ""
}

// Arrived implements engine.Arriver: the client's SUBSCRIBE has every
// filter recorded, and a consumer held back for it is served (A4.6).
func (e *Engine) Arrived(clientID string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.consumers[clientID]
	if c == nil {
		return
	}
	c.mu.Lock()
	serving := c.arriving && c.client != nil
	c.arriving = false
	c.mu.Unlock()
	if serving {
		e.runLocked(c)
		c.poke()
	}
}

// Unsubscribe drops the filter; a consumer with none left stops being served
// but keeps its position while its session lives.
func (e *Engine) Unsubscribe(s engine.Session, filter string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if g := e.groups[filter]; g != nil {
		g.leave(s.ClientID())
		if g.empty() {
			delete(e.groups, filter)
		}
		return
	}
	if c := e.consumers[s.ClientID()]; c != nil {
		c.mu.Lock()
		delete(c.subs, filter)
		c.mu.Unlock()
	}
}

// Resume hands the consumer its new connection. What the last connection
// left unfinished is not re-sent from the carried messages: the consumer's
// goroutine serves again from its position (the lowest unacknowledged
// offset), so every unacknowledged record goes out again, in order, under a
// new era (a reading: see docs/append.md).
func (e *Engine) Resume(s engine.Session, cl delivery.Client, _ []delivery.Unfinished) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, g := range e.groups {
		g.attach(s.ClientID(), cl)
	}
	c := e.consumers[s.ClientID()]
	if c == nil {
		// Nothing to serve: the connection is kept for the subscriptions
		// to come (consumerLocked).
		e.clients[s.ClientID()] = cl
		return
	}
	c.mu.Lock()
	c.kept = s.Kept()
	c.client = cl
	c.era++
	c.next = c.position()
	c.inflight, c.inflightBytes = c.inflight[:0], 0
	serving := len(c.subs) > 0
	c.mu.Unlock()
	if serving {
		e.runLocked(c)
	}
	c.poke()
}

// Detach: the connection is gone and the session kept. Nothing is sent until
// Resume; the position is taken for writing now.
func (e *Engine) Detach(s engine.Session) {
	e.mu.Lock()
	for _, g := range e.groups {
		g.attach(s.ClientID(), nil)
	}
	delete(e.clients, s.ClientID())
	if c := e.consumers[s.ClientID()]; c != nil {
		c.mu.Lock()
		c.client = nil
		c.mu.Unlock()
	}
	e.mu.Unlock()
	e.kickFlush()
}

// End: the session is gone for good; its position goes with it - unless
// the session ends because retention passed one of its positions at a
// CONNECT (engine.KeepsPositions) and this one was not passed: then the
// consumer keeps its place, with no subscription and no connection, for the
// session begun in its place (RFC 0003 "Sessions: one owner, one ending").
func (e *Engine) End(s engine.Session) {
	keep := false
	if k, ok := s.(engine.KeepsPositions); ok {
		keep = k.KeepsPositions()
	}
	e.mu.Lock()
	for f, g := range e.groups {
		g.leave(s.ClientID())
		if g.empty() {
			delete(e.groups, f)
		}
	}
	delete(e.clients, s.ClientID())
	c := e.consumers[s.ClientID()]
	if keep {
		if c == nil {
			// No place here in memory: a stored position, if any, is judged
			// against the floor when the new session next reads.
			e.mu.Unlock()
			return
		}
		c.mu.Lock()
		pos, floor := c.position(), e.store.Floor()
		if !c.started || !c.kept || pos >= floor {
			clear(c.subs)
			c.client = nil
			c.mu.Unlock()
			e.mu.Unlock()
			return
		}
		c.mu.Unlock()
		e.positionLostAtConnect(s.ClientID(), pos, floor)
	}
	delete(e.consumers, s.ClientID())
	e.liveStale.Store(true)
	e.mu.Unlock()
	if c != nil {
		c.mu.Lock()
		c.ended, c.client, c.dirty = true, nil, false
		c.mu.Unlock()
		c.stop()
	}
	// A position stored by this session's earlier life goes too (a session
	// begun new inherits none, A3.18), written off the caller's lock.
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		if _, err := e.store.DropPosition(store.ReaderMQTT(s.ClientID())); err != nil {
			e.Counters.StorageErrors.Add(1)
			e.log.Error("dropping an ended session's position", "client_id", s.ClientID(), "error", err)
		}
	}()
}

// Leaving implements engine.Leaver: clientID's position, if its session is
// kept and the position moved since it was last taken for writing, is
// stored now, before the DISCONNECT's connection is closed (A3.11). A
// refused write leaves it to the writer, which retries at every interval
// until it lands; the connection closes anyway.
func (e *Engine) Leaving(clientID string) {
	e.mu.Lock()
	c := e.consumers[clientID]
	e.mu.Unlock()
	if c == nil {
		return
	}
	c.mu.Lock()
	if !c.kept || !c.dirty || c.ended {
		c.mu.Unlock()
		return
	}
	pos := c.position()
	c.dirty = false
	c.mu.Unlock()
	err := e.store.SavePosition(store.Position{Reader: store.ReaderMQTT(clientID), Offset: pos,
		SessionExpiry: time.Duration(math.MaxInt64), SavedAt: e.clk.Now()})
	if err != nil {
		e.Counters.StorageErrors.Add(1)
		e.log.Error("storing a position at DISCONNECT; written again at the next interval", "client_id", clientID, "error", err)
		c.mu.Lock()
		c.dirty = true
		c.mu.Unlock()
	}
}

// LeavingWaits implements engine.Leaver: Leaving writes, and a disk
// provider's write waits, only for a kept consumer whose position moved.
func (e *Engine) LeavingWaits(clientID string) bool {
	if !e.o.OnDisk {
		return false
	}
	e.mu.Lock()
	c := e.consumers[clientID]
	e.mu.Unlock()
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kept && c.dirty && !c.ended
}

// Passed implements engine.FloorGuard: clientID's durable position here is
// below the floor (retention removed records it had not acknowledged).
func (e *Engine) Passed(clientID string) bool {
	e.mu.Lock()
	c := e.consumers[clientID]
	e.mu.Unlock()
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started && c.kept && c.position() < e.store.Floor()
}

// Ack moves a consumer's position on the acknowledgement of a delivery it
// made: QoS 1 at the PUBACK, QoS 2 at the PUBCOMP. One from an era a seek or
// a resume closed changes nothing.
func (e *Engine) Ack(s engine.Session, ref delivery.Ref, stage engine.AckStage, _ uint16) bool {
	if stage != engine.AckFinished {
		return true // nothing is stored at a PUBREC: the position moves at the PUBCOMP
	}
	e.mu.Lock()
	c := e.consumers[s.ClientID()]
	e.mu.Unlock()
	if c == nil {
		return true
	}
	c.mu.Lock()
	if ref.Attempt == c.era {
		c.acked(ref.N)
	}
	// Woken only with something left to send: a consumer caught up is
	// handed the next record by its publisher, and an acknowledgement of
	// every live delivery waking its goroutine for nothing was half the
	// goroutine wakes of a live fan-out.
	behind := c.next < e.store.Next()
	c.mu.Unlock()
	if behind {
		c.poke()
	}
	return true
}

// Restore starts the position writer. Positions themselves are read as the
// broker hands back each restored session's subscriptions (Subscribe with
// Restoring set).
func (e *Engine) Restore() error {
	e.log.Info("append channel open", "next", e.store.Next(), "floor", e.store.Floor(), "ack_commit_interval", e.o.AckCommitInterval.String())
	// A consumer stalled on a refused delivery asks again once the
	// acl_file is re-read: the grant returning is what wakes it.
	e.o.Host.OnGrantsChanged(e.pokeAll)
	e.wg.Add(1)
	go e.flusher()
	return nil
}

// Close stops every consumer's goroutine and the writer, storing every
// position that moved; nothing of the engine runs against the store after.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	cs := make([]*consumer, 0, len(e.consumers))
	for _, c := range e.consumers {
		cs = append(cs, c)
	}
	e.mu.Unlock()
	for _, c := range cs {
		c.stop()
	}
	close(e.quit)
	e.wg.Wait()
	return e.flush()
}

// Consumers is how many consumers the channel serves now
// (saguin_channel_consumers).
func (e *Engine) Consumers() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, c := range e.consumers {
		c.mu.Lock()
		if len(c.subs) > 0 {
			n++
		}
		c.mu.Unlock()
	}
	return n
}

// runLocked starts c's delivery goroutine if it is not running. e.mu held.
func (e *Engine) runLocked(c *consumer) {
	c.mu.Lock()
	if e.closed || c.running || c.stopped {
		c.mu.Unlock()
		return
	}
	c.running = true
	c.mu.Unlock()
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.serve(c)
	}()
}

func (e *Engine) kickFlush() {
	select {
	case e.flushWake <- struct{}{}:
	default:
	}
}

// flusher takes moved positions for writing every ack_commit_interval, off
// every connection's loop and every lock (A3.10), and at once on a detach.
func (e *Engine) flusher() {
	defer e.wg.Done()
	t := e.clk.NewTicker(e.o.AckCommitInterval)
	defer t.Stop()
	for {
		select {
		case <-e.quit:
			return
		case <-t.C():
		case <-e.flushWake:
		}
		if err := e.flush(); err != nil {
			e.log.Error("storing consumer positions; retried at the next interval", "error", err)
		}
	}
}

// flush stores every kept consumer's moved position.
func (e *Engine) flush() error {
	type due struct {
		c   *consumer
		pos uint64
	}
	var todo []due
	e.mu.Lock()
	for _, c := range e.consumers {
		c.mu.Lock()
		if c.kept && c.dirty {
			todo = append(todo, due{c, c.position()})
			c.dirty = false
		}
		c.mu.Unlock()
	}
	e.mu.Unlock()
	var errs []error
	for _, d := range todo {
		err := e.store.SavePosition(store.Position{Reader: store.ReaderMQTT(d.c.id), Offset: d.pos,
			SessionExpiry: time.Duration(math.MaxInt64), SavedAt: e.clk.Now()})
		if err != nil {
			e.Counters.StorageErrors.Add(1)
			d.c.mu.Lock()
			d.c.dirty = true
			d.c.mu.Unlock()
			errs = append(errs, fmt.Errorf("consumer %s: %w", d.c.id, err))
		}
	}
	return errors.Join(errs...)
}

// sub is one plain subscription of a consumer reaching this channel.
type sub struct {
	opts  delivery.SubscribeOptions
	multi bool // the filter reaches more than one channel: label saguin-channel
	// part is the SUBSCRIBE's saguin-filter slice; a record outside it is
	// stepped over like one the filter does not match (A11.18).
	part channel.Partition
}

// match is how record r is delivered to c: at the highest QoS of the
// subscriptions it matches (a withheld No Local one aside), carrying all
// their identifiers, RETAIN if any asks Retain As Published. ok is false
// when no subscription takes it: the position steps over it (A8.3).
func (c *consumer) match(r *store.Record, ids []uint32) (qos byte, rap, multi bool, out []uint32, ok bool) {
	out = ids[:0]
	for f, s := range c.subs {
		if !topic.Match(f, r.Topic) {
			continue
		}
		if s.opts.NoLocal && r.ClientID == c.id {
			continue
		}
		if !s.part.Accepts(r.Topic) {
			continue
		}
		ok = true
		qos = max(qos, min(s.opts.QoS, 2))
		rap = rap || s.opts.RetainAsPublished
		multi = multi || s.multi
		if s.opts.SubscriptionID != 0 {
			out = append(out, s.opts.SubscriptionID)
		}
	}
	slices.Sort(out)
	return qos, rap, multi, out, ok
}

// Seek moves clientID's position on this channel to what payload names
// (RFC 0003 "Moving a consumer's position: seek") and hands answer the
// outcome: the stored offset or a refusal word. The caller has checked that
// the client owns a durable session. Everything outstanding on the channel
// is discarded under a new era, so no acknowledgement from before the seek
// moves the new position; the position is stored before answer is called
// (the client awaits it), and no record from the new position is sent
// before answer has written the reply. A consumer not yet reading the
// channel starts there when it does.
func (e *Engine) Seek(clientID string, payload []byte, answer func(channel.SeekAnswer)) {
	now := e.clk.Now()
	s, err := channel.ParseSeek(payload, now)
	if err != nil {
		answer(channel.SeekAnswer{Word: channel.WordMalformed})
		return
	}
	b := channel.Bounds{Floor: e.store.Floor(), Next: e.store.Next(), Now: now, FirstAtOrAfter: e.store.FirstAtOrAfter}
	off, word, err := channel.Resolve(s, b)
	if err != nil {
		e.Counters.StorageErrors.Add(1)
		e.log.Error("a seek could not read the channel's times", "client_id", clientID, "error", err)
	}
	if word != "" {
		answer(channel.SeekAnswer{Word: word, Floor: b.Floor, Next: b.Next})
		return
	}
	e.mu.Lock()
	c := e.consumerLocked(clientID)
	c.mu.Lock()
	c.kept, c.started = true, true
	c.moveTo(off)
	// Held still until the reply is written: nothing is sent from the new
	// position, and the writer does not store it twice, meanwhile.
	c.dirty, c.paused = false, true
	c.mu.Unlock()
	e.mu.Unlock()
	err = e.store.SavePosition(store.Position{Reader: store.ReaderMQTT(clientID), Offset: off,
		SessionExpiry: time.Duration(math.MaxInt64), SavedAt: now})
	a := channel.SeekAnswer{Offset: off}
	if err != nil {
		e.Counters.StorageErrors.Add(1)
		e.log.Error("a seek's position could not be stored; written again at the next interval", "client_id", clientID, "error", err)
		a = channel.SeekAnswer{Word: channel.WordStorage}
	} else {
		e.log.Info("consumer seek", "client_id", clientID, "position", off)
	}
	c.mu.Lock()
	c.dirty = err != nil
	answer(a)
	c.paused = false
	c.mu.Unlock()
	c.poke()
}

// PartitionedConsumers counts the consumers holding a subscription here
// that declared a saguin-filter slice (saguin_channel_partitioned_consumers):
// a scrape's walk, e.mu then each consumer's lock as everywhere here.
func (e *Engine) PartitionedConsumers() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, c := range e.consumers {
		c.mu.Lock()
		for _, s := range c.subs {
			if s.part.Declared() {
				n++
				break
			}
		}
		c.mu.Unlock()
	}
	return n
}
