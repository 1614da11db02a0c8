// Package engine is the seam between the broker and what serves a topic: the
// broadcast engine (live fan-out, the broadcast log for kept sessions, shared
// groups, retained values) for every topic no channel claims, and one engine
// per channel kind - append, latest, queue (RFC 0002 "Channels") - for the
// topics a channel's filter holds.
//
// The broker routes every topic a channel's filter holds to that channel's
// plugged engine, and every other topic to the broadcast engine
// (broker/broadcast_engine.go), through this interface alike
// (broker/routes.go).
//
// The broker keeps what MQTT says belongs to a client id - its session, its
// connection, its Will, its expiry - and decides who owns what (invariant 17).
// An engine keeps what it serves: records, positions, offers, leases, its
// QoS 2 holds in its own store. The broker hands it a publish whose topic it
// holds, the subscriptions that reach it, a session's resume, detach and end,
// and every acknowledgement of a delivery it made, found by the delivery's
// Ref.Kind. An engine reaches the broker only through its Host, never
// *Broker.
//
// A leaf: it imports codec, netloop/delivery, store, broker/clock and
// broker/acl (the verbs an engine asks Host.Allows about), never broker, so an engine package imports it and the broker imports the engines.
package engine

import (
	"log/slog"

	"github.com/saguin-edge/saguin/broker/acl"
	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// Engine serves the topics one channel's filter holds (or, for broadcast,
// every topic none does). Methods are called from the connections' loops and
// the broker's timers, concurrently for different sessions; broker/LOCKS.md
// says which broker lock is held across each. None may block on a client.
type Engine interface {
	// Kind is the kind of Ref this engine stamps on its deliveries; an
	// acknowledgement carrying it comes back here.
	Kind() delivery.Kind
	// Name is the channel's name ("" for broadcast): Ref.Name of a channel
	// delivery, the label of its metrics.
	Name() string
	// Filters are the channel's filters (braces expanded): every topic one
	// of them holds most exactly is this engine's (RFC 0002 "Which channel
	// a topic belongs to"). Broadcast has none: it serves the rest.
	Filters() []string

	// Publish takes a publish whose topic this engine holds, QoS 0 or 1, or
	// one of the broker's own publishers (a Will, a bridge) at any QoS, which
	// are never held (RFC 0003). The code answers the PUBACK: 0x00 once
	// stored as far as the provider promises (append record, latest value,
	// queue job, broadcast log copy for kept sessions), never after any
	// subscriber (invariant 16).
	Publish(publisher string, p *codec.Publish) (codec.ReasonCode, string)
	// Waits reports whether Publish of p - at QoS 2, its hold in Holder -
	// would wait on a disk commit, so netloop runs it off the loop. Asked on
	// the loop: cheap, never blocks.
	Waits(publisher string, p *codec.Publish) bool

	// Holder is where this engine keeps a QoS 2 publish between PUBREC and
	// PUBREL: the channel's own store for a channel (its provider's bound
	// counts it; RFC 0002 "Exactly-once publishes: broker.qos2"), the
	// broadcast log's for broadcast. The broker writes the hold there
	// (Holder.Hold) and lists them at Restore (Holder.Held).
	Holder() store.Holder
	// Release completes a held exchange in one store operation - the record
	// written at the engine's next position and the hold deleted together
	// (store.Holder.ReleaseHeld, after whatever the engine must store first,
	// such as a retained value) - and answers the PUBCOMP. It does not
	// deliver: Released does, with no broker lock held. store.ErrNotFound
	// when nothing is held under the key; a refusal for room (0x97) keeps
	// the hold for the re-sent PUBREL.
	Release(h store.Held) (Released, codec.ReasonCode, string, error)
	// Released delivers what Release wrote, to live subscribers at once and
	// to kept sessions by their positions. The topic is never resolved again
	// (RFC 0003 "Exactly once"): it is this engine's.
	Released(r Released)

	// Subscribe adds one subscription of s that reaches this engine (a plain
	// filter, or a shared group's, which the filter's Share names), recorded
	// before the SUBACK; the engine starts serving it per its rules (append:
	// start/position and Retain Handling; latest: the state pass; queue: one
	// worker of the form). The broker has stored the filter with the session
	// already. A code above 0x80 refuses it (RFC 0002's SUBACK table).
	Subscribe(s Session, f Filter) (codec.ReasonCode, string)
	// Unsubscribe drops s's subscription filter, if this engine serves it.
	Unsubscribe(s Session, filter string)
	// Resume hands the engine s's new connection: what it owes s goes out
	// first (carried are the deliveries s's last connection left unfinished
	// with this engine's Ref.Kind and Name, sent again under their
	// identifiers), then from its positions. The carried messages are the
	// broker's: an engine keeping one past the call takes a reference
	// (Message.Retain). At a broker start the sessions come back away.
	Resume(s Session, c delivery.Client, carried []delivery.Unfinished)
	// Detach: s's connection is gone and the session kept. In-flight leases
	// go back (queue), positions are taken for writing (append), nothing is
	// sent until Resume.
	Detach(s Session)
	// End: s is gone for good (expiry, Clean Start, takeover of a session
	// that ended with its connection). Its positions, leases and
	// subscriptions here go with it.
	End(s Session)
	// Ack is a client's acknowledgement of a delivery this engine made,
	// carrying the Ref the engine stamped on it, and at AckReceived the
	// packet identifier the delivery went under (0 at AckFinished): a QoS 2
	// exchange resumed after a restart sends its PUBREL under it. Stale refs
	// (a superseded attempt, another era) change nothing (invariant 3). The
	// answer is whether the acknowledgement was kept: false at AckReceived
	// when the receipt could not be stored, and the connection ends with
	// 0x80 and no PUBREL (RFC 0003 "Outbound QoS 2"); true for anything
	// else, a stale ref included.
	Ack(s Session, ref delivery.Ref, stage AckStage, packetID uint16) bool

	// Restore loads what the engine's stores kept, before the first
	// connection; the broker restores sessions first and hands the engine
	// its subscriptions through Subscribe with Session.Restoring set.
	Restore() error
	// Close stops the engine's timers and writers and stores what it still
	// holds in memory (positions), waiting for them: nothing of its runs
	// against the stores once it returns. The stores are closed after it.
	Close() error
}

// RunPublisher is what an engine adds to Engine when it can store several
// publishes of one publisher in one store call - so that a connection with a
// window of publishes in flight shares a commit among them (netloop "publish
// runs"). codes[i] and whys[i] answer ps[i] as Publish would; the records go
// in ps's order, and each answer waits for the record as Publish's would.
type RunPublisher interface {
	PublishRun(publisher string, ps []*codec.Publish, codes []codec.ReasonCode, whys []string)
}

// PointReader is what a latest channel's engine adds to Engine: the point
// read (RFC 0003 "Reading one value: the point read"), asked by the broker
// for $saguin/kv/get once the key is judged to be this channel's topic. ok is
// false for no value - never set, deleted, or past retention_period alike.
type PointReader interface {
	Get(topic string) (v store.Value, ok bool, err error)
}

// RoomWatcher is what an engine that offers only into a window with room
// (queue) adds to Engine: Room says clientID's connection has a place again
// in its full in-flight window, after a settle of any engine's delivery
// (netloop.Handler.Room), so that the engine offers at once rather than at
// its next tick (notes-0003 "Delivery"). Called on the connection's loop
// with no broker lock held; it must not block.
type RoomWatcher interface {
	Room(clientID string)
}

// FloorGuard is what an append engine adds to Engine: the check a CONNECT
// makes before it resumes a session (RFC 0003 "Resuming below the retention
// floor"). A session holding a position retention passed is not resumed: it
// ends, and the CONNECT is answered Session Present 0 - the one signal MQTT
// has for "you may have missed things" (invariant 1).
type FloorGuard interface {
	// Passed reports whether clientID's position here is below the
	// channel's floor: records it had not acknowledged are gone.
	Passed(clientID string) bool
}

// Leaver is what an engine adds when a client's DISCONNECT must find
// something of its stored before the connection closes - append: the
// positions the connection's acknowledgements moved (RFC 0003 "Durable
// consumers": stored BEFORE the connection is closed, invariant 18).
type Leaver interface {
	// Leaving stores what clientID's acknowledgements moved and returns once
	// the store has it, or has refused it (logged; the engine's writer
	// retries). No broker lock is held; it may wait on a disk commit.
	Leaving(clientID string)
	// LeavingWaits reports whether Leaving for clientID will wait on a disk
	// commit - it has a moved position to store on a provider that commits
	// to disk - so the DISCONNECT is handled off the connection's loop; a
	// publisher's DISCONNECT stays on it. Cheap, never blocks.
	LeavingWaits(clientID string) bool
}

// KeepsPositions is implemented by every Session the broker lends. It is
// true when the session ends because retention passed one of its positions
// at a CONNECT: an engine then keeps each position retention did not pass
// (nothing unread was removed from it), for the session begun in its place
// (RFC 0003 "Sessions: one owner, one ending"). False for every other end.
type KeepsPositions interface {
	KeepsPositions() bool
}

// Released is what Release wrote: the record at its offset in the engine's
// store, as the publisher sent it.
type Released struct {
	Publisher string
	Record    store.Record
	// Live is false for a record whose Message Expiry ran out while held:
	// written, counted, delivered to nobody.
	Live bool
}

// AckStage is which acknowledgement of a delivery came back.
type AckStage uint8

const (
	// AckReceived is a QoS 2 delivery's PUBREC: its PUBREL follows, and an
	// engine that keeps state stores the receipt first.
	AckReceived AckStage = iota + 1
	// AckFinished ends a delivery: a QoS 1 PUBACK or a QoS 2 PUBCOMP (the
	// engine knows which QoS it sent).
	AckFinished
)

// Session is one client id's session as the broker lends it to an engine
// for one call. The broker owns it; an engine keeps the id, never the value.
type Session interface {
	ClientID() string
	// Kept reports whether the session outlives its connection (a
	// non-zero Session Expiry): only a kept session holds positions.
	Kept() bool
	// Restoring is true while the broker replays stored sessions at a start:
	// nothing is delivered, the engine only rebuilds what it serves.
	Restoring() bool
}

// Filter is one subscription as the broker granted it.
type Filter struct {
	// Filter is the subscription's filter as subscribed, "$share/<g>/"
	// included; Inner is its topic filter, without the share prefix.
	Filter, Inner string
	// Share is the shared group's name, "" for a plain subscription.
	Share   string
	Options delivery.SubscribeOptions
	// New is false when the session already held this filter (Retain
	// Handling 1 sends nothing then).
	New bool
	// Inside: every topic Inner matches is this engine's - the filter lies
	// entirely inside one of its filters and inside no more exact channel's
	// (topic.Table.Reach; checklist E13). A queue refuses such a plain
	// filter 0x8F and grants one that merely crosses it.
	Inside bool
	// Properties are the SUBSCRIBE's User Properties (saguin-filter,
	// saguin-deletions), packet-level: the same for every filter of it.
	Properties []codec.UserProperty
}

// Arriver is an engine told that the last filter of a client's SUBSCRIBE
// has been answered, whatever its code: one whose Subscribe held back
// serving a filter given with Options.More (a SUBSCRIBE is one arrival, RFC
// 0003 "Where a subscription starts") serves from here.
type Arriver interface {
	Arrived(clientID string)
}

// Host is what the broker gives an engine (Broker.Host): the clock, a
// logger, the broker's topic limits and the connection serving a session,
// looked up by id. Nothing on it takes a lock an engine could be holding
// while the broker calls it. An engine counts in its own metrics.
type Host interface {
	// Clock is the broker's (broker.Options.Clock): timers an engine arms
	// - visibility timeouts, backoff, the offer tick - come from it, so a
	// test advances a fake one.
	Clock() clock.Clock
	// Logger is the broker's, with the channel's name on every line.
	Logger() *slog.Logger
	// Client is the connection that owns clientID's session now, nil when
	// it is away or ended: the one an engine may deliver to (invariant 17).
	Client(clientID string) delivery.Client
	// CheckTopic applies the broker's limits to a topic (max_topic_length,
	// max_topic_levels), as Publish would.
	CheckTopic(t []byte) (codec.ReasonCode, string)
	// Allows asks the acl_file in force now whether clientID's session may
	// act with verb on topic t of this channel: write at a publish, read
	// (or seek, delete, consume) at every delivery and request - never only
	// at SUBSCRIBE, since a re-read applies to open and resumed sessions.
	// True without an acl_file. It allocates nothing but the first time
	// after a re-read (RFC 0002 "What a refused client sees"). A delivery
	// refused here stalls the consumer at its position; a queue job goes
	// back with its attempt unspent.
	Allows(clientID, t string, verb acl.Verb) bool
	// OnGrantsChanged registers f, run after each re-read of the acl_file:
	// a consumer stalled on a refused delivery asks again then, since the
	// grant returning is what wakes it, not the next publish.
	OnGrantsChanged(f func())
	// WithRoom runs write, a write to the session store's provider made
	// inside Holder().Hold or Release of clientID's QoS 2 exchange, and while
	// that provider is full lets the broadcast log's oldest messages go for
	// it and tries again (RFC 0002 "Every session's state"): the broadcast
	// engine's hold and release, and a channel whose store shares that
	// provider. The broker holds clientID's shard lock across Hold and
	// Release when the provider does not wait on disk (LOCKS.md); WithRoom
	// knows it, so its walk over every session's shard skips that one.
	// Asked anywhere else it may deadlock.
	WithRoom(clientID, what string, write func() error) error
}
