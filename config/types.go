package config

import (
	"os"
	"time"
)

// Config is a configuration file loaded, validated and resolved: includes
// expanded, defaults filled, every duration a time.Duration, every size int64
// bytes. It is plain data; nothing in it opens, binds or starts anything.
// A zero duration or size means none wherever the key accepts none.
type Config struct {
	// File is the absolute path of the file that was loaded.
	File string

	Broker Broker
	// Channels are the configured channels, sorted by name, followed by none of
	// the derived dead-letter channels: those are DeadLetters.
	Channels []Channel
	// DeadLetters are the append channels the queues derive, <queue>__dlq, one
	// per queue, sorted by name.
	DeadLetters []Channel
	// Bridges are sorted by name.
	Bridges []Bridge

	// Notes are what --check-config says beside "ok": observations that do not
	// stop the broker (a discarded $1, a filter crossing a queue, a door an
	// acl_file cannot identify anybody at, an inert provider).
	Notes []Finding
}

// Broker is the broker: block.
type Broker struct {
	ID         string
	LogLevel   string // debug, info, warn or error
	PIDFile    string // absolute, or "" for none
	MQTT       MQTT
	Operations *Operations // nil when the block is absent: no listener at all
	Storage    Storage
	Retained   Retained
	QoS2       QoS2
	Share      Share
	Session    Session
	Limits     Limits
}

// MQTT is broker.mqtt.
type MQTT struct {
	// Listeners are every MQTT door, tcp then ws then unix, each kind in the
	// order written. A configuration naming none gets one tcp door on :1883.
	Listeners []Listener
	// PasswordFile and AllowAnonymous are the block's own answers; each
	// listener carries what it resolved to.
	PasswordFile   string
	AllowAnonymous *bool
	ACLFile        string
	// MinProtocolVersion is the protocol level: 4 (MQTT 3.1.1, the default)
	// or 5.
	MinProtocolVersion byte
}

// Listener kinds.
const (
	KindTCP  = "tcp"
	KindWS   = "ws"
	KindUnix = "unix"
)

// Listener is one door: an MQTT tcp, ws or unix listener, or an operations tcp
// or unix listener.
type Listener struct {
	// Name is the door's name: its kind when the kind has one door written as
	// a mapping, or the name its list entry gives.
	Name string
	Kind string
	// Key is how findings and logs name the door: broker.mqtt.listen.tcp, or
	// broker.mqtt.listen.tcp[fleet] once a name says which of several.
	Key string

	Address string      // tcp and ws: host:port as net.Listen reads it
	Path    string      // unix: a cleaned absolute path, or an abstract @name
	Mode    os.FileMode // unix: the socket file's permissions, 0660 if absent

	TLS *TLS // tcp and ws only; nil for plain

	// PasswordFile is the file that authenticates this door: its own, or the
	// block's when it names none. "" when nothing does.
	PasswordFile string
	// AllowAnonymous is resolved: written on the door, else (for a door
	// without its own file) on the block, else true exactly when there is no
	// password file. Always false on an operations door, which has no such key.
	AllowAnonymous bool

	ProxyProtocol bool // unix only

	SameOrigin     bool     // ws only; true if absent
	AllowedOrigins []string // ws only

	ConfiguredIn string
	Line         int

	// anonymousWritten: the door itself wrote allow_anonymous; ownPassword:
	// it wrote its own password_file. --output prints only what was written,
	// since a door naming its own file does not inherit the block's answer.
	anonymousWritten bool
	ownPassword      bool
}

// TLS is a listener's tls: block.
type TLS struct {
	CertFile     string
	KeyFile      string
	ClientCAFile string
	// RequireCertificate is resolved: true when ClientCAFile is set and the
	// file does not write require_certificate: false.
	RequireCertificate bool
	// MinVersion is "1.2" (the default) or "1.3".
	MinVersion string
}

// Operations is broker.operations, present only when the block is written.
type Operations struct {
	Listeners         []Listener
	PasswordFile      string
	MinScrapeInterval time.Duration
}

// Storage is broker.storage.
type Storage struct {
	Default                string
	DefaultRetentionPeriod time.Duration // 0 is none
	DefaultRetentionBytes  int64         // 0 is none
	// Providers are sorted by name.
	Providers []Provider
}

// Provider types.
const (
	ProviderMemory = "memory"
	ProviderSQLite = "sqlite"
)

// CommitMode is how a sqlite provider groups publishes into transactions.
type CommitMode int

const (
	// CommitCollect: publish_commit_interval absent - collect what arrived
	// during the previous commit, waiting for nothing.
	CommitCollect CommitMode = iota
	// CommitEach: publish_commit_interval none - a transaction per publish.
	CommitEach
	// CommitInterval: wait up to PublishCommitInterval or
	// PublishCommitMaxRecords, whichever comes first.
	CommitInterval
)

// Provider is one storage provider.
type Provider struct {
	Name     string
	Type     string // memory or sqlite
	MaxBytes int64  // 0 is none

	// memory
	SnapshotDir string // absolute, or "" for snapshot_dir: none

	// sqlite
	FilePath                string
	PublishCommit           CommitMode
	PublishCommitInterval   time.Duration
	PublishCommitMaxRecords int
	ReadConnections         int
	FlushInterval           time.Duration

	ConfiguredIn string
	Line         int
}

// Retained is broker.retained.
type Retained struct {
	Storage         string
	RetentionPeriod time.Duration // 0 is none, the default
}

// QoS2 is broker.qos2.
type QoS2 struct {
	MaxInflightPerClient int
	ExpiresAfter         time.Duration // 0 is none
}

// Share is broker.share.
type Share struct {
	ExpiresAfter time.Duration // 0 is none, the default
}

// Session is broker.session.
type Session struct {
	Storage           string
	AckCommitInterval time.Duration
}

// Limits is broker: limits: (named limits.<key> in findings, as RFC 0002 names them). Zero means no bound for the keys that accept none.
type Limits struct {
	MaxMessageSize    int64
	MaxTopicLength    int
	MaxClientIDLength int
	MaxHeaderCount    int
	MaxHeaderBytes    int64
	MaxConnections    int
	MaxSubscriptions  int
	MaxTopicLevels    int
	MaxSessionExpiry  time.Duration
	MaxKeepalive      time.Duration // 0 is none, the default
	PublishRate       int           // messages a second; 0 is no bound
	PublishBytes      int64         // bytes a second; 0 is no bound
	WriteTimeout      time.Duration // 0 is none
	ConnectTimeout    time.Duration
	MaxConnectSize    int64
	MaxConnectRate    int // connections a second per listener; 0 is none
	SessionQueueBytes int64
}

// Channel types.
const (
	TypeAppend = "append"
	TypeLatest = "latest"
	TypeQueue  = "queue"
)

// Start values of an append channel.
const (
	StartFloor = "floor"
	StartTail  = "tail"
)

// Backoff shapes of a queue's retry.
const (
	BackoffNone        = "none"
	BackoffLinear      = "linear"
	BackoffExponential = "exponential"
)

// Channel is one channel, configured or derived.
type Channel struct {
	Name string
	Type string
	// Filter is as written (braces and all), or <name>/# where none was
	// written; Filters is what it expands to, in expansion order.
	Filter  string
	Filters []string
	Storage string

	RetentionPeriod time.Duration // append, latest, dead letters; 0 is none
	RetentionBytes  int64         // append, dead letters; 0 is none
	MaxBytes        int64         // append, queue, dead letters; 0 is none

	DeletionRetentionPeriod time.Duration // latest only; 0 is none

	Start string // append and dead letters: floor or tail

	// Queue only.
	VisibilityTimeout time.Duration
	JobExpiresAfter   time.Duration // 0: jobs never expire
	Retry             Retry
	// DeadLetter names the derived channel: <name>__dlq.
	DeadLetter string

	// DerivedFrom names the queue a dead-letter channel belongs to; "" for a
	// configured channel.
	DerivedFrom string

	ConfiguredIn string
	Line         int

	// written records which keys the file wrote, for --output: a channel key
	// that takes the broker-wide default is printed only if written.
	written map[string]bool
	// A queue's dlq_ bounds, copied onto its dead-letter channel.
	dlqRetentionPeriod time.Duration
	dlqRetentionBytes  int64
}

// Retry is a queue's retry: block.
type Retry struct {
	MaxAttempts int
	Backoff     string
	BackoffBase time.Duration
}

// Bridge directions.
const (
	DirectionIn   = "in"
	DirectionOut  = "out"
	DirectionBoth = "both"
)

// Bridge is one bridge.
type Bridge struct {
	Name string
	// Peer is the URL as written; Scheme, Host and Port are read from it.
	Peer   string
	Scheme string
	Host   string
	Port   string
	Path   string // ws and wss: the URL's path, "" for the default

	ClientID       string
	SessionExpiry  time.Duration
	ReceiveMaximum int
	AckInterval    time.Duration

	CAFile   string
	CertFile string
	KeyFile  string

	// Rules are the topics: entries as written; Expanded is one rule per
	// {a,b} spelling, in the order written, which is the order they are tried.
	Rules    []BridgeRule
	Expanded []BridgeRule

	ConfiguredIn string
	Line         int
}

// BridgeRule is one entry under a bridge's topics:.
type BridgeRule struct {
	Filter    string
	Topic     string // "" on a both rule
	Direction string
	Line      int
}
