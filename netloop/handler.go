package netloop

import "saguin/codec"

// Handler is the broker as a connection sees it. Every method is called on the
// connection's own event loop and must not block: no disk I/O, no lock held
// across I/O, no send on a channel that can block. Slices in the arguments
// alias the read buffer and are valid only during the call.
type Handler interface {
	// Connect attaches a session to a connection whose CONNECT netloop has
	// accepted on protocol grounds. The handler authenticates and takes over
	// a session held under the same client id (its old connection is Kicked
	// with 0x8E). Code other than Success refuses the connection; netloop
	// answers it in the client's vocabulary.
	Connect(c Client, req *ConnectRequest) (sessionPresent bool, code codec.ReasonCode)

	// Publish routes one inbound PUBLISH (its topic alias already resolved)
	// and returns the reason code its PUBACK or PUBREC carries, with the
	// Reason String saying why when it is a refusal; QoS 0 ignores both.
	Publish(c Client, p *codec.Publish) (codec.ReasonCode, string)

	// Subscribe answers one filter of a SUBSCRIBE: the SUBACK's code, and
	// why when it is a refusal.
	Subscribe(c Client, filter []byte, opts SubscribeOptions) (codec.ReasonCode, string)

	// Unsubscribe answers one filter of an UNSUBSCRIBE; the code is the
	// UNSUBACK's (MQTT 5).
	Unsubscribe(c Client, filter []byte) codec.ReasonCode

	// Disconnected tells the handler the connection ended. sessionExpiry is
	// the Session Expiry Interval in force at the end (a client's DISCONNECT
	// may have changed it); graceful is a client's own DISCONNECT 0x00.
	Disconnected(c Client, sessionExpiry uint32, graceful bool)
}

// ConnectRequest is what the handler needs of an accepted CONNECT.
type ConnectRequest struct {
	Version       byte
	ClientID      string // assigned by netloop when the client sent none
	CleanStart    bool
	SessionExpiry uint32 // already capped at max_session_expiry
	Username      []byte
	Password      []byte
	// Will is the CONNECT's Will Message, nil when it carries none. Its
	// slices alias the read buffer like every other argument.
	Will   *codec.Publish
	Door   string // the listener's name
	Remote string
}

// SubscribeOptions are one filter's options from a SUBSCRIBE.
type SubscribeOptions struct {
	QoS               byte
	NoLocal           bool
	RetainAsPublished bool
	RetainHandling    byte
	// SubscriptionID is the SUBSCRIBE's Subscription Identifier (MQTT 5);
	// 0 is none. Deliveries for the filter carry it back.
	SubscriptionID uint32
}

// Delivery is how one message is sent to one subscription.
type Delivery struct {
	QoS    byte // already the lower of the publish's and the subscription's
	Retain bool // the RETAIN flag on the outgoing PUBLISH
	// SubscriptionIDs are the identifiers of every subscription this one
	// copy answers for (overlapping filters get one copy carrying them all).
	SubscriptionIDs []uint32
}

// Client is a connection as the broker holds it. Its methods are safe from any
// goroutine and never block: a slow or deaf client can only fill its own
// bounded queue, never hold the caller (invariant 16).
type Client interface {
	ClientID() string
	Version() byte
	// Deliver queues m for this client as d says. It reports false when
	// the delivery was shed because the client's outbound queue is full.
	Deliver(m *Message, d Delivery) bool
	// Kick ends the connection: an MQTT 5 client is sent DISCONNECT with
	// reason first, a 3.1.1 one is closed.
	Kick(reason codec.ReasonCode)
}
