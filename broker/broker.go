// Package broker is the core the connections hand their packets to: sessions
// (sharded by client-id hash), the subscription index (read-mostly), and the
// routing of a publish to the subscribers it reaches.
//
// What MQTT says a broker keeps lives in the store: every session's record
// (subscriptions, expiry, Will) in the provider broker.session.storage names,
// the QoS 1/2 broadcasts owed to sessions that are away in that provider's
// broadcast log, and retained values in the retained store. The broker holds
// every kept session in memory too, restored from the store at Restore.
package broker

import (
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/saguin-edge/saguin/broker/acl"
	channelrules "github.com/saguin-edge/saguin/broker/channel"
	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/broker/ledger"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/config/defaults"
	"github.com/saguin-edge/saguin/netloop"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// Options are the limits the broker enforces and the stores it keeps state in.
type Options struct {
	// Catalogue is every configured channel, as $saguin/catalogue/<channel>
	// answers about it (catalogue.go).
	Catalogue []CatalogueEntry

	MaxTopicLength   int // limits.max_topic_length
	MaxTopicLevels   int // limits.max_topic_levels
	MaxSubscriptions int // limits.max_subscriptions
	// SessionQueueBytes bounds what one away session may be owed in the
	// broadcast log (limits.session_queue_bytes): past it the oldest goes.
	SessionQueueBytes int64
	// MaxSessionExpiry is limits.max_session_expiry: a restored session's
	// expiry is capped by it as it stands now; 0 is no cap here (netloop caps
	// what a CONNECT asks for).
	MaxSessionExpiry time.Duration
	// AckCommitInterval is broker.session.ack_commit_interval.
	AckCommitInterval time.Duration
	// QoS2MaxInflight is broker.qos2.max_inflight_per_client.
	QoS2MaxInflight int
	// QoS2ExpiresAfter is broker.qos2.expires_after; 0 is none.
	QoS2ExpiresAfter time.Duration
	// ShareExpiresAfter is broker.share.expires_after: a shared group's
	// backlogged delivery older than this is dropped; 0 is none.
	ShareExpiresAfter time.Duration
	// Sessions is the session store of broker.session.storage's provider;
	// required.
	Sessions store.Sessions
	// Retained is broker.retained's store; required.
	Retained store.Retained
	// SessionsWaitOnDisk and RetainedWaitOnDisk say that a write to Sessions
	// (its broadcast log included) or to Retained waits for a commit to
	// disk: the calls that make one then run off the connection's loop
	// (Waits). False - a memory provider, which only takes a lock - keeps
	// them on the loop, the fastest path.
	SessionsWaitOnDisk bool
	RetainedWaitOnDisk bool
	// AwaitClient, when set, marks a client id as waiting on the session
	// store until the returned func is called: its writes already queued -
	// its last connection's disconnect, its session's ending - and every
	// later one go first (sqlite.Provider.AwaitClient, notes-0004 "Group
	// commit", takeover). A CONNECT holds it until its record is written.
	AwaitClient func(clientID string) (release func())
	// RetainedWithSessions: Retained lives on the provider Sessions does, so
	// a retained value that finds it full takes its room from the broadcast
	// log first (RFC 0002 "Every session's state").
	RetainedWithSessions bool
	MaxHeaderCount       int   // limits.max_header_count: User Properties on a publish
	MaxHeaderBytes       int   // limits.max_header_bytes: their names and values together
	PublishRate          int64 // limits.publish_rate, messages a second per client; 0 none
	PublishBytes         int64 // limits.publish_bytes, bytes a second per client; 0 none
	Logger               *slog.Logger
	// Clock is where the broker reads the time and arms its timers (session
	// expiry, Will delays, the commit and share-expiry tickers, the publish
	// budgets); nil is clock.Real.
	Clock clock.Clock
	// Counters are where the broker counts; nil gives it its own. Passed in
	// so the store's hooks, which fire while the stores open, count there too.
	Counters *Counters
}

// sessionShards is how many locks the sessions are spread over.
const sessionShards = 64

// Broker routes publishes between sessions. It implements netloop.Handler.
type Broker struct {
	opts     Options
	log      *slog.Logger
	now      func() time.Time
	seed     maphash.Seed
	shards   [sessionShards]shard
	subs     index
	sessions store.Sessions
	retained store.Retained
	bcast    backlog
	shares   shares
	// partitions compares the saguin-filter counts declared on one filter
	// (partition_counts.go).
	partitions partitionCounts
	// broadcast is the engine serving every topic no channel claims
	// (broadcast_engine.go); routes sends a topic a channel claims to its
	// engine, every other one to broadcast (routes.go).
	broadcast *broadcastEngine
	routes    routes
	budgets   *budgets // publish_rate and publish_bytes, broker-wide or an acl_file entry's
	// later orders the writes no client waits on per client id, off the
	// event loops, on a provider that commits to disk.
	later laterWrites
	// stopping is set by Stop: the connections a graceful stop ends are not
	// devices dying, so no Will falls due and no session ends for them.
	stopping atomic.Bool
	// access is the password files and the acl_file in force (access.go);
	// nil admits everybody and allows everything. verifying: some door
	// checks passwords, so a CONNECT runs off the event loop.
	access          atomic.Pointer[Access]
	verifying       atomic.Bool
	onGrantsChanged []func()
	done            chan struct{}
	closed          sync.Once
	wg              sync.WaitGroup
	counters        *Counters
	// logBound keeps repeated refusals and storage failures to a line per
	// cause every ten seconds (logbound.go).
	logBound logBound
	// refusals and losses are the records the operations listener lists
	// (records.go).
	refusals *ledger.Refusals
	losses   *ledger.Losses
}

type shard struct {
	mu       sync.Mutex
	sessions map[string]*session
	// claims are the client ids a CONNECT is storing the record of with
	// this lock let go (connectWrites); closed once it has it again. Another
	// CONNECT for the id waits for it (lockSettled).
	claims map[string]chan struct{}
}

// session is what the broker keeps for a client id: its filters, and the
// connection serving it while there is one. Everything but client is guarded
// by the shard lock.
type session struct {
	id     string
	client atomic.Pointer[clientRef]
	// who is the identity its connection's CONNECT proved, and its grants;
	// an atomic pointer so a publish reads it without the shard lock.
	who     atomic.Pointer[identity]
	filters map[string]subscription
	// gen rises at every attach and detach, so a timer armed for an older
	// state does nothing. 32 bits: a timer would need four billion attaches
	// and detaches while it waits to be fooled by a wrap.
	gen uint32
	// holding is how many holds are being written, with no lock held: they
	// count against broker.qos2.max_inflight_per_client already. Beside gen,
	// so the two share a word.
	holding int32
	// expiry is the Session Expiry Interval granted; awaySince is when its
	// connection ended, unix nanoseconds by the broker's clock (0 while
	// connected): 8 bytes where a time.Time took 24 (away reads it).
	expiry    time.Duration
	awaySince int64
	// will is the armed Last Will, nil for none; its DueAt is set while it
	// waits out its delay.
	will *store.Will
	// owed is what the session is owed from the broadcast log (broadcast_backlog.go).
	owed owedList
	// rare is what only some sessions hold - an away one's timer, a
	// resumed or taken-over one's window, a shared group member's groups,
	// an exactly-once publisher's holds - made at its first need (rarely):
	// a connected client that does none of these, most of an idle fleet,
	// is 208 bytes where it was 336 in the 352-byte class
	// (TestASessionKeepsItsSizeClass). nil reads as all of them empty.
	rare *sessionRare
	// group is set on the stand-in session a shared group keeps in the index
	// (broadcast_share.go); nil on every client's session.
	group *shareGroup
	// floorPassed: the session ends because retention passed one of its
	// positions at a CONNECT; its other positions are kept (KeepsPositions).
	floorPassed bool
	// retained serves the retained values its SUBSCRIBEs reached, on the
	// connection that subscribed (broadcast_retainedpass.go); nil before
	// its first. Atomic: set with no lock held, read under the shard lock
	// by an acknowledgement that wakes it.
	retained atomic.Pointer[retainedSender]
	// conn is what its latest connection said of itself, for
	// /v1/operations/sessions; zero for a session restored at a start and
	// not connected since.
	conn connInfo

	// The small fields last and together, so they share one word: apart,
	// each took a word of its own, and with gen and awaySince wider the
	// struct was 360 bytes in the allocator's 384-byte class; it is 320 now,
	// every connected client paying it (TestASessionKeepsItsSizeClass).

	// receiveMax is the client's Receive Maximum, kept with the record.
	receiveMax uint16
	// quotaSaid: a max_subscriptions refusal was logged since the session
	// last added a filter - one warning per episode (RFC 0002).
	quotaSaid bool
	// ended is set once the session ended: late acknowledgements and
	// timers find it and do nothing.
	ended bool
	// pumping: a read of the log for its connection is queued or being
	// made with the shard lock let go (backlog.pumpOff).
	pumping bool
	// departed: its connection's DISCONNECT had the record stored as it
	// leaves it (storeDeparture), so Disconnected writes it no second time.
	departed bool
}

// sessionRare is the part of a session made at its first need (session.rare).
// Every field is guarded by the shard lock, as the session's are.
type sessionRare struct {
	// timer ends the session at its expiry, or publishes its Will.
	timer clock.Timer
	// done are the stored window entries of QoS 2 deliveries completed since
	// the last commit, forgotten with the cursor's next write.
	done []store.InFlightKey
	// givenBack is what broadcast's End gave back into its groups'
	// backlogs, written with the session's ending in one operation
	// (storeEnd).
	givenBack []store.Returned
	// takenFrom is the connection this session was taken over from while
	// it still held it: its unfinished deliveries, handed back as it ends,
	// belong to this session's new connection (resume.go).
	takenFrom delivery.Client
	// carry are the deliveries its last connection left unfinished, sent
	// again first when it resumes (resume.go). Kept in memory only.
	carry []delivery.Unfinished
	// groups are the shared groups s is a member of: an acknowledgement
	// from a member may let their backlogs drain (broadcast_sharedrain.go).
	// Guarded by the shard lock and the shares lock together; either one
	// reads.
	groups []*shareGroup
	// holds are its exactly-once publishes between PUBREC and PUBREL.
	holds map[uint16]heldPublish
}

// rarely is s.rare, made if s has none yet. Shard lock held.
func (s *session) rarely() *sessionRare {
	if s.rare == nil {
		s.rare = new(sessionRare)
	}
	return s.rare
}

// noRare is what a session with no rare part reads: every field empty.
var noRare sessionRare

// rareOrNone is s.rare to read, the empty one when s has none (never
// written through). Shard lock held.
func (s *session) rareOrNone() *sessionRare {
	if s.rare == nil {
		return &noRare
	}
	return s.rare
}

// ownedBy reports whether c is the connection that owns s now: the only one
// that changes what the broker keeps for its client id (invariant 17). A nil
// s is owned by nobody. Any lock state: the connection is an atomic pointer,
// and a caller acting on the answer holds the shard lock.
func (s *session) ownedBy(c delivery.Client) bool {
	if s == nil {
		return false
	}
	ref := s.client.Load()
	return ref != nil && ref.c == c
}

// A session as an engine sees it (engine.Session): the broker lends it for
// one call.
func (s *session) ClientID() string { return s.id }
func (s *session) Kept() bool       { return s.expiry > 0 }
func (s *session) Restoring() bool  { return false }
func (s *session) KeepsPositions() bool {
	return s.floorPassed
}

// restoringSession is a session being replayed at Restore: engines rebuild
// what they serve for it and deliver nothing.
type restoringSession struct{ *session }

func (restoringSession) Restoring() bool { return true }

// clientRef boxes the interface so it can sit in an atomic.Pointer.
type clientRef struct{ c delivery.Client }

// WithDefaults returns o with every zero field that has one given RFC 0002's
// default (config/defaults, the same figure a key left out of the file
// takes). Fields whose zero means "none" (QoS2ExpiresAfter,
// ShareExpiresAfter, MaxSessionExpiry, PublishRate, PublishBytes) are left.
func (o Options) WithDefaults() Options {
	if o.MaxTopicLength == 0 {
		o.MaxTopicLength = defaults.MaxTopicLength
	}
	if o.MaxTopicLevels == 0 {
		o.MaxTopicLevels = defaults.MaxTopicLevels
	}
	if o.MaxSubscriptions == 0 {
		o.MaxSubscriptions = defaults.MaxSubscriptions
	}
	if o.SessionQueueBytes == 0 {
		o.SessionQueueBytes = defaults.SessionQueueBytes
	}
	if o.AckCommitInterval == 0 {
		o.AckCommitInterval = defaults.AckCommitInterval
	}
	if o.MaxHeaderCount == 0 {
		o.MaxHeaderCount = defaults.MaxHeaderCount
	}
	if o.MaxHeaderBytes == 0 {
		o.MaxHeaderBytes = defaults.MaxHeaderBytes
	}
	if o.QoS2MaxInflight == 0 {
		o.QoS2MaxInflight = defaults.QoS2MaxInflight
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Clock = clock.Or(o.Clock)
	return o
}

// New returns a broker with opts (zero fields take RFC 0002's defaults,
// WithDefaults). The stores are the caller's: the broker imports no store
// implementation, so a missing one is an error naming it, never a store the
// broker makes up (tests build memory ones with brokertest.Stores).
// Restore loads what the stores kept; Stop and Close end it.
func New(opts Options) (*Broker, error) {
	var missing []string
	if opts.Sessions == nil {
		missing = append(missing, "Options.Sessions (broker.session.storage's session store)")
	}
	if opts.Retained == nil {
		missing = append(missing, "Options.Retained (broker.retained's store)")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("broker: no store given for %s", strings.Join(missing, " and "))
	}
	opts = opts.WithDefaults()
	b := &Broker{opts: opts, log: opts.Logger, now: opts.Clock.Now, seed: maphash.MakeSeed(), done: make(chan struct{}), counters: opts.Counters}
	if b.counters == nil {
		b.counters = new(Counters)
	}
	b.refusals, b.losses = ledger.NewRefusals(opts.MaxTopicLength), ledger.NewLosses(opts.MaxTopicLength)
	b.sessions, b.retained = opts.Sessions, opts.Retained
	b.bcast.init(b)
	b.broadcast = newBroadcastEngine(b)
	b.routes.init(b.broadcast)
	b.budgets = newBudgets()
	for i := range b.shards {
		b.shards[i].sessions = make(map[string]*session)
	}
	b.shares.wake = make(chan struct{}, 1)
	b.wg.Add(2)
	go b.commitLoop()
	go b.shareDrainLoop()
	return b, nil
}

func (b *Broker) shard(id string) *shard {
	return &b.shards[maphash.String(b.seed, id)%sessionShards]
}

// Connect attaches c to the session its client id names, taking it over from
// a connection that holds it (0x8E to the old one), or starting it new; a
// session whose expiry passed is ended first, whatever the sweep did.
func (b *Broker) Connect(c delivery.Client, req *netloop.ConnectRequest) (bool, codec.ReasonCode) {
	now := b.now()
	// Credentials first, then what the acl_file says of the proved name:
	// a wrong password is 0x86 whatever the name's roles deny, and every
	// refusal here comes before the session is looked at.
	who, code := b.authenticate(req)
	if code != codec.Success {
		return false, code
	}
	if code := b.admit(req, who); code != codec.Success {
		return false, code
	}
	var will *store.Will
	if req.Will != nil {
		// A Will that could never be delivered is refused before the
		// session is looked at: a refused CONNECT touches nothing (RFC 0003
		// "Last Will": every topic a publish would be refused 0x90 for, and
		// $SYS, which no client may publish to).
		if why := b.undeliverableWill(req.Will.Topic); why != "" {
			b.log.Warn("connection refused", "client_id", req.ClientID, "code", codec.TopicNameInvalid.String(), "why", why)
			return false, codec.TopicNameInvalid
		}
		will = willOf(req, who.user)
	}
	sh := b.shard(req.ClientID)
	release := b.lockSettled(sh, req.ClientID)
	defer release()
	s := sh.sessions[req.ClientID]
	var old delivery.Client
	if s != nil {
		if ref := s.client.Load(); ref != nil {
			old = ref.c
		}
	}
	if s != nil && old == nil && s.expired(now) {
		b.endSession(sh, s, "expired", false)
		s = nil
	}
	if s != nil && old != nil {
		// The replaced connection's Will goes out now if it has no delay;
		// one with a delay is dropped: the session lives on (RFC 0003).
		if s.will != nil && s.will.Delay == 0 {
			b.fireWill(s, WillImmediate)
		}
		s.will = nil
		if s.expiry == 0 {
			b.endSession(sh, s, "taken over", false)
			s = nil
		}
	}
	if s != nil && req.CleanStart {
		b.endSession(sh, s, "clean start", false) // publishes a Will waiting on it
		s = nil
	}
	if s != nil && b.positionPassed(s) {
		// Retention removed records a stored position still pointed to: the
		// session is not resumed but ended (a Will waiting on it published),
		// so the CONNECT is answered Session Present 0 and the consumer starts
		// where a reader with no position starts (RFC 0003 "Resuming below
		// the retention floor"). Its positions retention did not pass stay.
		s.floorPassed = true
		b.log.Info("session discarded at CONNECT: retention passed one of its positions", "client_id", req.ClientID)
		b.endSession(sh, s, "retention passed a position", false)
		s = nil
	}
	present := s != nil
	if s != nil {
		b.stopTimer(s)
		if s.will != nil {
			b.counters.WillsCancelled.Add(1)
		}
		s.will = nil // a waiting Will is cancelled by the resume
	} else {
		// No filter map until the first SUBSCRIBE: a connected client that
		// never subscribes (most publishers) keeps 48 bytes less.
		s = &session{id: req.ClientID}
	}
	prevExpiry, prevAway, prevReceiveMax := s.expiry, s.awaySince, s.receiveMax
	s.expiry = time.Duration(req.SessionExpiry) * time.Second
	s.awaySince = 0
	s.will = will
	s.receiveMax = 65535
	code = b.connectWrites(sh, req, s, present, old)
	if code != codec.Success {
		s.expiry, s.awaySince, s.will, s.receiveMax = prevExpiry, prevAway, nil, prevReceiveMax
		if present {
			b.armExpiry(sh, s)
		}
		sh.mu.Unlock()
		return false, code
	}
	sh.sessions[req.ClientID] = s
	s.gen++
	if present {
		// What it is owed goes before anything live: each engine sends its
		// part of the unfinished window first, under its identifiers, then
		// what it holds for the session (broadcast: its groups, the log).
		b.resumeEngines(s, c, s.rareOrNone().carry)
	} else {
		// A session begun new is handed its connection too: the engines
		// learn it here, since a SUBSCRIBE reaches them under the shard
		// lock, where they cannot look the connection up.
		b.resumeEngines(s, c, nil)
	}
	if r := s.rare; r != nil {
		releaseCarry(r.carry)
		clear(r.carry)
		r.carry = r.carry[:0]
		r.takenFrom = nil
	}
	if present && old != nil {
		s.rarely().takenFrom = old
	}
	s.who.Store(who)
	s.conn = b.connInfoOf(req)
	s.client.Store(&clientRef{c})
	sh.mu.Unlock()
	if old != nil {
		b.log.Info("session taken over", "client_id", req.ClientID)
		old.Kick(codec.SessionTakenOver)
	}
	if will != nil && will.Delay > 0 && s.expiry == 0 {
		b.log.Info("a Will Delay Interval on a session that ends with its connection: the Will is published at disconnect; ask for a Session Expiry Interval at least as long as the delay",
			"client_id", req.ClientID, "will_delay", will.Delay)
	}
	return present, codec.Success
}

// positionPassed asks every append engine whether retention passed s's
// position there (engine.FloorGuard). Shard lock held.
func (b *Broker) positionPassed(s *session) bool {
	for _, e := range b.routes.engines() {
		if g, ok := e.(engine.FloorGuard); ok && g.Passed(s.id) {
			return true
		}
	}
	return false
}

// connectWrites stores what a CONNECT must before its CONNACK: a resumed
// session's groups' cursors (a refusal there leaves the store as it was),
// then its record, and says how the CONNECT is answered. On a provider that
// commits to disk, when no connection holds the session (nothing to take
// over), they are made with the shard lock let go, behind the id's queued
// writes (storeNow), so no call of the shard - a Holds, Acked, Unfinished or
// Disconnected of another client - waits for this CONNECT's commit. The id
// is claimed meanwhile: nothing else can reach the session - no connection
// holds it, its timers are stopped, and another CONNECT for the id waits for
// the claim; a publish that reaches it meanwhile is owed to it as to an away
// session and handed over at the resume. A takeover still writes under the
// lock: the replaced connection owns the session until it is kicked. sh is
// locked on entry and on return.
func (b *Broker) connectWrites(sh *shard, req *netloop.ConnectRequest, s *session, present bool, old delivery.Client) codec.ReasonCode {
	var cursorsErr, putErr error
	write := func(held *shard) error {
		if present {
			if cursorsErr = b.ensureGroupCursors(held, s); cursorsErr != nil {
				return nil
			}
		}
		putErr = b.putSession(held, s, !present)
		return nil
	}
	if b.opts.SessionsWaitOnDisk && old == nil {
		claim := make(chan struct{})
		if sh.claims == nil {
			sh.claims = make(map[string]chan struct{})
		}
		sh.claims[req.ClientID] = claim
		b.storeNow(sh, req.ClientID, write)
		delete(sh.claims, req.ClientID)
		close(claim)
	} else {
		write(sh)
	}
	if code := b.groupCursorsFailed(req, cursorsErr); code != codec.Success {
		return code
	}
	if putErr != nil {
		return b.connectStoreFailed(req, s, putErr)
	}
	return codec.Success
}

// connectStoreFailed decides what a CONNECT whose session record the store
// refused is answered: a Will with no room is refused 0x97; a session with
// no room ends with its connection and is told so; any other failure is
// 0x83 (RFC 0002 "Every session's state: broker.session").
func (b *Broker) connectStoreFailed(req *netloop.ConnectRequest, s *session, err error) codec.ReasonCode {
	if !store.IsFull(err) {
		b.counters.sessionStorageError()
		b.log.Error("session store failed at CONNECT", "client_id", req.ClientID, "error", err)
		return codec.ImplementationSpecificError
	}
	if s.will != nil {
		b.log.Warn("connection refused: the session store has no room for its Will", "client_id", req.ClientID)
		return codec.QuotaExceeded
	}
	b.counters.SessionsDroppedStorageFull.Add(1)
	b.log.Warn("the session store is full: the session ends with its connection", "client_id", req.ClientID)
	s.expiry = 0
	req.SessionExpiry, req.SessionExpiryShortened = 0, true
	return codec.Success
}

// expired reports whether an away session's expiry has passed at now.
func (s *session) expired(now time.Time) bool {
	return s.awaySince != 0 && !now.Before(s.away().Add(s.expiry))
}

// away is when the session's connection ended; the zero Time while one holds it.
func (s *session) away() time.Time {
	if s.awaySince == 0 {
		return time.Time{}
	}
	return time.Unix(0, s.awaySince)
}

// awayAt sets when the session's connection ended; the zero Time is connected.
func (s *session) awayAt(t time.Time) {
	s.awaySince = 0
	if !t.IsZero() {
		s.awaySince = t.UnixNano()
	}
}

// Leaving implements netloop.Handler: a client's DISCONNECT arrived, and
// before its connection is closed every engine that keeps positions stores
// what this connection's acknowledgements moved (RFC 0003 "Durable
// consumers": stored BEFORE the connection is closed). Only the connection
// that owns the session changes what is kept for it (invariant 17). No
// broker lock is held across the engines' writes.
func (b *Broker) Leaving(c delivery.Client, sessionExpiry uint32, graceful bool) {
	id := c.ClientID()
	sh := b.shard(id)
	sh.mu.Lock()
	owned := sh.sessions[id].ownedBy(c)
	sh.mu.Unlock()
	if !owned {
		return
	}
	for _, e := range b.routes.engines() {
		if l, ok := e.(engine.Leaver); ok {
			l.Leaving(id)
		}
	}
	b.storeDeparture(c, sessionExpiry, graceful)
}

// storeDeparture stores what a client's DISCONNECT makes of its kept
// session before the connection is closed: the Session Expiry it left with
// (0 ends it: a record at 0 is ended at the next start), when it left, and
// its Will - withdrawn by 0x00, published now with no delay, else due after
// its delay (invariant 18: a clean DISCONNECT is not exception 1, and a kill
// -9 after the close must not find the session as it was while connected).
// It is the record Disconnected would queue, written now and waited for;
// Disconnected makes the same change in memory and, finding it stored,
// writes it no second time. A refused write is left to Disconnected's own,
// as before this write existed. A session that never outlived its
// connection has no record to change.
func (b *Broker) storeDeparture(c delivery.Client, sessionExpiry uint32, graceful bool) {
	id := c.ClientID()
	sh := b.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s := sh.sessions[id]
	if !s.ownedBy(c) || s.expiry == 0 || b.stopping.Load() {
		return
	}
	now := b.now()
	st := s.state()
	st.Expiry = time.Duration(sessionExpiry) * time.Second
	st.DisconnectedAt = now
	if st.Will != nil {
		w := *st.Will
		st.Will = &w
		switch {
		case graceful, w.Delay == 0, st.Expiry == 0:
			st.Will = nil // withdrawn, or published as the connection ends
		default:
			w.DueAt = now.Add(min(w.Delay, st.Expiry))
		}
	}
	err := b.storeNow(sh, id, func(held *shard) error {
		return b.withRoom(held, "a session's record", func() error { return b.sessions.Update(st) })
	})
	if err != nil {
		b.log.Warn("storing a session as its client's DISCONNECT left it; stored after the close instead", "client_id", id, "error", err)
		return
	}
	// storeNow may have let the lock go: only the session c still owns is marked.
	if sh.sessions[id] == s && s.ownedBy(c) {
		s.departed = true
	}
}

// Disconnected ends the connection's hold on its session. The session outlives
// it by sessionExpiry seconds, or ends now at 0. A connection that was taken
// over no longer holds the session and changes nothing (invariant 17).
//
// It runs on the connection's event loop, and no client waits for what it
// stores: the session is detached in memory here, under its shard lock, so
// whatever comes next for the client id finds the end already made, and the
// writes - the cursor, then the record or the ending - are queued behind the
// id's earlier ones (storeLater), never waited for on the loop.
func (b *Broker) Disconnected(c delivery.Client, sessionExpiry uint32, graceful bool) {
	id := c.ClientID()
	sh := b.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s := sh.sessions[id]
	if s == nil {
		return
	}
	if !s.ownedBy(c) {
		return
	}
	s.client.Store(nil)
	s.gen++
	departed := s.departed
	s.departed = false
	b.detachEngines(s) // broadcast queues the session's cursor's write
	if b.stopping.Load() {
		// A broker stopping is not a device dying: the session is kept as a
		// connected client's, its Will with no due moment (RFC 0003 "Last Will").
		return
	}
	now := b.now()
	s.expiry = time.Duration(sessionExpiry) * time.Second
	if graceful {
		s.will = nil // a DISCONNECT 0x00 withdraws the Will
	}
	if s.expiry == 0 {
		if s.will != nil {
			cause := WillImmediate
			if s.will.Delay > 0 {
				cause = WillSessionEnded // its delay cannot outlast the session
			}
			b.fireWill(s, cause)
		}
		b.endSession(sh, s, "", true)
		return
	}
	s.awayAt(now)
	if s.will != nil {
		if s.will.Delay == 0 {
			b.fireWill(s, WillImmediate)
		} else {
			s.will.DueAt = now.Add(min(s.will.Delay, s.expiry))
		}
	}
	// Said once stored: a kill -9 after either line finds the disconnect.
	stored := func() { b.log.Debug("disconnect stored", "client_id", id) }
	if s.will != nil {
		due := s.will.DueAt
		stored = func() { b.log.Debug("Will waiting out its delay", "client_id", id, "due_at", due) }
	}
	if departed {
		stored() // before the close, by Leaving
	} else {
		b.storeState(sh, s, "storing a session as its client left", stored)
	}
	b.armExpiry(sh, s)
}

// armExpiry starts the timer that publishes the session's waiting Will or
// ends it, whichever comes first; shard lock held.
func (b *Broker) armExpiry(sh *shard, s *session) {
	b.stopTimer(s)
	at := s.away().Add(s.expiry)
	if s.will != nil && !s.will.DueAt.IsZero() && s.will.DueAt.Before(at) {
		at = s.will.DueAt
	}
	gen := s.gen
	s.rarely().timer = b.opts.Clock.AfterFunc(at.Sub(b.now()), func() {
		sh.mu.Lock()
		defer sh.mu.Unlock()
		if s.ended || s.gen != gen || s.client.Load() != nil {
			return
		}
		now := b.now()
		if s.expired(now) {
			b.endSession(sh, s, "expired", true)
			return
		}
		if s.will != nil && !s.will.DueAt.IsZero() && !now.Before(s.will.DueAt) {
			b.fireWill(s, WillDelayed)
			s.will = nil
			b.storeState(sh, s, "removing a published Will", nil)
		}
		b.armExpiry(sh, s)
	})
}

func (b *Broker) stopTimer(s *session) {
	if s.rare != nil && s.rare.timer != nil {
		s.rare.timer.Stop()
		s.rare.timer = nil
	}
}

// endSession ends s completely, in one place: a Will waiting on it is
// published first, then its filters, what it is owed and its record go
// together (RFC 0003 "Sessions: one owner, one ending"). Shard lock held.
// later: no client waits for the ending (a disconnect, an expiry), so its
// write is queued behind the id's others (storeLater); a CONNECT's ending is
// written before it goes on.
func (b *Broker) endSession(sh *shard, s *session, why string, later bool) {
	if s.will != nil {
		// Waiting out its delay, or - for a client connected when the broker
		// last stopped - kept with no due moment until the session ends.
		b.fireWill(s, WillSessionEnded)
	}
	s.ended = true
	s.will = nil
	b.stopTimer(s)
	for pid := range s.rareOrNone().holds {
		b.dropHold(s, pid)
	}
	// Each engine lets go of what it served s - broadcast gives what its
	// groups handed it, and what its last connection left unfinished, back
	// to them, before the session leaves them - then its filters go.
	b.endEngines(s)
	for filter, sub := range s.filters {
		if sub.part != nil {
			b.partitions.forget(filter, s.id)
		}
	}
	b.counters.Subscriptions.Add(-int64(len(s.filters)))
	clear(s.filters)
	var returned []store.Returned
	if r := s.rare; r != nil {
		releaseCarry(r.carry)
		r.carry = nil
		returned = r.givenBack
		r.givenBack = nil
	}
	if sh.sessions[s.id] == s {
		delete(sh.sessions, s.id)
	}
	if later {
		b.storeLater(sh, s.id, func(*shard) { b.storeEnd(s.id, returned) })
	} else {
		b.storeEnd(s.id, returned)
	}
	if why != "" {
		b.log.Debug("session ended", "client_id", s.id, "why", why)
	}
}

// storageFailed counts and logs a store failure nobody is waiting to be told.
func (b *Broker) storageFailed(what, clientID string, err error) {
	b.counters.sessionStorageError()
	// One line per kind of failure every ten seconds, with how many were
	// not written: a full or failing disk fails every publish alike.
	ok, unsaid := b.logBound.allow("storage "+what, clientID, b.now())
	if !ok {
		return
	}
	b.log.Error("session store failed", "what", what, "client_id", string(Cut([]byte(clientID), b.opts.MaxTopicLength)), "error", err,
		"also_failed_since_last_line", unsaid)
}

// Publish routes p to the subscribers it reaches and answers its PUBACK
// code, with why for a refusal.
func (b *Broker) Publish(c delivery.Client, p *codec.Publish) (codec.ReasonCode, string) {
	eng, code, why := b.admitPublish(c, p, nil)
	if eng == nil {
		return code, why
	}
	code, why = eng.Publish(c.ClientID(), p)
	b.countEngineRefusal(code)
	return code, why
}

// countEngineRefusal counts a publish its engine refused (a channel at its
// max_bytes: 0x97; broadcast's retained store or log unable to keep it) in
// saguin_publish_refused_total, as the broker's own refusals are; the engine
// has logged it.
func (b *Broker) countEngineRefusal(code codec.ReasonCode) {
	if code >= 0x80 {
		b.counters.PublishRefused.Add(delivery.ReasonOf(code))
	}
}

// admitPublish is a publish up to its engine: the rate, the bounds, the broker's own
// topics (answered here), the structural rules and the acl_file. It returns
// the engine whose Publish takes p, or nil with p's answer. route is p's
// topic's engine when the caller has looked it up already (a publish run),
// nil to have it looked up here.
func (b *Broker) admitPublish(c delivery.Client, p *codec.Publish, route engine.Engine) (engine.Engine, codec.ReasonCode, string) {
	// The rate comes first: before the topic is resolved or anything kept,
	// so nothing accumulates whatever an over-eager client does. Said at
	// debug, since a client held to its rate makes one line per publish.
	// The clock is read only with a budget to charge: a client held to no
	// figure reads none here.
	if f, entry := b.publishFigures(c); f.bounded() && !b.budgets.take(c.ClientID(), len(p.Payload), b.now(), f) {
		b.counters.PublishRefused.Add(delivery.ReasonPublishRateExceeded)
		b.log.Debug("publish refused", "client_id", c.ClientID(), "topic", string(p.Topic), "code", codec.QuotaExceeded.String(), "why", "publish rate exceeded")
		if entry {
			return answered(codec.QuotaExceeded, "over the publish_rate or publish_bytes of the acl_file entry applying to this client")
		}
		return answered(codec.QuotaExceeded, "over limits.publish_rate or limits.publish_bytes")
	}
	if n, size := headers(&p.Properties); n > b.opts.MaxHeaderCount {
		return answered(b.refusePublish(c.ClientID(), p, codec.QuotaExceeded, "more User Properties than limits.max_header_count"))
	} else if size > b.opts.MaxHeaderBytes {
		return answered(b.refusePublish(c.ClientID(), p, codec.QuotaExceeded, "User Properties larger than limits.max_header_bytes"))
	}
	switch string(p.Topic) {
	case HangUpTopic:
		return answered(b.hangUp(c, p))
	case PointReadTopic:
		return answered(b.pointRead(c, p))
	}
	if isSeek(p.Topic) {
		return answered(b.seek(c, p))
	}
	if code, why, ok := b.queueAnswer(c, p); ok {
		if code != codec.Success {
			return answered(b.refusePublish(c.ClientID(), p, code, why))
		}
		if p.QoS == 2 {
			// Applied now (a re-sent PUBLISH names a consumed delivery and
			// is ignored); held where nothing is delivered, to finish the
			// exchange.
			return answered(b.hold(c, p, nil))
		}
		return nil, code, why
	}
	if strings.HasPrefix(string(p.Topic), cataloguePrefix) {
		return answered(b.catalogue(c, p))
	}
	if code, why := b.checkTopic(p.Topic); code != codec.Success {
		if code == codec.NotAuthorized {
			return answered(b.logRefusal(c.ClientID(), p, code, why)) // $SYS: RFC 0005 counts it nowhere
		}
		return answered(b.refusePublish(c.ClientID(), p, code, why))
	}
	if err := codec.CheckPayloadFormat(p); err != nil {
		return answered(b.refusePublish(c.ClientID(), p, codec.PayloadFormatInvalid, "Payload Format Indicator says UTF-8 and the payload is not"))
	}
	// The structural rules have refused what they refuse; the acl_file
	// may only narrow what is left.
	if code, why := b.authorizePublish(c, p); code != codec.Success {
		return nil, code, why
	}
	eng := route
	if eng == nil {
		eng = b.routes.target(p.Topic) // a channel's, or broadcast
	}
	if deadLetterTarget(eng) {
		return answered(b.refusePublish(c.ClientID(), p, codec.NotAuthorized, "the topic is in dead-letter channel "+eng.Name()+", which only its queue's dead-letter move writes"))
	}
	if p.QoS == 2 {
		return answered(b.hold(c, p, eng)) // routed at its PUBREL (Release), by the engine it held it for
	}
	return eng, 0, ""
}

// answered is admit's return for a publish answered without an engine.
func answered(code codec.ReasonCode, why string) (engine.Engine, codec.ReasonCode, string) {
	return nil, code, why
}

// headers counts a publish's User Properties and their bytes, names and
// values together.
func headers(p *codec.Properties) (n, size int) {
	for _, u := range p.User {
		size += len(u.Key) + len(u.Value)
	}
	return len(p.User), size
}

// refusePublish counts and logs a refused publish, whatever its QoS (RFC
// 0002: every refusal is logged, so one with no reply at all is still
// visible; RFC 0005 counts it by its code).
func (b *Broker) refusePublish(clientID string, p *codec.Publish, code codec.ReasonCode, why string) (codec.ReasonCode, string) {
	b.counters.PublishRefused.Add(delivery.ReasonOf(code))
	return b.logRefusal(clientID, p, code, why)
}

// logRefusal logs a refused publish that refusePublish's count does not
// take, or has already taken under a finer reason.
//
// The line is bounded however the client behaves: the topic is cut to
// limits.max_topic_length (a topic refused for its length would otherwise be
// logged whole), and one cause is written at most once every ten seconds for
// a client (logBound), the line saying how many went unwritten since the last.
func (b *Broker) logRefusal(clientID string, p *codec.Publish, code codec.ReasonCode, why string) (codec.ReasonCode, string) {
	ok, unsaid := b.logBound.allow("publish "+why, clientID, b.now())
	if !ok {
		return code, why
	}
	b.log.Warn("publish refused", "client_id", clientID, "topic", string(Cut(p.Topic, b.opts.MaxTopicLength)), "qos", p.QoS,
		"code", code.String(), "why", why, "also_refused_since_last_line", unsaid)
	return code, why
}

// publishAs is a publish the broker makes for a client - its Will - routed
// to the engine its topic belongs to and never held, at any QoS (RFC 0003
// "Exactly once": Sagüin's own publishers are never held).
func (b *Broker) publishAs(publisher string, p *codec.Publish) (codec.ReasonCode, string) {
	return b.routes.target(p.Topic).Publish(publisher, p)
}

// route is broadcast's publish path (broadcastEngine.Publish) every
// publisher takes - a client, a Will: the retained store, then every
// subscriber the topic reaches, live or, for a session that is away, through
// the broadcast log.
//
// A refusal is logged here and counted by the caller, as every engine's is
// (countEngineRefusal): counted here too, it would be counted twice.
func (b *Broker) route(publisher string, p *codec.Publish) (codec.ReasonCode, string) {
	if p.Retain {
		if code, why := b.retain(publisher, p); code != codec.Success {
			return b.logRefusal(publisher, p, code, why)
		}
	}
	if err := b.routeLogged(publisher, p, 0, 0); err != nil {
		return b.logRefusal(publisher, p, codec.ImplementationSpecificError, "the broadcast log could not keep the message")
	}
	return codec.Success, ""
}

// routeLogged delivers p to every subscriber the topic reaches. With offset 0
// the message is written to the broadcast log once if a session that is away
// is owed it; otherwise it is already in the log at offset (a released
// exactly-once publish) and the sessions away are made to owe it there. The
// error is a log write that failed other than for room: the sessions away
// are not owed the message, those connected were sent it.
func (b *Broker) routeLogged(publisher string, p *codec.Publish, offset uint64, size int64) error {
	// Built at the first delivery, from the pool: what keeps it takes a
	// reference, and routing it allocates nothing (delivery.Message).
	var m *delivery.Message
	// Every delivery is asked of the acl_file as it stands at this moment,
	// not only the SUBSCRIBE that made it: a re-read applies to sessions
	// that send no SUBSCRIBE again (RFC 0002 "What a refused client sees").
	// One not allowed is not sent, as if acknowledged.
	var ask *readCheck
	var check readCheck
	if a := b.access.Load(); a != nil && a.ACL != nil {
		check.rules, check.t = a.ACL, bytesString(p.Topic)
		ask = &check
	}
	away := b.bcast.scratch()
	ms := matchPool.Get().(*matches)
	defer ms.release()
	b.subs.match(p.Topic, func(s *session, sub subscription) {
		if sub.noLocal && s.id == publisher {
			return
		}
		if sub.part != nil && !sub.part.Accepts(unsafe.String(unsafe.SliceData(p.Topic), len(p.Topic))) {
			return // outside the subscriber's declared slice (saguin-filter)
		}
		ms.add(s, sub)
	})
	b.counters.BroadcastPublished.Add(1)
	if len(ms.list) == 0 {
		b.counters.BroadcastUnmatched.Add(1)
	}
	// One copy per session, at the highest QoS its matching filters were
	// granted, carrying every identifier (RFC 0003; MQTT 5 3.3.4).
	for i := range ms.list {
		x := &ms.list[i]
		if x.s.group != nil {
			b.shareDeliver(x.s.group, p, &m, away, ask)
			continue
		}
		if ask != nil {
			if who := x.s.who.Load(); !x.read.covered(who, ask.rules) && !ask.allowsMatch(x, who) {
				continue
			}
		}
		qos := min(p.QoS, x.qos)
		if qos > 0 && x.s.expiry > 0 {
			// A session that outlives its connection is served from the
			// log, connected or not, so what it has in flight survives.
			away.add(x.s)
			continue
		}
		ref := x.s.client.Load()
		if ref == nil {
			continue
		}
		if m == nil {
			m = delivery.AcquireMessage(p, b.now)
		}
		ref.c.Deliver(m, delivery.Delivery{QoS: qos, Retain: p.Retain && x.rap, SubscriptionIDs: x.ids})
	}
	var err error
	switch {
	case offset != 0:
		b.bcast.keepLogged(offset, size, away, m)
	case len(away.sessions) > 0:
		err = b.bcast.keep(publisher, p, away, m)
	}
	b.bcast.release(away)
	// Every delivery holds its own reference to m now: the route lets go.
	m.Release()
	return err
}

// arrived tells every engine that keeps one that the client's SUBSCRIBE
// has had all its filters answered.
func (b *Broker) arrived(clientID string) {
	for _, e := range b.routes.engines() {
		if a, ok := e.(engine.Arriver); ok {
			a.Arrived(clientID)
		}
	}
}

// checkTopic applies RFC 0002 "Publishing" to a topic name: 0x90 over
// max_topic_length or max_topic_levels, in the reserved $saguin/ space, or
// beginning $share/; 0x87 in the $SYS tree.
func (b *Broker) checkTopic(t []byte) (codec.ReasonCode, string) {
	s := string(t)
	switch {
	case len(t) > b.opts.MaxTopicLength:
		return codec.TopicNameInvalid, "topic is longer than limits.max_topic_length"
	case topic.Levels(s) > b.opts.MaxTopicLevels:
		return codec.TopicNameInvalid, "topic is deeper than limits.max_topic_levels"
	case strings.HasPrefix(s, topic.SaguinPrefix):
		return codec.TopicNameInvalid, "topic is in the reserved $saguin/ space"
	case strings.HasPrefix(s, topic.SharePrefix):
		return codec.TopicNameInvalid, "$share/ is a subscription form, not a topic"
	case strings.HasPrefix(s, topic.SysPrefix):
		return codec.NotAuthorized, "topic is in the $SYS tree"
	}
	return codec.Success, ""
}

// checkFilter applies RFC 0002's SUBACK refusals to a plain filter.
func (b *Broker) checkFilter(filter string) (codec.ReasonCode, string) {
	switch {
	case topic.ValidateFilter(filter) != nil:
		return codec.TopicFilterInvalid, "not a topic filter: + and # take a whole level, # only the last"
	case topic.Levels(filter) > b.opts.MaxTopicLevels:
		return codec.TopicFilterInvalid, "deeper than limits.max_topic_levels"
	case strings.HasPrefix(filter, topic.QueuePrefix):
		return codec.TopicFilterInvalid, "names no queue"
	case strings.HasPrefix(filter, topic.SaguinPrefix):
		return codec.NotAuthorized, "nothing is delivered under $saguin/ but a queue's form and a seek reply"
	case strings.HasPrefix(filter, topic.SysPrefix):
		return codec.NotAuthorized, "nothing is delivered under $SYS"
	}
	return codec.Success, ""
}

// undeliverableWill names why a Will on topic could never be delivered - RFC
// 0002's 0x90 at CONNECT - or returns "". A Will is a publish the broker
// makes for the client later, so it is held to every rule a publish is, and
// one that could only ever be refused is refused now, while the client can
// still be told.
func (b *Broker) undeliverableWill(t []byte) string {
	if topic.ValidateName(string(t)) != nil {
		return "the Will topic is not a topic name"
	}
	if code, why := b.checkTopic(t); code != codec.Success {
		return "the Will topic: " + why
	}
	if e := b.routes.target(t); deadLetterTarget(e) {
		return "the Will topic is in dead-letter channel " + e.Name() + ", which only its queue's dead-letter move writes"
	}
	return ""
}

// Subscribe grants one filter (the QoS asked for, at most 2), records it in
// the session store before the SUBACK, and sends the retained messages it
// matches; a refusal comes with why.
func (b *Broker) Subscribe(c delivery.Client, f []byte, o delivery.SubscribeOptions) (codec.ReasonCode, string) {
	if !o.More {
		// The packet's last filter, granted or not: the channels serve
		// every filter of it from here (engine.Arriver).
		defer b.arrived(c.ClientID())
	}
	filter := string(f)
	_, code, why, shared := b.checkShared(c, filter)
	form := channelrules.FormNone
	if !shared {
		var judged bool
		if form, code, why, judged = b.reservedForm(c, filter, o); !judged {
			code, why = b.checkFilter(filter)
		}
	}
	var d channelrules.Declaration
	if code == codec.Success && len(o.User) > 0 {
		// saguin-filter and saguin-deletions are the packet's: a malformed
		// declaration refuses every filter of it (checklist A11.9).
		d, code, why = channelrules.ReadSubscribe(o.User)
		if code == codec.Success && d.Partition.Declared() && (shared || strings.HasPrefix(filter, topic.QueuePrefix)) {
			// Judged by the filter's prefix alone, for this filter only
			// (RFC 0003 "Where it applies"): a group or a queue already
			// divides what it is given.
			code, why = codec.ImplementationSpecificError, "saguin-filter is refused on a shared subscription and on a queue's form, which already divide what they are given"
		}
	}
	if code != codec.Success {
		return code, why
	}
	id := c.ClientID()
	sh := b.shard(id)
	sh.mu.Lock()
	s := sh.sessions[id]
	if !s.ownedBy(c) {
		sh.mu.Unlock()
		return codec.UnspecifiedError, "the session was taken over" // between packets
	}
	who := s.who.Load()
	g := b.grantsFor(who, id)
	if g != nil {
		switch {
		case shared && g.Denied(acl.Share):
			// Told Shared Subscription Available 0 at CONNECT: asking
			// anyway is a Protocol Error (MQTT 5 3.2.2.3.13).
			sh.mu.Unlock()
			b.log.Warn("disconnected: a $share/ SUBSCRIBE from a client denied share", "client_id", id, "filter", filter)
			c.Kick(codec.SharedSubscriptionsNotSupported)
			return codec.SharedSubscriptionsNotSupported, "broker: features denies this client share"
		case form == channelrules.FormQueue && !g.AllowsChannel(strings.TrimPrefix(filter, topic.QueuePrefix), acl.Consume):
			sh.mu.Unlock()
			b.log.Warn("subscription refused", "client_id", id, "filter", filter, "code", codec.NotAuthorized.String(), "why", "the acl_file grants no consume on the queue")
			return codec.NotAuthorized, "not authorized: the acl_file grants this client no consume on the queue"
		case form == channelrules.FormNone && !g.AllowsFilter(sharedInner(filter), acl.Read):
			sh.mu.Unlock()
			b.log.Warn("subscription refused", "client_id", id, "filter", filter, "code", codec.NotAuthorized.String(), "why", "the acl_file grants no read on every topic this filter reaches")
			return codec.NotAuthorized, "not authorized: the acl_file grants this client no read on every topic the filter reaches"
		case o.QoS == 2 && g.Denied(acl.QoS2):
			o.QoS = 1 // granted 1, and delivered at no more than 1
		}
	}
	_, existed := s.filters[filter]
	if !existed && len(s.filters) >= b.opts.MaxSubscriptions {
		say := !s.quotaSaid
		s.quotaSaid = true
		sh.mu.Unlock()
		if say {
			b.log.Warn("subscription refused", "client_id", id, "code", codec.QuotaExceeded.String(), "why", "limits.max_subscriptions", "max_subscriptions", b.opts.MaxSubscriptions)
		}
		return codec.QuotaExceeded, "past limits.max_subscriptions"
	}
	if form == channelrules.FormQueue {
		o.QoS = 1 // a queue's offers are sent at QoS 1, granted 0x01 at QoS 2
	}
	sub := subscription{qos: min(o.QoS, 2), noLocal: o.NoLocal, retainAsPublished: o.RetainAsPublished,
		retainHandling: o.RetainHandling, id: o.SubscriptionID, logOffset: b.sessions.Log().Next(), read: newReadGrant(filter)}
	if g != nil && sub.read != nil {
		// AllowsFilter granted the whole filter just now.
		sub.read.last.Store(&readAnswer{who: who, rules: g.ACL, whole: true})
	}
	if d.Partition.Declared() {
		sub.part = &d.Partition
	}
	var groupCursor uint64
	if shared && s.expiry > 0 && !b.groupHasCursor(filter) {
		// The group's first member whose session outlives its connection
		// brings its cursor, in the write that stores the filter (RFC 0002).
		groupCursor = b.bcast.log.Next()
	}
	// The filter is stored first, the shard lock let go meanwhile on a
	// disk provider (storeNow); the session holds it only once stored.
	if err := b.storeFilter(sh, s, filter, sub, groupCursor); err != nil {
		// The session is kept as it was: an existing subscription goes on
		// being served as it was granted.
		sh.mu.Unlock()
		if store.IsFull(err) {
			b.log.Warn("subscription refused", "client_id", id, "code", codec.QuotaExceeded.String(), "why", "the session store is full")
			return codec.QuotaExceeded, "the session store is full"
		}
		b.storageFailed("storing a subscription", id, err)
		return codec.ImplementationSpecificError, "the session store could not keep the subscription"
	}
	if s.ended {
		// Ended meanwhile (a Clean Start or a takeover ended it); its
		// ending, written after, took the filter with it.
		sh.mu.Unlock()
		return codec.UnspecifiedError, "the session was taken over"
	}
	prev, existed := s.filters[filter]
	if s.filters == nil {
		s.filters = make(map[string]subscription)
	}
	s.filters[filter] = sub
	if !existed {
		s.quotaSaid = false
		b.counters.Subscriptions.Add(1)
	}
	// The channels the filter reaches serve it, then broadcast, which every
	// filter reaches (the topics no channel claims); a channel refusing a
	// new filter (RFC 0002's SUBACK table) has it forgotten again.
	granted := filterOf(filter, sub, !existed, o.User)
	granted.Options.More = o.More
	if code, why := b.subscribeChannels(s, granted); code != codec.Success {
		if !existed {
			b.forgetRefused(sh, s, filter)
		}
		sh.mu.Unlock()
		return code, why
	}
	b.broadcast.Subscribe(s, granted) // never refuses: checkShared and checkFilter did
	if d.Partition.Declared() || prev.part != nil {
		b.partitions.declare(b.log, filter, id, d.Partition.Count)
	}
	if shared {
		// Nothing retained is sent to a shared subscription (MQTT 5
		// 4.8.2). The group's first kept member brought its cursor, stored
		// with the filter: the group holds it from now.
		if groupCursor > 0 {
			b.shares.mu.Lock()
			if g := b.shares.groups[filter]; g != nil && g.saved == 0 {
				g.saved = groupCursor
			}
			b.shares.mu.Unlock()
		}
		sh.mu.Unlock()
		return codec.ReasonCode(sub.qos), ""
	}
	// Taken over meanwhile: the session holds what was stored, and its new
	// connection is sent nothing on this one's behalf.
	mine := s.ownedBy(c)
	sh.mu.Unlock()
	// Broadcast's retained values go after the lock is let go: the seam's
	// Subscribe runs under it, and they are read from the retained store.
	if mine && (o.RetainHandling == 0 || (o.RetainHandling == 1 && !existed)) {
		b.sendRetained(c, s, filter, sub)
	}
	return codec.ReasonCode(sub.qos), ""
}

// forgetRefused takes back a new filter a channel engine refused after it was
// stored: from the engines it reached, the store and the session. Shard lock
// held (let go across the write, storeNow).
func (b *Broker) forgetRefused(sh *shard, s *session, filter string) {
	b.unsubscribeChannels(s, filter)
	err := b.storeNow(sh, s.id, func(*shard) error {
		_, err := b.sessions.Unsubscribe(s.id, filter)
		return err
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		b.storageFailed("forgetting a subscription a channel refused", s.id, err)
	}
	if _, ok := s.filters[filter]; ok {
		delete(s.filters, filter)
		b.counters.Subscriptions.Add(-1)
		b.partitions.forget(filter, s.id)
	}
}

// Unsubscribe removes one filter: 0x00, or 0x11 when the session held none.
// The UNSUBACK follows the stored removal; a store that cannot forget the
// filter leaves it subscribed and answers 0x83.
func (b *Broker) Unsubscribe(c delivery.Client, f []byte) codec.ReasonCode {
	filter := string(f)
	id := c.ClientID()
	sh := b.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s := sh.sessions[id]
	if !s.ownedBy(c) {
		return codec.NoSubscriptionExisted // taken over: not this connection's session
	}
	if _, ok := s.filters[filter]; !ok {
		return codec.NoSubscriptionExisted
	}
	// One filter forgotten, with its group's cursor when this was the
	// group's last stored holder. A session the store does not hold (one
	// accepted with no room) has nothing stored to forget.
	err := b.storeNow(sh, id, func(*shard) error {
		_, err := b.sessions.Unsubscribe(id, filter)
		return err
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		b.storageFailed("forgetting a subscription", id, err)
		return codec.ImplementationSpecificError
	}
	if _, ok := s.filters[filter]; !ok || s.ended {
		return codec.Success // the session ended, or a takeover's ending, meanwhile
	}
	delete(s.filters, filter)
	b.counters.Subscriptions.Add(-1)
	b.partitions.forget(filter, id)
	b.unsubscribeChannels(s, filter)
	b.broadcast.Unsubscribe(s, filter)
	return codec.Success
}

// Sessions reports how many sessions are held, connected or not.
func (b *Broker) Sessions() int {
	n := 0
	for i := range b.shards {
		sh := &b.shards[i]
		sh.mu.Lock()
		n += len(sh.sessions)
		sh.mu.Unlock()
	}
	return n
}

// Stop marks the start of a graceful stop: the connections it ends keep
// their sessions as connected clients' and their Wills with no due moment.
func (b *Broker) Stop() { b.stopping.Store(true) }

// Close stores every acknowledgement still waiting and stops the broker's
// timers, writer and shared groups' drainer, waiting for each: nothing of
// theirs runs against the stores once it returns. The stores are the
// caller's to close after it.
func (b *Broker) Close() {
	b.closed.Do(func() {
		close(b.done)
		b.bcast.full.stop()
		b.wg.Wait()
		b.closeEngines()
		b.later.wait()
		if err := b.broadcast.Close(); err != nil {
			b.log.Error("closing the broadcast engine", "error", err)
		}
		for i := range b.shards {
			sh := &b.shards[i]
			sh.mu.Lock()
			for _, s := range sh.sessions {
				b.stopTimer(s)
				s.ended = true
			}
			sh.mu.Unlock()
		}
	})
}
