// Package delivery holds what the event loop and the broker hand each other:
// a routed Message, how it is sent to one subscription (Delivery), the
// connection as the broker holds it (Client), and the refusal labels both
// count (Reason). It imports only the codec, so that the broker, ops and
// bridges read these types without importing the event loop.
package delivery

import "github.com/saguin-edge/saguin/codec"

// SubscribeOptions are one filter's options from a SUBSCRIBE.
type SubscribeOptions struct {
	QoS               byte
	NoLocal           bool
	RetainAsPublished bool
	RetainHandling    byte
	// SubscriptionID is the SUBSCRIBE's Subscription Identifier (MQTT 5);
	// 0 is none. Deliveries for the filter carry it back.
	SubscriptionID uint32
	// User are the SUBSCRIBE's User Properties, packet-level - the same for
	// every filter of it: where a channel reads saguin-deletions and
	// saguin-filter. nil for none; the handler keeps nothing of it past the
	// call.
	User []codec.UserProperty
	// More: filters of the same SUBSCRIBE follow this one. A SUBSCRIBE is
	// one arrival (RFC 0003 "Where a subscription starts"): a channel
	// records every filter of it before serving any.
	More bool
}

// Kind names the engine a delivery came from, so that its acknowledgement
// finds the way back: broadcast (fan-out, the broadcast log, shared groups)
// or one of the channel engines.
type Kind uint8

const (
	KindNone      Kind = iota // the zero Ref: nothing to report
	KindBroadcast             // N: the broadcast log's offset (0: from memory); Name: the shared group, "" none
	KindAppend                // N: the record's offset; Name: the channel; Attempt: the seek era
	KindLatest                // N: the record's offset; Name: the channel; Attempt: the seek era
	KindQueue                 // N: the job's number; Name: the channel; Attempt: the delivery attempt
)

// Ref is the engine's own name for one delivery. netloop stores it with the
// delivery and hands it back unread on the client's PUBACK, PUBREC and
// PUBCOMP (Handler.Received, Handler.Acked); it never interprets it. The
// zero Ref asks for no report. It is comparable and holds no pointer but
// Name, so a connection's window keeps it without the garbage collector
// looking twice.
type Ref struct {
	Kind    Kind
	Attempt uint32
	N       uint64
	Name    string
}

// Delivery is how one message is sent to one subscription. Its fields are
// ordered so that nothing is padded: every queued and in-flight delivery of
// every connection holds one.
type Delivery struct {
	QoS    byte // already the lower of the publish's and the subscription's
	Retain bool // the RETAIN flag on the outgoing PUBLISH
	// PacketID is the identifier the handler chose for the delivery - a
	// resumed session's re-send under the one it was first sent with
	// (MQTT-4.4.0-1); 0 takes a new one. One held by a delivery still in
	// flight is not reused: a new one is taken instead.
	PacketID uint16
	// Dup marks a delivery that may have been sent before.
	Dup bool
	// Released: the client's PUBREC for this QoS 2 delivery was received, so
	// only its PUBREL is sent again, never the message.
	Released bool
	// SubscriptionIDs are the identifiers of every subscription this one
	// copy answers for (overlapping filters get one copy carrying them all).
	SubscriptionIDs []uint32
	// Ref is the engine's name for the delivery, reported back when the
	// client has it (Received) and when its exchange ends (Acked); the zero
	// Ref asks for no report. What a connection leaves unfinished carries
	// it back too (Handler.Unfinished).
	Ref Ref
}

// Client is a connection as the broker holds it. Its methods are safe from any
// goroutine and never block: a slow or deaf client can only fill its own
// bounded queue, never hold the caller (invariant 16).
type Client interface {
	ClientID() string
	Version() byte
	// Deliver queues m for this client as d says. It reports false when
	// the delivery was shed because the client's outbound queue is full.
	// m may be pooled: a client that keeps it past the call takes its own
	// reference (Message.Retain) and gives it back when done.
	Deliver(m *Message, d Delivery) bool
	// CanTake reports whether the client can take d now: within the
	// Maximum Packet Size its client declared, with room in its outbound
	// queue (Deliver would shed neither it nor an older one), and - at QoS
	// 1 or 2 - with room in the in-flight window its Receive Maximum gives. A shared
	// group passes over a member that cannot, rather than have the delivery
	// discarded or wait (RFC 0002 "Shared subscriptions"; RFC 0003 "When a
	// record is too large for a subscriber").
	CanTake(m *Message, d Delivery) bool
	// Fits reports whether d's PUBLISH of m - at d's QoS, its packet
	// identifier counted - is within the Maximum Packet Size the client
	// declared, the window aside: a record that does not fit is too large
	// for this subscriber, one that fits and cannot be taken waits for room.
	// Judging the size at QoS 0 instead would take a packet 1 or 2 bytes
	// over the bound for one that merely waits (the identifier is 2 bytes).
	Fits(m *Message, d Delivery) bool
	// Kick ends the connection: an MQTT 5 client is sent DISCONNECT with
	// reason first, a 3.1.1 one is closed.
	Kick(reason codec.ReasonCode)
}

// Unfinished is one QoS 1 or 2 delivery a connection ended without
// finishing: on the wire and unacknowledged (PacketID set), awaiting its
// PUBCOMP (Released), or still queued (PacketID 0).
type Unfinished struct {
	Msg      *Message
	Delivery Delivery
}

// Call names a handler call whose answer a client waits for and which may
// wait on storage.
type Call uint8

const (
	CallConnect     Call = iota + 1 // Connect: the session record before CONNACK
	CallPublish                     // Publish: a log append before PUBACK, a hold before PUBREC, a retained value
	CallRelease                     // Release: the release before PUBCOMP
	CallSubscribe                   // Subscribe: the session record before SUBACK
	CallUnsubscribe                 // Unsubscribe: the session record before UNSUBACK
	CallReceived                    // Received: the stored PUBREC before our PUBREL
	CallDisconnect                  // Leaving: a clean DISCONNECT's positions stored before the close
)
