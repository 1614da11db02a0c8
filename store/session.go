package store

import (
	"strings"
	"time"

	"github.com/saguin-edge/saguin/codec/topic"
)

// Session is a persistent MQTT session as the store keeps it (RFC 0002
// "Every session's state: broker.session", notes-0004 "sessions"). The
// store does not interpret the MQTT options; it keeps them so that a resumed
// session gets back exactly what it had.
type Session struct {
	ClientID string
	// Expiry is the Session Expiry Interval as granted, after capping by
	// limits.max_session_expiry.
	Expiry time.Duration
	// DisconnectedAt is when the client went away; zero while connected.
	DisconnectedAt time.Time
	// ReceiveMaximum is the window the in-flight table was written under.
	ReceiveMaximum uint16
	Subscriptions  []Subscription
	// Will is nil when the session armed none.
	Will *Will
}

// Subscription is one topic filter of a session with every option its
// SUBSCRIBE carried.
type Subscription struct {
	// Filter is the filter as subscribed, including a "$share/<group>/"
	// prefix for a shared subscription (ShareGroup names that group).
	Filter            string
	ShareGroup        string
	QoS               uint8
	NoLocal           bool
	RetainAsPublished bool
	RetainHandling    uint8
	// SubscriptionID is the MQTT 5 Subscription Identifier, 0 for none.
	SubscriptionID uint32
	// Partition is the client's partition declaration as the broker encodes
	// it, nil for none.
	Partition []byte
	// LogOffset is the broadcast log's next offset when the subscription was made.
	LogOffset uint64
}

// Will is a session's Last Will with the moment it falls due.
type Will struct {
	Topic   string
	Payload []byte
	Props   []byte
	Headers []Header
	QoS     uint8
	Retain  bool
	// Delay is the Will Delay Interval; DueAt the moment it is published
	// (zero until the connection ends).
	Delay time.Duration
	DueAt time.Time
	// AuthName is the name the client authenticated as.
	AuthName string
}

// InFlight is one broadcast-log message on the wire to a session.
type InFlight struct {
	Offset   uint64
	PacketID uint16
	QoS      uint8
	// Released is false while the PUBLISH is sent and unanswered, true once
	// a PUBREC was received and the PUBREL is owed (QoS 2).
	Released bool
	// ShareGroup is the shared group that handed the message over, "" if none.
	ShareGroup string
}

// InFlightKey identifies an in-flight entry for an acknowledgement: the
// packet identifier and the offset together (a packet identifier is reused).
type InFlightKey struct {
	PacketID uint16
	Offset   uint64
}

// Returned is a delivery a member session's ending returned to its shared
// group: the group is owed it again, ahead of its cursor.
type Returned struct {
	Group  string
	Offset uint64
}

// Session memory charges (RFC 0002 "Every session's state: broker.session").
const (
	sessionBaseBytes     = 3500
	filterBaseBytes      = 800
	sharedFilterBytes    = 400
	filterExtraLevelCost = 600
)

// SessionSize is what a session counts against a memory provider: the memory
// the broker holds for it while its client is away. 3,500 bytes and its
// client id; per filter SubscriptionSize; its Will's topic, payload and
// properties (headers included).
func SessionSize(s *Session) int64 {
	n := int64(sessionBaseBytes+len(s.ClientID)) + WillSize(s.Will)
	for i := range s.Subscriptions {
		n += SubscriptionSize(&s.Subscriptions[i])
	}
	return n
}

// SubscriptionSize is what one filter adds to SessionSize: 800 bytes, 400
// more for a shared one, 600 for each level after the first, and the
// filter's length.
func SubscriptionSize(sub *Subscription) int64 {
	n := int64(filterBaseBytes + len(sub.Filter))
	levels := sub.Filter
	if sub.ShareGroup != "" {
		n += sharedFilterBytes
		// The levels charged are the filter's own, not "$share/<group>/".
		levels = strings.TrimPrefix(levels, topic.SharePrefix+sub.ShareGroup+"/")
	}
	return n + filterExtraLevelCost*int64(strings.Count(levels, "/"))
}

// WillSize is what a Will adds to SessionSize: its topic, payload,
// properties and headers; 0 for none.
func WillSize(w *Will) int64 {
	if w == nil {
		return 0
	}
	n := int64(len(w.Topic) + len(w.Payload) + len(w.Props))
	for i := range w.Headers {
		n += int64(len(w.Headers[i].Key) + len(w.Headers[i].Value))
	}
	return n
}
