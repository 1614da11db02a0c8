package store

import "time"

// Provider is one storage provider: one memory store with its snapshot
// directory, or one sqlite database. Everything about a channel - records,
// next, floor, bytes, its readers' positions - lives in the one provider the
// channel names (notes-0004 "Two providers").
//
// Asking twice for the same name returns the store already built: two stores
// on one channel would be two writers with two copies of one counter. Asking
// for a name already open as another kind fails with ErrKindMismatch, as does
// a stored channel of another kind.
type Provider interface {
	// Name is the provider's name in the configuration.
	Name() string
	// Type is "memory" or "sqlite".
	Type() string

	// Append opens the append channel name. Stored next and floor are
	// loaded, never derived from the records (invariants 1 and 9).
	Append(name string, opts ChannelOptions) (AppendLog, error)
	// Latest opens the latest channel name.
	Latest(name string, opts ChannelOptions) (Latest, error)
	// Queue opens the queue name together with its dead-letter channel
	// name+"__dlq", which always lives on the same provider. Every restored
	// job comes back available: no holder, epoch or deadline (invariant 15).
	Queue(name string, opts QueueOptions) (Queue, error)
	// Retained opens the retained store for broadcast topics.
	Retained(retentionPeriod time.Duration) (Retained, error)
	// Sessions opens the session store with its broadcast log.
	Sessions() (Sessions, error)

	// Bytes is what the provider holds: on memory, the sum of RecordSize and
	// SessionSize over what it keeps; on sqlite, the file's pages in use.
	Bytes() int64
	// MaxBytes is the provider's bound, 0 for none.
	MaxBytes() int64

	// SweepBySize removes, on every channel with retention_bytes, the oldest
	// records until the channel is under its bound. It reads no storage for a
	// channel under its bound (the kept byte counter answers). It never holds
	// a lock across disk I/O, does not use the reserve, and reports through
	// Hooks.RetentionRemoved and Hooks.PositionLost. Returns records removed.
	SweepBySize() (int, error)
	// SweepByAge removes, on every channel with a retention period (and a
	// latest channel's tombstones past deletion_retention_period, and the
	// retained store's values past its period), the records older than the
	// period at now. A record with no time is never too old.
	SweepByAge(now time.Time) (int, error)
	// ShortestAge is the shortest age bound of any kind configured on the
	// stores opened so far (retention_period, dlq_retention_period,
	// deletion_retention_period, the retained period), 0 for none. The age
	// sweep's period is max(1s, ShortestAge/10) (AgeSweepPeriod).
	ShortestAge() time.Duration

	// Close ends the provider. A memory provider with a snapshot_dir writes
	// its snapshot first (the graceful stop) and returns every failure
	// joined; a sqlite provider checkpoints its log. The lock is released.
	Close() error
}

// Counters are what a channel store keeps in memory and hands out without
// failing: they feed the delivery path and the metrics, where an error could
// not be acted on. Each is loaded from stored state at open and advanced only
// from what a committed write actually wrote.
type Counters interface {
	// Name is the channel's name.
	Name() string
	// Next is the offset the next record gets.
	Next() uint64
	// Floor is the oldest offset still readable; below it, records are gone.
	Floor() uint64
	// Bytes is the sum of RecordSize over what the channel holds.
	Bytes() int64
	// Len is how many records (values, jobs) the channel holds.
	Len() int
}

// Holder keeps a channel's exactly-once publishes between PUBREC and PUBREL.
// A held publish has no offset: no reader and no retention sees it, but it
// counts against the provider's bound.
type Holder interface {
	// Hold stores h. It may not use the reserve: a provider with no room
	// answers ErrProviderFull (0x97 on the PUBREC). One transaction.
	Hold(h Held) error
	// ReleaseHeld writes the held record at the channel's next offset (as an
	// append, a latest Set or an enqueue, by the channel's kind) and deletes
	// the hold, in one operation: never both present, never neither. It may
	// use the reserve; it is still refused ErrChannelFull past the channel's
	// own max_bytes. ErrNotFound when nothing is held under the key.
	ReleaseHeld(clientID string, packetID uint16) (Record, error)
	// DropHeld deletes a hold (expired, or its session did not come back).
	DropHeld(clientID string, packetID uint16) (bool, error)
	// Held lists every hold, oldest first.
	Held() ([]Held, error)
}

// Positions are the durable readers' cursors on one channel, kept in the
// same provider as the records they point into.
type Positions interface {
	// Position is reader's stored position.
	Position(reader string) (Position, bool, error)
	// SavePosition stores p. A relieving write: it may use the reserve.
	SavePosition(p Position) error
	// DropPosition forgets reader's position.
	DropPosition(reader string) (bool, error)
	// LowestPosition is the lowest stored position and how many readers
	// hold one, in one pass. With no readers it answers (Next(), 0).
	LowestPosition() (lowest uint64, readers int)
	// FurthestBehind lists at most max stored positions, the lowest offset
	// first and readers in name order among equals: who is most behind,
	// for /v1/operations/consumers. Bounded by max however many readers
	// there are; max <= 0 answers none.
	FurthestBehind(max int) ([]Position, error)
}

// AppendLog is an append channel (and a queue's dead-letter channel): a
// replayable log of records at rising offsets.
type AppendLog interface {
	Counters
	Positions
	Holder

	// Append stores r at Next() and returns it with its offset. Durable
	// before it returns (sqlite: committed, perhaps with other publishes in
	// one group commit; memory: in RAM, under the channel's lock), so the
	// broker acknowledges only what is stored (invariant 16). The offset is
	// reserved and the counters advanced only by a committed write; a failed
	// write hands its offset back, so none is skipped or reused (invariant
	// 9). Refused with
	// ErrChannelFull past the channel's max_bytes, ErrProviderFull past the
	// provider's bound less its reserve.
	Append(r Record) (Record, error)
	// ReadFrom reads up to max records at offsets >= from, in one read
	// transaction with the floor and next (Window). A from below the floor
	// is refused with a *BelowFloorError and no records - never served
	// (invariant 1). dst is reused for the records when it has room.
	ReadFrom(from uint64, max int, dst []Record) (Window, error)
	// FirstAtOrAfter is the lowest offset whose time is >= t, examining every
	// candidate (receipt times are not monotonic in offset order after a
	// clock step). Records with no time never match. ok is false when none.
	FirstAtOrAfter(t time.Time) (offset uint64, ok bool, err error)
	// SetMaxBytes changes the channel's max_bytes (0 for none).
	SetMaxBytes(n int64)
	// Trim removes the records older than before (zero Time: no age rule)
	// and then the oldest until Bytes() <= maxBytes (<= 0: no size rule),
	// walking from the oldest and stopping at the first that stays. The
	// floor, the channel's bytes and the provider's bytes move in the same
	// operation as the removal (sqlite: one transaction; memory: one lock),
	// so no reader sees rows gone and the floor not raised (invariant 1).
	// Does not use the reserve.
	Trim(before time.Time, maxBytes int64) (removed int, freed int64, err error)
}

// RunAppender is an AppendLog that takes several records in one call, so
// that a connection's window of publishes can share one durable write (a
// sqlite group commit) instead of each waiting for its own. out[i] and
// errs[i] are rs[i]'s outcome exactly as Append(rs[i]) would answer it; the
// records take offsets in rs's order, and AppendRun returns only once every
// one is as durable as Append promises.
type RunAppender interface {
	AppendRun(rs []Record, out []Record, errs []error)
}

// Latest is a latest channel: one current value per topic, each with an
// offset so a consumer can tell which of two values is newer.
type Latest interface {
	Counters
	Positions
	Holder

	// Set replaces topic r.Topic's value with r at Next(). A record with an
	// empty payload is a deletion: use Delete.
	Set(r Record) (Record, error)
	// Get is the topic's entry; a tombstone answers ok with Deleted set.
	Get(topic string) (v Value, ok bool, err error)
	// Delete replaces the topic's value with a tombstone at Next() carrying
	// r's fields (topic, time, client id) and no payload. Deleting a topic
	// with no current value stores nothing and answers ok=false.
	Delete(r Record) (v Value, ok bool, err error)
	// Changes returns, in offset order, up to max entries with offset >=
	// since whose topic match accepts (nil accepts all); tombstones only when
	// withDeletions. dst is reused when it has room.
	Changes(since uint64, withDeletions bool, match func(topic string) bool, max int, dst []Value) ([]Value, error)
	// Count is how many current (non-deleted) values the channel holds.
	Count() int
	// Trim removes values set before valuesBefore and tombstones stored
	// before deletionsBefore (a zero Time disables either), raising the floor
	// past the highest offset removed in the same operation.
	Trim(valuesBefore, deletionsBefore time.Time) (removed int, freed int64, err error)
}

// LeaseOf is one Lease of a Settle.
type LeaseOf struct {
	D             Delivery
	Now, Deadline time.Time
}

// Queue is a queue channel: unresolved work handed to one worker at a time.
// The delivery state (holder, epoch, deadline) is kept in memory by both
// providers and never stored; the attempt count and first/last delivery
// times are stored (invariant 15).
type Queue interface {
	Counters
	Holder

	// Enqueue stores r as an available job at Next(). Refused with
	// ErrChannelFull past the queue's max_bytes (backpressure: a queue is never
	// trimmed, invariant 2). Durable before it returns, like Append.
	Enqueue(r Record) (Record, error)
	// Depth is how many unresolved jobs the queue holds (= Len()).
	Depth() int
	// SetMaxBytes changes the queue's max_bytes (0 for none).
	SetMaxBytes(n int64)
	// SetBackoff sets the gap a returned job waits after its nth attempt
	// (retry.backoff); nil is no gap.
	SetBackoff(gap func(attempts uint32) time.Duration)

	// Offer hands the oldest available job whose backoff gap has run out at
	// now to a worker: it becomes DELIVERING with a new epoch, so exactly one
	// worker holds it (invariant 4) and every earlier delivery is superseded
	// (invariant 3). Jobs out with a worker or inside their gap are
	// skipped, never waited on. No write. ok is false when nothing can be
	// offered.
	Offer(holder string, now time.Time) (j Job, d Delivery, ok bool, err error)
	// Unsend returns a DELIVERING job whose PUBLISH was never put on the
	// wire, or whose worker went before its PUBACK, to AVAILABLE with its
	// attempt unspent. No write.
	Unsend(d Delivery) error
	// Lease records that the worker received the job (its PUBACK or its
	// answer, whichever first): the attempt count rises and the first/last
	// delivery times are set - one stored write, a relieving one that may use
	// the reserve - and the job becomes LEASED with the visibility deadline.
	// A second call for the same delivery changes nothing and answers the job.
	Lease(d Delivery, now, deadline time.Time) (Job, error)
	// Resolve removes the job for good (the worker's ack). Relieving.
	Resolve(d Delivery) error
	// Settle is every Lease of leases, in order, then every Resolve of
	// resolves, each with the outcome it would have alone (errs[i] for
	// leases[i], errs[len(leases)+k] for resolves[k]) - in one stored write
	// where the provider commits to disk (one sqlite transaction), so that
	// the workers a queue's goroutine hears from at once share one commit
	// instead of one each after another.
	Settle(leases []LeaseOf, resolves []Delivery) (jobs []Job, errs []error)
	// Release makes the job available again after the backoff gap measured
	// from gapFrom (the worker's answer, or when it last had the job); the
	// epoch advances so the old delivery is dead. No write.
	Release(d Delivery, gapFrom time.Time) (Job, error)
	// ExpiredLeases lists the leased deliveries whose deadline is before now.
	ExpiredLeases(now time.Time) []Delivery
	// ExpireOlderThan lists up to max available jobs (not out with a worker)
	// received before t, oldest first, for the dead-letter move with reason
	// "expired". A job with no time never expires.
	ExpireOlderThan(t time.Time, max int) ([]Job, error)
	// State is the job's volatile state and current epoch.
	State(offset uint64) (JobState, uint64, bool)
	// Jobs lists at most max unresolved jobs in ListedBefore order (most
	// attempts first, then the oldest) with their delivery state and no
	// payload, in memory bounded by max (JobList). No write.
	Jobs(max int) ([]ListedJob, error)

	// DeadLetter moves the job named by d out of the queue and into
	// DeadLetters() at its next offset, in one operation: the record keeps its
	// Message ID, takes topic (the broker's rewrite with the __dlq level) and
	// gains the saguin-dlq-* headers (DeadLetterRecord builds it). d.Epoch 0 names a job not out with any worker;
	// otherwise d must be the current delivery. Relieving: never refused for
	// room (it may use the reserve; no channel bound is checked). On failure
	// neither half happened, the job is as it was and the dead-letter offset
	// is handed back (invariant 5). sqlite: one transaction across both
	// tables; memory: the queue's lock held, the log's taken inside it.
	DeadLetter(d Delivery, topic, reason string, now time.Time) (Record, error)
	// DeadLetters is the queue's dead-letter channel, name+"__dlq".
	DeadLetters() AppendLog
}

// Retained is the retained store for broadcast topics: one current value per
// topic, no offsets for readers, bounded only by its provider.
type Retained interface {
	// Set stores r as topic r.Topic's value. Refused with ErrProviderFull
	// when the provider has no room; what is stored is untouched.
	Set(r Record) error
	// Delete removes the topic's value (a zero-length retained publish).
	Delete(topic string) (bool, error)
	Get(topic string) (Record, bool, error)
	// Range calls fn for every value whose topic match accepts (nil: all),
	// until fn returns false. fn must not call back into the store.
	Range(match func(topic string) bool, fn func(Record) bool) error
	// Page reads values in the order they were set, for a SUBSCRIBE's
	// paced pass (RFC 0002 "Retained messages on a broadcast topic"): up
	// to max values whose order number (Record.Offset, the store's own,
	// never shown to a reader) is at least since and whose topic match
	// accepts, and next, the since to read on from. A page may hold fewer
	// than max with more to come (a sparse filter is read a bounded stretch
	// at a time); the pass is over once next reaches the Next it began
	// under. A value set again takes a new order number. dst is reused.
	Page(since uint64, match func(topic string) bool, max int, dst []Record) (page []Record, next uint64, err error)
	// Next is the order number the next Set gives: above every value held.
	Next() uint64
	Count() int
	Bytes() int64
	// Trim removes values set before before (retention_period).
	Trim(before time.Time) (int, error)
}

// Sessions keeps persistent MQTT sessions, their windows and cursors, the
// broadcast log they are owed, and the shared groups' cursors and returned
// deliveries (notes-0004 "sessions, broadcast log, share_groups, ...").
//
// A shared group is keyed by the whole filter its members subscribed,
// "$share/<ShareName>/<filter>" (Subscription.Filter), and is kept while a
// stored session holds that filter: the write that removes the last one -
// End or Unsubscribe - removes the group's cursor and returned deliveries
// with it, so a group nobody can collect leaves nothing behind.
//
// Subscriptions are stored one filter at a time (Subscribe, Unsubscribe), so
// a session adding its thousandth filter writes one filter, not a thousand;
// Get and All return them ordered by filter.
type Sessions interface {
	// Put stores the whole session record (subscriptions and Will included),
	// replacing what was stored under its client id: a session begun new
	// removes, in this one write, whatever an ended one left there. On memory
	// the session is charged SessionSize against the provider: no room is
	// ErrProviderFull.
	Put(s Session) error
	// Update stores the session's expiry, disconnect time, Receive Maximum
	// and Will, leaving its subscriptions as they are stored. ErrNotFound
	// when the session is not stored; ErrProviderFull when a larger Will has
	// no room.
	Update(s Session) error
	// Subscribe adds sub to the stored session, or replaces the
	// subscription it holds with the same filter. For a shared subscription
	// (ShareGroup set) whose group has no cursor, a groupCursor above 0 is
	// stored as the group's cursor in the same write (RFC 0002: the first
	// member whose session outlives its connection brings it; no room for
	// the cursor is no room for the filter). ErrNotFound when the session is
	// not stored; ErrProviderFull when there is no room.
	Subscribe(clientID string, sub Subscription, groupCursor uint64) error
	// Unsubscribe removes the session's subscription to filter; false when
	// it held none. The last holder of a shared group's filter takes the
	// group's cursor and returned deliveries with it, in the same write.
	// Relieving: it may use the reserve.
	Unsubscribe(clientID, filter string) (bool, error)
	// Get reads one session.
	Get(clientID string) (Session, bool, error)
	// All reads every stored session, ordered by client id.
	All() ([]Session, error)
	// SetDisconnected records when the client went away (zero: connected).
	SetDisconnected(clientID string, at time.Time) error
	// End deletes the session, its in-flight window and its broadcast-log
	// cursor, writes the deliveries its ending returns to shared groups, and
	// drops the groups it was the last holder of (with their cursors and
	// returned rows), in one operation. It may use the reserve; the
	// returned deliveries are what a provider with no room even there
	// refuses (ErrProviderFull), and the caller then ends the session
	// without them.
	End(clientID string, returned []Returned) error

	// InFlight is the session's window, ordered by offset.
	InFlight(clientID string) ([]InFlight, error)
	// AddInFlight adds entries to the window (messages put on the wire).
	AddInFlight(clientID string, entries []InFlight) error
	// MarkReleased records that the entry's PUBREC arrived (PUBREL owed).
	MarkReleased(clientID string, key InFlightKey) error
	// Ack clears the acknowledged entries and moves the session's cursor in
	// the broadcast log to cursor, in one operation (relieving).
	Ack(clientID string, keys []InFlightKey, cursor uint64) error
	// Cursor is the session's position in the broadcast log.
	Cursor(clientID string) (uint64, bool, error)

	// Log is the broadcast log these sessions are owed.
	Log() BroadcastLog

	// GroupCursor is a shared group's cursor in the broadcast log.
	GroupCursor(group string) (uint64, bool, error)
	// SaveGroupCursor stores a shared group's cursor (relieving). A group no
	// stored session holds is not kept: ErrNotFound.
	SaveGroupCursor(group string, cursor uint64) error
	// Returned lists the deliveries returned to group, oldest first.
	Returned(group string) ([]Returned, error)
	// TakeReturned deletes a returned delivery as it is handed over to
	// another member; false when it was already taken.
	TakeReturned(group string, offset uint64) (bool, error)
}

// BroadcastEntry is a message in the broadcast log.
type BroadcastEntry struct {
	Record
	// ForShares: a channel's record copied for the shared groups over it.
	ForShares bool
	// OwedTo: a retained value copied for one session, its client id.
	OwedTo string
}

// BroadcastLog is the one log of QoS 1/2 broadcasts owed to sessions that
// outlive their connection, written once however many sessions are owed a
// message. Messages leave from anywhere once nobody owes them, so the log may
// have gaps; floor is the lowest offset still held and no offset is reused.
type BroadcastLog interface {
	Counters
	Holder

	// Append stores e at Next(). Refused with ErrProviderFull when the
	// provider has no room; the broker then releases the oldest messages
	// (Release) and tries again.
	Append(e BroadcastEntry) (BroadcastEntry, error)
	// ReadFrom reads up to max held messages at offsets >= from, skipping
	// released ones. A from below the floor is not an error here: a gap in
	// the broadcast log is the broker's accounting, not invariant 1's.
	ReadFrom(from uint64, max int, dst []BroadcastEntry) ([]BroadcastEntry, error)
	// Release removes the given messages (nobody owes them) in one operation,
	// raising the floor to the lowest offset still held. Relieving.
	Release(offsets []uint64) (freed int64, err error)
	// Oldest lists up to max of the oldest held messages' offsets, for the
	// broker to choose what gives way when the provider is full.
	Oldest(max int) ([]uint64, error)
}

// AgeSweepPeriod is how often the age sweep runs: a tenth of the shortest
// age bound configured, never below one second (also the period when none is
// configured).
func AgeSweepPeriod(shortest time.Duration) time.Duration {
	p := shortest / 10
	if p < time.Second {
		return time.Second
	}
	return p
}

// SizeSweepPeriod is how often the size sweep runs (fixed, not configurable).
const SizeSweepPeriod = time.Second
