package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/saguin-edge/saguin/broker/acl"
	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// routes says which engine serves a topic (RFC 0002 "Which channel a topic
// belongs to"): the channel whose filter holds it most exactly, or, for a
// topic no channel claims, broadcast. Engines are plugged before Restore and
// the table is fixed from then on, so a publish reads it with one atomic
// load and no lock; with no channel plugged that load is all the broadcast
// path pays.
type routes struct {
	// mu orders Plug against Restore's sealing (LOCKS.md row 0).
	mu     sync.Mutex
	sealed bool
	// table is nil while no channel is plugged; replaced whole by Plug.
	table atomic.Pointer[topic.Table[engine.Engine]]
	// channels are the plugged engines, in plugging order; byName finds
	// one by the channel an acknowledgement's Ref names (replaced whole too).
	channels atomic.Pointer[[]engine.Engine]
	byName   atomic.Pointer[map[string]engine.Engine]
	// broadcast serves every topic no channel claims; all is it, then the
	// channels in plugging order (replaced whole by Plug).
	broadcast engine.Engine
	all       atomic.Pointer[[]engine.Engine]
	// watchers are the plugged engines told of a reopened window
	// (engine.RoomWatcher), nil for none (replaced whole by Plug).
	watchers atomic.Pointer[[]engine.RoomWatcher]
}

// init gives the routes the broadcast engine, before any other use.
func (r *routes) init(broadcast engine.Engine) {
	r.broadcast = broadcast
	r.all.Store(&[]engine.Engine{broadcast})
}

// ErrPlugged refuses a Plug after Restore, or of a filter another engine
// holds already.
var ErrPlugged = errors.New("broker: engine not plugged")

// Plug adds a channel engine serving every topic its filters hold most
// exactly. Refused after Restore (the table is what every session was
// restored against) and on a filter another engine holds; a refused Plug
// changes nothing.
func (b *Broker) Plug(e engine.Engine) error {
	filters := e.Filters()
	r := &b.routes
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sealed {
		return fmt.Errorf("%w: channel %q: engines are plugged before Restore", ErrPlugged, e.Name())
	}
	if e.Kind() == delivery.KindNone || e.Kind() == delivery.KindBroadcast {
		return fmt.Errorf("%w: channel %q: a channel engine is append, latest or queue", ErrPlugged, e.Name())
	}
	names := map[string]engine.Engine{}
	if old := r.byName.Load(); old != nil {
		for k, v := range *old {
			names[k] = v
		}
	}
	if _, dup := names[e.Name()]; dup {
		return fmt.Errorf("%w: channel %q is plugged already", ErrPlugged, e.Name())
	}
	if len(filters) == 0 {
		return fmt.Errorf("%w: channel %q holds no filter", ErrPlugged, e.Name())
	}
	// Built anew, so that a refusal leaves the table in use as it was and a
	// publisher never reads a table being added to.
	next := new(topic.Table[engine.Engine])
	if old := r.table.Load(); old != nil {
		old.Each(func(f string, v engine.Engine) bool {
			_ = next.Add(f, v) // added once already
			return true
		})
	}
	for _, f := range filters {
		if err := next.Add(f, e); err != nil {
			return fmt.Errorf("%w: channel %q: %w", ErrPlugged, e.Name(), err)
		}
	}
	names[e.Name()] = e
	r.byName.Store(&names)
	var all []engine.Engine
	if old := r.channels.Load(); old != nil {
		all = append(all, *old...)
	}
	all = append(all, e)
	r.channels.Store(&all)
	every := append([]engine.Engine{r.broadcast}, all...)
	r.all.Store(&every)
	if w, ok := e.(engine.RoomWatcher); ok {
		var ws []engine.RoomWatcher
		if old := r.watchers.Load(); old != nil {
			ws = append(ws, *old...)
		}
		ws = append(ws, w)
		r.watchers.Store(&ws)
	}
	r.table.Store(next)
	return nil
}

// seal fixes the table at Restore; a later Plug is refused.
func (r *routes) seal() {
	r.mu.Lock()
	r.sealed = true
	r.mu.Unlock()
}

// target is the engine serving topic t: the channel engine holding it, or
// broadcast. It allocates nothing: the table keeps no reference to t.
func (r *routes) target(t []byte) engine.Engine {
	tab := r.table.Load()
	if tab == nil {
		return r.broadcast
	}
	_, e, ok := tab.Lookup(unsafe.String(unsafe.SliceData(t), len(t)))
	if !ok {
		return r.broadcast
	}
	return e
}

// reach calls fn for every channel engine a subscription filter is served
// from (topic.Table.Reach), once each however many of its filters it is;
// inside is whether the filter lies entirely inside one of them.
func (r *routes) reach(filter string, fn func(e engine.Engine, inside bool)) {
	tab := r.table.Load()
	if tab == nil {
		return
	}
	type reached struct {
		e      engine.Engine
		inside bool
	}
	var seen []reached
	tab.Reach(filter, func(_ string, e engine.Engine, inside bool) {
		for i := range seen {
			if seen[i].e == e {
				seen[i].inside = seen[i].inside || inside
				return
			}
		}
		seen = append(seen, reached{e, inside})
	})
	for _, x := range seen {
		fn(x.e, x.inside)
	}
}

// byRef is the engine that made the delivery ref names: the channel engine
// its Kind and Name name, else broadcast - which finds nothing of its own
// under a channel's Ref (no channel plugged under that name).
func (r *routes) byRef(ref delivery.Ref) engine.Engine {
	if ref.Kind == delivery.KindBroadcast || ref.Kind == delivery.KindNone {
		return r.broadcast
	}
	names := r.byName.Load()
	if names == nil {
		return r.broadcast
	}
	e := (*names)[ref.Name]
	if e == nil || e.Kind() != ref.Kind {
		return r.broadcast
	}
	return e
}

// engines are the channel engines plugged, in plugging order; nil for none.
// The caller does not change the slice.
func (r *routes) engines() []engine.Engine {
	if all := r.channels.Load(); all != nil {
		return *all
	}
	return nil
}

// every is every engine, broadcast first, then the channels in plugging
// order. The caller does not change the slice.
func (r *routes) every() []engine.Engine { return *r.all.Load() }

// restoreEngines fixes the table and has every channel engine load what its
// stores kept, before any session comes back or a Will at the start is
// published into one.
func (b *Broker) restoreEngines() error {
	b.routes.seal()
	for _, e := range b.routes.engines() {
		if err := e.Restore(); err != nil {
			return fmt.Errorf("restoring channel %q: %w", e.Name(), err)
		}
	}
	return nil
}

// resubscribeChannels hands every channel engine the subscriptions of the
// sessions restored that reach it, marked restoring: nothing is delivered
// until a session's connection resumes it. A session holding a
// subscription the rules now refuse - a filter inside what became a queue,
// a queue's form naming a queue no more - is ended instead, and counted:
// MQTT cannot tell a resuming client that one of its subscriptions is gone,
// so it comes back to Session Present 0 and asks again (RFC 0005
// saguin_sessions_dropped_total{cause="subscription_refused"}; checklist
// C2.22). It answers how many were ended.
func (b *Broker) resubscribeChannels(r *restoring) int {
	if b.routes.table.Load() == nil {
		return 0
	}
	var refused []*session
	for i := range b.shards {
		sh := &b.shards[i]
		sh.mu.Lock()
		for _, s := range sh.sessions {
			for f, sub := range s.filters {
				code, why := b.refusedAtStart(f, sub)
				if code == codec.Success {
					// The declaration it was granted with goes back to the
					// engines as its SUBSCRIBE carried it.
					var user []codec.UserProperty
					if sub.part != nil {
						user = sub.part.Properties()
					}
					code, why = b.subscribeChannels(restoringSession{s}, filterOf(f, sub, false, user))
				}
				if code >= 0x80 {
					b.log.Warn("session ended at the start: it holds a subscription the channels now refuse",
						"client_id", s.id, "filter", f, "code", code.String(), "why", why)
					refused = append(refused, s)
					break
				}
			}
		}
		sh.mu.Unlock()
	}
	for _, s := range refused {
		b.endRefused(r, s)
	}
	return len(refused)
}

// endRefused ends a restored session whose subscription is refused. Its
// Will, if one fell due or waits with a due moment, falls due now and is
// published before the record goes (notes-0003 "Restart behaviour"); a
// Will with no due moment - its client was connected at the stop - goes
// with the session.
func (b *Broker) endRefused(r *restoring, s *session) {
	will := s.will
	for i, d := range r.due {
		if d.s == s {
			will = d.will
			r.due = append(r.due[:i], r.due[i+1:]...)
			break
		}
	}
	if will != nil && !will.DueAt.IsZero() {
		b.publishWill(s.id, will, WillStart)
	}
	sh := b.shard(s.id)
	sh.mu.Lock()
	s.will = nil
	b.endSession(sh, s, "a subscription the channels now refuse", false)
	sh.mu.Unlock()
	b.counters.SessionsDroppedSubscriptionRefused.Add(1)
}

// filterOf is one subscription as an engine is handed it, with the
// SUBSCRIBE's User Properties (nil for one restored).
func filterOf(filter string, sub subscription, isNew bool, user []codec.UserProperty) engine.Filter {
	f := engine.Filter{Filter: filter, Inner: filter, New: isNew, Properties: user, Options: delivery.SubscribeOptions{
		QoS: sub.qos, NoLocal: sub.noLocal, RetainAsPublished: sub.retainAsPublished,
		RetainHandling: sub.retainHandling, SubscriptionID: sub.id}}
	if group, inner, ok, _ := topic.SplitShared(filter); ok {
		f.Share, f.Inner = group, inner
	}
	return f
}

// subscribeChannels hands one subscription of s to every channel engine its
// filter reaches, and answers the first refusal among them (0x00 when none
// refuses or none is reached). Shard lock held.
func (b *Broker) subscribeChannels(s engine.Session, f engine.Filter) (codec.ReasonCode, string) {
	if e := b.queueFormEngine(f.Inner); e != nil {
		if c, w := e.Subscribe(s, f); c >= 0x80 {
			return c, w
		}
		return codec.Success, ""
	}
	code, why := codec.Success, ""
	b.routes.reach(f.Inner, func(e engine.Engine, inside bool) {
		f.Inside = inside
		if c, w := e.Subscribe(s, f); c >= 0x80 && code == codec.Success {
			code, why = c, w
		}
	})
	return code, why
}

// unsubscribeChannels drops s's filter from every channel engine it reached.
// Shard lock held.
func (b *Broker) unsubscribeChannels(s *session, filter string) {
	inner := filter
	if _, in, ok, _ := topic.SplitShared(filter); ok {
		inner = in
	}
	if e := b.queueFormEngine(inner); e != nil {
		e.Unsubscribe(s, filter)
		return
	}
	b.routes.reach(inner, func(e engine.Engine, _ bool) { e.Unsubscribe(s, filter) })
}

// Each of the session's moments, told every engine, broadcast first: they
// keep their own subscribers, and one with nothing of s's does nothing.
// Shard lock held. carried are what s's last connection left unfinished:
// each engine is handed its own (carriedBy) to send again first.
func (b *Broker) resumeEngines(s *session, c delivery.Client, carried []delivery.Unfinished) {
	for _, e := range b.routes.every() {
		e.Resume(s, c, carriedBy(e, carried))
	}
}

// isChannel: r names a delivery a channel engine made.
func isChannel(r delivery.Ref) bool {
	return r.Kind != delivery.KindNone && r.Kind != delivery.KindBroadcast
}

// carriedBy is the part of u that e made, nil for none: a channel's by its
// Ref.Kind and Ref.Name, broadcast's every delivery no channel made (its
// Ref.Name is the shared group that handed it over).
func carriedBy(e engine.Engine, u []delivery.Unfinished) []delivery.Unfinished {
	if e.Kind() == delivery.KindBroadcast {
		return broadcastOnly(u)
	}
	var mine []delivery.Unfinished
	for _, x := range u {
		if x.Delivery.Ref.Kind == e.Kind() && x.Delivery.Ref.Name == e.Name() {
			mine = append(mine, x)
		}
	}
	return mine
}

// broadcastOnly is u without the deliveries channel engines made: u itself,
// uncopied, when it holds none (always, with no channel plugged).
func broadcastOnly(u []delivery.Unfinished) []delivery.Unfinished {
	for i := range u {
		if isChannel(u[i].Delivery.Ref) {
			out := append([]delivery.Unfinished(nil), u[:i]...)
			for _, x := range u[i+1:] {
				if !isChannel(x.Delivery.Ref) {
					out = append(out, x)
				}
			}
			return out
		}
	}
	return u
}

// ack hands e an acknowledgement of a delivery it made, under the session's
// shard lock. A connection that no longer owns the session changes nothing
// (invariant 17) - but broadcast's window is the session's, so a PUBACK or
// PUBCOMP read on the connection it was taken from has the new one sent the
// delivery again (staleAck). The answer is whether the engine kept it and c
// still owns the session (for a PUBREC: whether c sends the PUBREL).
func (b *Broker) ack(c delivery.Client, e engine.Engine, r delivery.Ref, stage engine.AckStage, packetID uint16) bool {
	sh := b.shard(c.ClientID())
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s := sh.sessions[c.ClientID()]
	if s == nil {
		return false
	}
	if !s.ownedBy(c) {
		if stage == engine.AckFinished && e == engine.Engine(b.broadcast) {
			b.broadcast.staleAck(s, c, r)
		}
		return false
	}
	return e.Ack(s, r, stage, packetID) && s.ownedBy(c)
}

func (b *Broker) detachEngines(s *session) {
	for _, e := range b.routes.every() {
		e.Detach(s)
	}
}

func (b *Broker) endEngines(s *session) {
	for _, e := range b.routes.every() {
		e.End(s)
	}
}

// closeEngines closes every channel engine, each failure logged; broadcast
// is closed after the broker's queued writes (Close).
func (b *Broker) closeEngines() {
	for _, e := range b.routes.engines() {
		if err := e.Close(); err != nil {
			b.log.Error("closing a channel engine", "channel", e.Name(), "error", err)
		}
	}
}

// Host is what an engine built for this broker is given (engine.Host): its
// clock, a logger naming the channel, its topic limits and the connection
// that owns a session now.
func (b *Broker) Host(channel string) engine.Host {
	return host{b: b, log: b.log.With("channel", channel)}
}

type host struct {
	b   *Broker
	log *slog.Logger
}

func (h host) Clock() clock.Clock   { return h.b.opts.Clock }
func (h host) Logger() *slog.Logger { return h.log }
func (h host) CheckTopic(t []byte) (codec.ReasonCode, string) {
	return h.b.checkTopic(t)
}

// Allows is engine.Host's: the session's identity and its grants under the
// acl_file in force, the topic resolved to its channel as a publish is.
func (h host) Allows(clientID, t string, verb acl.Verb) bool {
	a := h.b.access.Load()
	if a == nil || a.ACL == nil {
		return true
	}
	sh := h.b.shard(clientID)
	sh.mu.Lock()
	s := sh.sessions[clientID]
	sh.mu.Unlock()
	if s == nil {
		return false
	}
	return grantsIn(a.ACL, s.who.Load(), clientID).Allows(a.ACL.Channel(t), t, verb)
}

func (h host) OnGrantsChanged(f func()) { h.b.OnGrantsChanged(f) }

// WithRoom knows the shard the broker holds across a Hold or Release of
// clientID's exchange from where storeNow makes the write: under the lock
// on a provider that does not wait on disk, with no lock on one that does.
func (h host) WithRoom(clientID, what string, write func() error) error {
	var held *shard
	if !h.b.opts.SessionsWaitOnDisk {
		held = h.b.shard(clientID)
	}
	return h.b.withRoom(held, what, write)
}

// Client takes the session's shard lock for the map lookup only (LOCKS.md):
// an engine asks with none of its own locks held that it also takes inside a
// call the broker makes under a shard lock.
func (h host) Client(clientID string) delivery.Client {
	sh := h.b.shard(clientID)
	sh.mu.Lock()
	s := sh.sessions[clientID]
	sh.mu.Unlock()
	if s == nil {
		return nil
	}
	if ref := s.client.Load(); ref != nil {
		return ref.c
	}
	return nil
}
