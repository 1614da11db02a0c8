package store

import (
	"log/slog"
	"time"
)

// ChannelOptions are one append, latest or dead-letter channel's bounds (RFC
// 0002 "Bounds on what a channel holds"). Zero means "none" for each.
type ChannelOptions struct {
	// RetentionPeriod removes records older than this (append, latest, dlq).
	RetentionPeriod time.Duration
	// RetentionBytes removes the oldest records to stay under (append, dlq).
	RetentionBytes int64
	// MaxBytes refuses the record that would exceed it with ErrChannelFull
	// (append, dlq; a queue takes it in QueueOptions).
	MaxBytes int64
	// DeletionRetentionPeriod removes a latest channel's tombstones older
	// than this. The configuration supplies the spec's 1-day default.
	DeletionRetentionPeriod time.Duration
}

// QueueOptions are a queue's bounds and its dead-letter channel's.
type QueueOptions struct {
	// MaxBytes is the queue's backpressure bound: at it Enqueue is refused
	// with ErrChannelFull until resolutions free room. A queue never takes
	// retention (invariant 2).
	MaxBytes int64
	// DLQ are the bounds copied onto <queue>__dlq (dlq_retention_period,
	// dlq_retention_bytes).
	DLQ ChannelOptions
}

// Hooks are how a provider reports what the metrics count (RFC 0005). Any
// may be nil. They must not block and must not call back into the provider:
// the retention hooks run after the channel's lock is released, but
// PositionExpired and HoldAbandoned run while a store is being opened.
type Hooks struct {
	// RetentionRemoved: retention (by age or size) removed n records of a
	// channel (saguin_channel_retention_removed_total).
	RetentionRemoved func(channel string, n int)
	// PositionLost: a removal raised a channel's floor past a stored reader
	// position (saguin_channel_position_lost_total); called once per reader
	// per removal that passed it.
	PositionLost func(channel, reader string)
	// StorageError: a storage call or a periodic flush failed
	// (saguin_storage_errors_total{provider}).
	StorageError func(err error)
	// HoldAbandoned: a held exactly-once publish was dropped at load because
	// its file predates the shutdown that should have rewritten it
	// (saguin_qos2_abandoned_total).
	HoldAbandoned func(channel string, n int)
	// PositionExpired: a position whose session expired while the broker was
	// down was dropped at open.
	PositionExpired func(channel, reader string)
}

// MemoryOptions configure a memory provider (RFC 0002 provider keys).
type MemoryOptions struct {
	// Name is the provider's name in the configuration (used in errors).
	Name string
	// MaxBytes bounds everything the provider holds (records, values, jobs,
	// held publishes, retained values, sessions); 0 is unbounded.
	MaxBytes int64
	// Reserve is held back inside MaxBytes for the writes that relieve a full
	// provider (acknowledgement, attempt count, position, dead-letter move,
	// QoS 2 release): max_message_size + max_header_bytes. The configuration
	// refuses MaxBytes < 2*Reserve.
	Reserve int64
	// SnapshotDir is where snapshots are written at a graceful stop and read
	// at open, and where saguin.lock is taken; "" is snapshot_dir: none.
	SnapshotDir string
	// MaxSessionExpiry caps the session expiry interval every stored mqtt:
	// position is judged against at open (limits.max_session_expiry).
	MaxSessionExpiry time.Duration
	// Writer is the build's revision, written into every snapshot header.
	// Empty means "read it from the binary's build info".
	Writer string
	Hooks  Hooks
	Logger *slog.Logger
	// Now is the clock; nil is time.Now. Tests pass their own.
	Now func() time.Time
}

// CommitMode is how a sqlite provider groups publishes into transactions
// (RFC 0002 "How a sqlite provider commits publishes").
type CommitMode uint8

const (
	// CommitCollect (keys absent): collect without waiting, at most 256
	// records a transaction.
	CommitCollect CommitMode = iota
	// CommitEach (publish_commit_interval: none): a transaction per publish.
	CommitEach
	// CommitInterval (publish_commit_interval: <d> with
	// publish_commit_max_records): wait for company, close on whichever
	// comes first.
	CommitInterval
)

// MaxCollectBatch is the most records one collected transaction holds.
const MaxCollectBatch = 256

// SQLiteOptions configure a sqlite provider (RFC 0002 provider keys).
type SQLiteOptions struct {
	Name string
	// FilePath is the database file; its lock is FilePath + ".lock".
	FilePath string
	// MaxBytes bounds the file, as max_page_count = MaxBytes / page size;
	// 0 is unbounded.
	MaxBytes int64
	// Reserve: see MemoryOptions.Reserve; on sqlite a second, higher page
	// ceiling used only inside relieving transactions.
	Reserve int64
	// ReadConnections is read_connections as resolved by the configuration
	// (default 2, accepted 0..8; 0 puts every read on the write connection).
	ReadConnections int
	// FlushInterval is flush_interval; 0 means the 150ms default.
	FlushInterval time.Duration
	// CommitMode, PublishCommitInterval and PublishCommitMaxRecords are
	// publish_commit_interval and publish_commit_max_records.
	CommitMode              CommitMode
	PublishCommitInterval   time.Duration
	PublishCommitMaxRecords int
	// LockTimeout is how long opening waits on a held lock before refusing;
	// 0 refuses at once.
	LockTimeout      time.Duration
	MaxSessionExpiry time.Duration
	Writer           string
	Hooks            Hooks
	Logger           *slog.Logger
	Now              func() time.Time
}
