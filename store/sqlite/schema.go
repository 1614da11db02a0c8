package sqlite

import "github.com/saguin-edge/saguin/store"

// SchemaVersion is the PRAGMA user_version of every database this package
// creates, and the only one it opens. The layout is Sagüin's own and not
// byte-compatible with any earlier implementation, so it does not reuse
// their numbers: a file of another layout is refused by name rather than
// read as something it is not (notes-0004 Appendix D).
//
// 101: subscriptions moved out of the sessions row into
// session_subscriptions, one row per filter, so a SUBSCRIBE writes one row
// rather than the session's whole list. A file of version 100 is refused
// like any other (notes-0004 "Versioning / no in-place upgrade").
const SchemaVersion = 101

// applicationID marks the file as Sagüin's in the database header
// (PRAGMA application_id, "SAGU"), so `file` and error messages can say what
// a database is before any table is read.
const applicationID = 0x53414755

// pageSize is pinned on every database Sagüin creates: max_page_count rounds
// the operator's max_bytes down to whole pages, and with build-dependent
// defaults two machines would round the same figure differently.
const pageSize = 4096

// Reserved channel names: the retained store and the broadcast log are kept
// in the channel tables under names no channel can have (a channel name is
// one topic level, with no '/').
const (
	retainedChannel  = store.RetainedName
	broadcastChannel = store.BroadcastName
)

// Channel kinds as stored in channels.kind.
const (
	kindAppend    = "append"
	kindLatest    = "latest"
	kindQueue     = "queue"
	kindRetained  = "retained"
	kindBroadcast = "broadcast"
)

// schema is applied in one transaction together with user_version, so a file
// never has one without the other. The tables of small rows keyed by their
// primary key are WITHOUT ROWID (one b-tree instead of a table and its key
// index), which also keeps the empty database at 22 pages, the 88KiB RFC
// 0002 states; tables that carry payloads keep their rowid, since SQLite
// stores large rows poorly in a WITHOUT ROWID b-tree. Every table is STRICT:
// an INTEGER column cannot silently hold text. Nothing here is written with
// INSERT OR REPLACE: a reused offset must fail, never overwrite.
//
// Record columns are shared by records, latest_values, queue_items and
// held_publishes: message_id, ts (receipt time, Unix ns, 0 = unset), topic,
// headers (ordered JSON array of [name, value] pairs, NULL for none - readable
// from the sqlite3 shell), props (the five publish properties in the broker's
// own encoding, opaque to the store, NULL for none), payload, client_id,
// bridge, qos, retain. size is store.RecordSize, computed in Go and stored so
// that a removal returns exactly what the write counted.
// Each table declares them in full rather than from a shared fragment: the
// statements are stored verbatim in sqlite_master and read from the sqlite3
// shell, and their layouts differ (latest_values keys on topic, queue_items
// aligns wider). TestRecordTablesDeclareTheSameRecordColumns holds the four
// declarations to one another.
var schema = []string{
	`CREATE TABLE meta (
		key   TEXT PRIMARY KEY,
		value TEXT NOT NULL
	) STRICT, WITHOUT ROWID`,
	`CREATE TABLE channels (
		id    INTEGER PRIMARY KEY,
		name  TEXT NOT NULL UNIQUE,
		kind  TEXT NOT NULL,
		next  INTEGER NOT NULL,
		floor INTEGER NOT NULL,
		bytes INTEGER NOT NULL
	) STRICT`,
	`CREATE TABLE records (
		channel    INTEGER NOT NULL,
		offset     INTEGER NOT NULL,
		message_id TEXT NOT NULL,
		ts         INTEGER NOT NULL,
		topic      TEXT NOT NULL,
		headers    TEXT,
		props      BLOB,
		payload    BLOB NOT NULL,
		client_id  TEXT NOT NULL,
		bridge     TEXT NOT NULL,
		qos        INTEGER NOT NULL,
		retain     INTEGER NOT NULL,
		size       INTEGER NOT NULL,
		for_shares INTEGER NOT NULL DEFAULT 0,
		owed_to    TEXT NOT NULL DEFAULT '',
		PRIMARY KEY (channel, offset)
	) STRICT`,
	`CREATE TABLE latest_values (
		channel    INTEGER NOT NULL,
		topic      TEXT NOT NULL,
		offset     INTEGER NOT NULL,
		deleted    INTEGER NOT NULL,
		message_id TEXT NOT NULL,
		ts         INTEGER NOT NULL,
		headers    TEXT,
		props      BLOB,
		payload    BLOB NOT NULL,
		client_id  TEXT NOT NULL,
		bridge     TEXT NOT NULL,
		qos        INTEGER NOT NULL,
		retain     INTEGER NOT NULL,
		size       INTEGER NOT NULL,
		PRIMARY KEY (channel, topic)
	) STRICT`,
	`CREATE INDEX latest_values_by_offset ON latest_values (channel, offset)`,
	`CREATE TABLE queue_items (
		channel        INTEGER NOT NULL,
		offset         INTEGER NOT NULL,
		message_id     TEXT NOT NULL,
		ts             INTEGER NOT NULL,
		topic          TEXT NOT NULL,
		headers        TEXT,
		props          BLOB,
		payload        BLOB NOT NULL,
		client_id      TEXT NOT NULL,
		bridge         TEXT NOT NULL,
		qos            INTEGER NOT NULL,
		retain         INTEGER NOT NULL,
		size           INTEGER NOT NULL,
		attempts       INTEGER NOT NULL,
		first_delivery INTEGER NOT NULL,
		last_delivery  INTEGER NOT NULL,
		PRIMARY KEY (channel, offset)
	) STRICT`,
	`CREATE TABLE positions (
		channel        INTEGER NOT NULL,
		reader         TEXT NOT NULL,
		offset         INTEGER NOT NULL,
		session_expiry INTEGER NOT NULL,
		saved_at       INTEGER NOT NULL,
		PRIMARY KEY (channel, reader)
	) STRICT, WITHOUT ROWID`,
	`CREATE INDEX positions_by_offset ON positions (channel, offset)`,
	`CREATE TABLE held_publishes (
		channel    INTEGER NOT NULL,
		client     TEXT NOT NULL,
		packet_id  INTEGER NOT NULL,
		held_at    INTEGER NOT NULL,
		message_id TEXT NOT NULL,
		ts         INTEGER NOT NULL,
		topic      TEXT NOT NULL,
		headers    TEXT,
		props      BLOB,
		payload    BLOB NOT NULL,
		client_id  TEXT NOT NULL,
		bridge     TEXT NOT NULL,
		qos        INTEGER NOT NULL,
		retain     INTEGER NOT NULL,
		size       INTEGER NOT NULL,
		PRIMARY KEY (channel, client, packet_id)
	) STRICT`,
	`CREATE TABLE sessions (
		client_id       TEXT PRIMARY KEY,
		expiry          INTEGER NOT NULL,
		disconnected_at INTEGER NOT NULL,
		receive_maximum INTEGER NOT NULL,
		will            TEXT
	) STRICT, WITHOUT ROWID`,
	// One row per filter a session holds, every option its SUBSCRIBE
	// carried; filter is the whole "$share/<ShareName>/<filter>" of a shared
	// one, and that string is its group's key in share_groups.
	`CREATE TABLE session_subscriptions (
		client_id           TEXT NOT NULL,
		filter              TEXT NOT NULL,
		share_group         TEXT NOT NULL,
		qos                 INTEGER NOT NULL,
		no_local            INTEGER NOT NULL,
		retain_as_published INTEGER NOT NULL,
		retain_handling     INTEGER NOT NULL,
		subscription_id     INTEGER NOT NULL,
		partition           BLOB,
		log_offset          INTEGER NOT NULL,
		PRIMARY KEY (client_id, filter)
	) STRICT, WITHOUT ROWID`,
	`CREATE TABLE session_inflight (
		client_id   TEXT NOT NULL,
		offset      INTEGER NOT NULL,
		packet_id   INTEGER NOT NULL,
		qos         INTEGER NOT NULL,
		released    INTEGER NOT NULL,
		share_group TEXT NOT NULL,
		PRIMARY KEY (client_id, packet_id, offset)
	) STRICT, WITHOUT ROWID`,
	// One row per group a stored session holds: members counts the sessions
	// holding its filter (the row goes with the last), cursor is NULL until
	// a member whose session outlives its connection gives it one.
	`CREATE TABLE share_groups (
		grp     TEXT PRIMARY KEY,
		cursor  INTEGER,
		members INTEGER NOT NULL
	) STRICT, WITHOUT ROWID`,
	`CREATE TABLE share_returned (
		grp    TEXT NOT NULL,
		offset INTEGER NOT NULL,
		PRIMARY KEY (grp, offset)
	) STRICT, WITHOUT ROWID`,
}
