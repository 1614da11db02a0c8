package netloop

import (
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// Handler is the broker as a connection sees it: one interface, every method
// of it called. Every method is called on the connection's own event loop
// and must not block - no disk I/O, no lock held across I/O, no send on a
// channel that can block - except a call Waits answered true for, which runs
// off the loop ("Calls that wait on storage", docs/netloop.md). Slices in
// the arguments alias the read buffer and are valid only during the call.
type Handler interface {
	// Connect attaches a session to a connection whose CONNECT netloop has
	// accepted on protocol grounds. The handler authenticates and takes over
	// a session held under the same client id (its old connection is Kicked
	// with 0x8E). Code other than Success refuses the connection; netloop
	// answers it in the client's vocabulary.
	Connect(c delivery.Client, req *ConnectRequest) (sessionPresent bool, code codec.ReasonCode)

	// Publish routes one inbound PUBLISH (its topic alias already resolved)
	// and returns the reason code its PUBACK or PUBREC carries, with the
	// Reason String saying why when it is a refusal; QoS 0 ignores both. A
	// QoS 2 message is owned at its PUBREC, held across connections of the
	// session, and routed at its PUBREL (Release; RFC 0003 "Exactly once").
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

	// Leaving is a client's DISCONNECT, before the connection is closed:
	// the handler stores what the connection's acknowledgements moved (its
	// positions in append channels) and what the DISCONNECT changes of its
	// session - sessionExpiry and graceful as Disconnected will be given
	// them - so that a client which saw its connection close has it all
	// stored (RFC 0003 "Durable consumers", invariant 18). Disconnected
	// follows, once it returns. Off the loop when Waits answers true for
	// CallDisconnect; the connection reads nothing meanwhile, and a client
	// that hangs up first still ends as its DISCONNECT said.
	Leaving(c delivery.Client, sessionExpiry uint32, graceful bool)

	// Holds reports whether the client's session holds a QoS 2 exchange
	// under packetID from an earlier connection: a PUBLISH re-sent for it is
	// answered again, routed never.
	Holds(c delivery.Client, packetID uint16) bool

	// Release routes the exchange held under packetID (the client's
	// PUBREL). Success and 0x92 (nothing held) are answered on the PUBCOMP;
	// any other code ends the connection with DISCONNECT and no PUBCOMP, the
	// message kept held.
	Release(c delivery.Client, packetID uint16) (codec.ReasonCode, string)

	// Received is the PUBREC of a QoS 2 delivery whose Ref is not zero: the
	// client has the message. The PUBREL is sent only once it returns true
	// - the handler has stored that the exchange is at PUBREL, so a restart
	// resumes it there and never sends the message again; false ends the
	// connection with 0x80 and no PUBREL (RFC 0003 "Outbound QoS 2"). ref is
	// the delivery's, handed back unread.
	Received(c delivery.Client, ref delivery.Ref, packetID uint16) bool

	// Acked is the end of a delivery's exchange whose Ref is not zero:
	// PUBACK at QoS 1, PUBCOMP at QoS 2, or a PUBREC refusing it. ref is the
	// delivery's, handed back unread.
	Acked(c delivery.Client, ref delivery.Ref)

	// Room is told that a settle - of any delivery, numbered or not - gave a
	// place back in a window that was full: CanTake, which refused every QoS
	// 1 or 2 delivery, takes one again. It follows that settle's Acked. A
	// queue offers only into a window with room, so the PUBACK reopening it
	// offers the worker its next job at once rather than at the next offer
	// tick (notes-0003 "Delivery").
	Room(c delivery.Client)

	// Unfinished hands back the QoS 1 and 2 deliveries an ending connection
	// leaves unfinished - on the wire in the order they were sent, under
	// their identifiers, then those still queued - for the connection that
	// resumes the session. It runs before Disconnected, and only when there
	// are some. The connection lets go of the messages once the call
	// returns: a handler that keeps one takes its own reference
	// (Message.Retain).
	Unfinished(c delivery.Client, u []delivery.Unfinished)

	// Waits reports whether call may wait on storage - a commit to disk -
	// before it returns. Such a call runs off the connection's loop: the
	// connection reads nothing more until it returns, its answer is then
	// written and reading goes on, in order; other connections on the loop
	// are served meanwhile (notes-0001 invariant 16: one client never delays
	// another). It is asked on the loop for every such packet, so it must be
	// cheap and never block. p is the decoded PUBLISH for CallPublish (its
	// topic alias resolved), so the answer can depend on what the publish
	// will store; ref is the delivery's for CallReceived; nil and zero
	// otherwise.
	Waits(c delivery.Client, call delivery.Call, p *codec.Publish, ref delivery.Ref) bool
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
	Remote string // the client's address: a PROXY header's source where the door reads one
	// Certified is set when the door vouched for the client's name: a client
	// certificate it verified, or one a proxy verified and named. Username
	// is then that name, whatever the CONNECT carried, and no password file
	// is consulted for it.
	Certified bool
	// Keepalive is the Keep Alive granted, in seconds: the CONNECT's, or
	// max_keepalive's answer to an MQTT 5 client asking for more.
	Keepalive uint16
	// SessionExpiryShortened is set by the handler when it grants less than
	// SessionExpiry (it lowers SessionExpiry too): a session store with no
	// room keeps the session only as long as its connection, and the CONNACK
	// says so (RFC 0002 "Every session's state: broker.session").
	SessionExpiryShortened bool
	// MaximumQoS1 and NoSharedSubscriptions are set by the handler for a
	// client the acl_file denies qos2 or share: the CONNACK says Maximum
	// QoS 1 and Shared Subscription Available 0 (RFC 0002 "Taking a feature
	// away"); what the client does anyway is the handler's to refuse.
	MaximumQoS1           bool
	NoSharedSubscriptions bool
}
