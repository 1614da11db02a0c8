// Package store holds what Sagüin keeps: the interfaces a storage provider
// implements (one per kind of data), the values they carry, the errors the
// broker maps to reason codes, and the plain option structs that configure a
// provider. It knows no MQTT: topics, filters and packets are the broker's;
// here a topic is a string, publish properties are opaque bytes and a
// "match" is a function the caller supplies.
//
// The providers live in subpackages (store/memory, store/sqlite); the shared
// conformance script both must pass is store/storetest.
package store

import (
	"time"

	"github.com/saguin-edge/saguin/codec/topic"
)

// Header is one MQTT 5 User Property of a record. Headers are kept as an
// ordered slice, never a map: MQTT allows repeated names and requires them
// forwarded in the publisher's order (notes-0003 "Headers").
type Header struct {
	Key   string
	Value string
}

// Record is one stored publish, with exactly the fields notes-0003 "From
// publish to record" lists. A record handed to a store is owned by the store
// from then on: its byte slices and header slice must not be modified or
// reused by the caller (this is what lets the memory provider keep the record
// without copying it). Records a store returns share their slices with what
// the store keeps and must be treated as read-only.
type Record struct {
	// Offset is assigned by the store; it is ignored on the way in and set on
	// the record the store returns. Offsets start at 1, rise by one per record
	// and are never reused (invariant 9).
	Offset uint64
	// MessageID is the publisher's saguin-id or a UUIDv7 the broker made.
	MessageID string
	// Time is the broker's receipt time. The zero Time means "unset" and is
	// stored as 0 (see UnixNanos); it is never too old for age retention.
	Time  time.Time
	Topic string
	// Headers are the User Properties in the publisher's order, repeats kept.
	Headers []Header
	// Props are the five publish properties (content type, response topic,
	// correlation data, payload format indicator, message expiry interval) in
	// the broker's own encoding; the store keeps them as bytes and never
	// parses them. nil when the publish carried none.
	Props   []byte
	Payload []byte
	// ClientID is the publisher's client id, kept for No Local.
	ClientID string
	// Bridge names the bridge the record arrived on, "" for a client publish.
	Bridge string
	// QoS the record was published at.
	QoS uint8
	// Retain is the publisher's RETAIN flag, stored and not acted on.
	Retain bool
}

// RecordSize is what one record counts against every size bound: its payload,
// topic, message id and the key and value of each header (RFC 0002 "Bounds on
// what a channel holds"). Both providers count with this one function and
// never in SQL, so an append and the removal of the same record always move a
// counter by the same amount (notes-0004 "Removing a record").
func RecordSize(r *Record) int64 {
	n := len(r.Payload) + len(r.Topic) + len(r.MessageID)
	for i := range r.Headers {
		n += len(r.Headers[i].Key) + len(r.Headers[i].Value)
	}
	return int64(n)
}

// UnixNanos is how every timestamp is stored: Unix nanoseconds, with the zero
// Time stored as 0. UnixNano of the zero Time is a meaningless number that
// reads back as a date in 1754 (notes-0004 "A record on disk").
func UnixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// FromUnixNanos is the inverse of UnixNanos: 0 reads back as the zero Time.
func FromUnixNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Position is a reader's place in one channel: the offset of the next record
// it is owed. It is a cursor, never a copy of records.
type Position struct {
	// Reader is "mqtt:<client id>" or "bridge:<bridge name>" (ReaderMQTT,
	// ReaderBridge).
	Reader string
	// Offset is the next offset the reader is owed (its last acknowledged
	// record plus one).
	Offset uint64
	// SessionExpiry is, for an mqtt: reader, the session expiry interval as
	// granted (already capped by limits.max_session_expiry). It is what the
	// expiry sweep at open judges the position by; ignored for bridge: readers.
	SessionExpiry time.Duration
	// SavedAt is when the position was last stored (stored as UnixNanos).
	SavedAt time.Time
}

// Reader name schemes (notes-0004 "A position lives with the records it
// points into"): the scheme is what tells a session's zero expiry from a
// reader that has no session at all.
const (
	ReaderMQTTPrefix   = "mqtt:"
	ReaderBridgePrefix = "bridge:"
)

// ReaderMQTT is the reader name of the MQTT session with this client id.
func ReaderMQTT(clientID string) string { return ReaderMQTTPrefix + clientID }

// ReaderBridge is the reader name of an outbound bridge rule.
func ReaderBridge(name string) string { return ReaderBridgePrefix + name }

// Window is one read of a channel: the records asked for and the channel's
// floor and next as of the same instant (one read transaction on sqlite, one
// lock on memory), so a reader can never be handed survivors as though
// nothing were missing (invariant 1).
type Window struct {
	Floor   uint64
	Next    uint64
	Records []Record
}

// Value is a latest channel's entry for one topic: the record that set it,
// or a deletion (tombstone) with an offset of its own and no payload.
type Value struct {
	Record
	Deleted bool
}

// Job is an unresolved queue record with what a restart must keep: its
// attempt count and first and last delivery times. The holder, Delivery ID,
// epoch and lease deadline are never stored (invariant 15).
type Job struct {
	Record
	Attempts      uint32
	FirstDelivery time.Time
	LastDelivery  time.Time
}

// Delivery names one attempt at a job: the job's offset and the epoch the
// store minted when it was offered. Every operation naming a delivery is
// fenced on both (notes-0003 "Acknowledgement and return"): a superseded
// delivery is refused with ErrStaleDelivery. Epoch 0 names a job that is not
// out with any worker (used by the dead-letter move of an expired job).
type Delivery struct {
	Offset uint64
	Epoch  uint64
}

// JobState is where a job is in its volatile lifecycle.
type JobState uint8

const (
	JobAvailable  JobState = iota // waiting to be offered, possibly inside its backoff gap
	JobDelivering                 // PUBLISH sent to a worker, no PUBACK yet; no deadline
	JobLeased                     // worker received it; the visibility deadline runs
)

// Held is an exactly-once (QoS 2) publish between its PUBREC and its PUBREL.
// It has no offset: one assigned now could be passed by a consumer while the
// hold waits (notes-0004 "held_publishes").
type Held struct {
	ClientID string
	PacketID uint16
	HeldAt   time.Time
	Record   Record
}

// DeadLetter reasons written to saguin-dlq-reason.
const (
	ReasonAttemptsExhausted = "attempts_exhausted"
	ReasonExpired           = "expired"
)

// DLQSuffix is the name suffix of a queue's derived dead-letter channel.
const DLQSuffix = topic.DeadLetterSuffix

// Reserved store names: never a channel's (a channel name is one topic level).
const (
	RetainedName  = topic.SaguinPrefix + "retained"
	BroadcastName = topic.SaguinPrefix + "broadcast"
)
