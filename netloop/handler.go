package netloop

import (
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

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
	Connect(c delivery.Client, req *ConnectRequest) (sessionPresent bool, code codec.ReasonCode)

	// Publish routes one inbound PUBLISH (its topic alias already resolved)
	// and returns the reason code its PUBACK or PUBREC carries, with the
	// Reason String saying why when it is a refusal; QoS 0 ignores both.
	Publish(c delivery.Client, p *codec.Publish) (codec.ReasonCode, string)

	// Subscribe answers one filter of a SUBSCRIBE: the SUBACK's code, and
	// why when it is a refusal.
	Subscribe(c delivery.Client, filter []byte, opts delivery.SubscribeOptions) (codec.ReasonCode, string)

	// Unsubscribe answers one filter of an UNSUBSCRIBE; the code is the
	// UNSUBACK's (MQTT 5).
	Unsubscribe(c delivery.Client, filter []byte) codec.ReasonCode

	// Disconnected tells the handler the connection ended. sessionExpiry is
	// the Session Expiry Interval in force at the end (a client's DISCONNECT
	// may have changed it); graceful is a client's own DISCONNECT 0x00.
	Disconnected(c delivery.Client, sessionExpiry uint32, graceful bool)
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
	// SessionExpiryShortened is set by the handler when it grants less than
	// SessionExpiry (it lowers SessionExpiry too): a session store with no
	// room keeps the session only as long as its connection, and the CONNACK
	// says so (RFC 0002 "Every session's state: broker.session").
	SessionExpiryShortened bool
}

// ExactlyOnce is implemented by a handler that holds the client's QoS 2
// publishes itself, across connections of one session: its Publish takes
// ownership of a QoS 2 message at the PUBREC without routing it, and routes
// it at the PUBREL (RFC 0003 "Exactly once"). Both run on the connection's
// loop.
type ExactlyOnce interface {
	// Holds reports whether the client's session holds an exchange under
	// packetID: a PUBLISH re-sent for it is answered again, routed never.
	Holds(c delivery.Client, packetID uint16) bool
	// Release routes the exchange held under packetID. Success and 0x92
	// (nothing held) are answered on the PUBCOMP; any other code ends the
	// connection with DISCONNECT and no PUBCOMP, the message kept held.
	Release(c delivery.Client, packetID uint16) (codec.ReasonCode, string)
}

// AckHandler is implemented by a handler that wants to know how a delivery
// it named (Delivery.Ref, not zero) goes. Both run on the connection's loop.
type AckHandler interface {
	// Received is a QoS 2 delivery's PUBREC: the client has the message. The
	// PUBREL is sent only once it returns true - the handler has stored that
	// the exchange is at PUBREL, so a restart resumes it there and never
	// sends the message again; false ends the connection with 0x80 and no
	// PUBREL (RFC 0003 "Outbound QoS 2").
	Received(c delivery.Client, ref delivery.Ref, packetID uint16) bool
	// Acked is the end of the exchange: PUBACK at QoS 1, PUBCOMP at QoS 2.
	// ref is the delivery's, handed back unread.
	Acked(c delivery.Client, ref delivery.Ref)
}

// ResumeHandler is implemented by a handler that keeps a session's
// unfinished deliveries for the connection that resumes it. Unfinished runs
// on the ending connection's loop, before Disconnected, in the order the
// deliveries were sent.
// The connection lets go of the messages once the call returns: a handler
// that keeps one takes its own reference (Message.Retain).
type ResumeHandler interface {
	Unfinished(c delivery.Client, u []delivery.Unfinished)
}

// StoreWaiter is implemented by a handler some of whose calls wait on storage
// - a commit to disk - before they return. Such a call runs off the
// connection's loop: the connection reads nothing more until it returns, its
// answer is then written and reading goes on, in order; other connections on
// the loop are served meanwhile (notes-0001 invariant 16: one client never
// delays another). A handler that does not implement it, or answers false,
// is called on the loop as before: a memory store takes only a lock.
type StoreWaiter interface {
	// Waits reports whether call may wait on storage. It is asked on the
	// loop for every such packet, so it must be cheap and never block; qos
	// and retain are the PUBLISH's (CallPublish), zero otherwise.
	Waits(call delivery.Call, qos byte, retain bool) bool
}
