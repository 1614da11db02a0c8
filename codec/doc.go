// Package codec reads and writes MQTT 3.1.1 (protocol level 4) and MQTT 5
// (level 5) control packets. It does no I/O, starts no goroutines and
// allocates nothing per packet on the hot path.
//
// # Framing
//
// ReadHeader looks at the start of a connection's buffer and answers either
// ErrNeedMore or the fixed header: the type, the flag nibble, the declared
// Remaining Length and the header's own length. A declared total (fixed
// header included) above the caller's limit is refused with an *Error coded
// 0x95 Packet too large before any of the body has been read, which is how
// limits.max_message_size and limits.max_connect_size (RFC 0002) hold before
// a byte of the body is buffered. A Remaining Length longer than four bytes,
// or not in its shortest form, is malformed (0x81).
//
//	h, err := codec.ReadHeader(buf, limit)
//	if err == codec.ErrNeedMore { /* read more */ }
//	body := buf[h.HeaderLen : h.Total()] // once len(buf) >= h.Total()
//	err = pub.Decode(h, body, version)
//
// # Packets
//
// Each packet type has a reusable struct - Connect, Connack, Publish, Ack
// (PUBACK, PUBREC, PUBREL, PUBCOMP, told apart by its Type field), Subscribe,
// Suback, Unsubscribe, Unsuback, Pingreq, Pingresp, Disconnect, Auth - with
//
//	Decode(h Header, body []byte, version uint8) error
//	Append(dst []byte, version uint8) []byte
//	Size(version uint8) int
//
// Decode resets the struct and fills it, reusing the capacity of its slices
// (subscriptions, reason codes, User Properties, Subscription Identifiers),
// so decoding a PUBLISH allocates nothing. Connect.Decode reads the version
// from the packet and ignores the argument. Append encodes into dst and
// allocates nothing when dst has room; Size says how much room. Append writes
// what the struct holds without judging it, so a test can build a packet that
// breaks a rule; a string or binary field over 65,535 bytes cannot be
// encoded and is the caller's error. Packets holds one struct of each type
// and dispatches on the header's type.
//
// # Aliasing
//
// Every []byte a decoded struct holds - topic, payload, client id, user name,
// password, filters, and every string or binary property - aliases the body
// passed to Decode. It is valid until that buffer is reused for the next read:
// copy whatever is kept longer (a session's client id, a retained payload, a
// message queued for later delivery). Publish.Clone and Connect.Clone make
// that copy in one allocation for the bytes (plus one per list).
//
// # Properties
//
// Properties holds every MQTT 5 property. Present records which ones a decoded
// packet carried; Append sends a property when its field is non-zero or its
// Present bit is set (the bit is how a meaningful zero, such as Maximum QoS 0,
// is sent). Only the properties the packet type may carry are written. User
// Properties keep their order and repeated keys.
//
// # Refusals
//
// Every refusal is an *Error carrying the reason code RFC 0002 answers with
// and the rule broken (with its MQTT conformance statement where there is
// one); errors.Is(err, &codec.Error{Code: c}) matches on the code.
//
// Malformed Packet (0x81): reserved fixed-header flags, packet type 0 (and 15
// under 3.1.1), a Remaining Length over four bytes or not in its shortest
// form, a PUBLISH with both QoS bits set or with DUP at QoS 0, a CONNECT's
// reserved flag, a Will QoS of 3 or a Will QoS without a Will, a length that
// runs past the packet, bytes left after the last field, a string that is not
// well-formed UTF-8 or holds U+0000, a property the packet may not carry or
// an unknown property identifier, reserved subscription option bits (and a
// 3.1.1 requested QoS of 3).
//
// Protocol Error (0x82): a property carried twice where MQTT allows it once,
// or with a value its definition forbids (Payload Format Indicator, Request
// Problem/Response Information, Maximum QoS, the "available" flags outside
// 0..1; Receive Maximum, Maximum Packet Size, Subscription Identifier 0; a
// Response Topic holding a wildcard); a wildcard in a PUBLISH topic; an empty
// topic with no Topic Alias; Will Retain without a Will; a 3.1.1 password
// without a user name; Authentication Data without a Method; a SUBSCRIBE or
// UNSUBSCRIBE with no filters or a zero-length one; Retain Handling 3; an MQTT
// 5 subscription QoS of 3; No Local on a $share/ filter; packet identifier 0
// where one is required; a reason code the packet may not carry.
//
// Topic Alias Invalid (0x94): a Topic Alias of 0 (MQTT 5 3.3.4 names the
// code). Packet too large (0x95): ReadHeader over the caller's limit.
// Unsupported Protocol Version (0x84): a CONNECT of a level other than 4 and
// 5. Connect.Version is set as soon as the packet has said which protocol it
// speaks (3 for MQTT 3.1, answered with return code 0x01; 0 when it never
// said, which is closed with nothing written). ReturnCode311 maps a CONNECT
// refusal onto the five 3.1.1 return codes as RFC 0002 does.
//
// # Bounds
//
// Nothing is read past the body handed in. Lists whose length the sender
// chooses (filters, reason codes, User Properties, Subscription Identifiers)
// are counted first and allocated once, so decoding a packet allocates at
// most about ten times its declared length, which the caller has already
// bounded with ReadHeader's limit; a reusable struct drops any list grown
// beyond 64 elements at its next Decode, so one huge SUBSCRIBE does not stay
// resident for the connection's life.
//
// # Left to the caller
//
// What MQTT leaves to the server, or what needs state a single packet does
// not have, is not decided here:
//   - a client id's length and characters, the empty id with Clean Start 0
//     (0x85: CheckClientID, CheckEmptyClientID); a user name holding U+0000 or
//     a control character (0x86: CheckUserName); a payload marked UTF-8 that
//     is not (0x99: CheckPayloadFormat);
//   - a filter's syntax - wildcards taking a whole level, # last (0x8F per
//     filter, or a closed connection for 3.1.1) - codec/topic holds it;
//     a topic's length and depth, the reserved $saguin/ space, $SYS, $share
//     spelling, a Will topic holding a wildcard (0x90 at CONNECT);
//   - connection state: CONNECT first and only once, a Topic Alias above the
//     advertised maximum (0x94) or never registered (0x82), Receive Maximum
//     (0x93), packet identifiers in use, a DISCONNECT's Session Expiry moving
//     from 0, a Subscription Identifier in a PUBLISH from a client
//     (MQTT-3.3.4-6), an AUTH packet at all (RFC 0002 answers 0x82).
package codec
