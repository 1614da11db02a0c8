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
// allocates nothing when dst has room; Size says how much room. Packets holds
// one struct of each type and dispatches on the header's type.
//
// # Aliasing
//
// Every []byte a decoded struct holds - topic, payload, client id, user name,
// password, filters, and every string or binary property - aliases the body
// passed to Decode. It is valid until that buffer is reused for the next read:
// copy whatever is kept longer (a session's client id, a retained payload, a
// message queued for later delivery).
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
// and the rule broken. Malformed Packet (0x81): reserved flags, a PUBLISH with
// both QoS bits set, a Will QoS of 3 or a Will QoS without a Will, a length
// that runs past the packet, bytes left after the last field, a string that
// is not well-formed UTF-8 or holds U+0000, a property the packet may not
// carry, reserved subscription option bits. Protocol Error (0x82): a property
// carried twice where MQTT allows it once or with a value its definition
// forbids, a wildcard in a PUBLISH topic, Will Retain without a Will, a 3.1.1
// password without a user name, a SUBSCRIBE with no filters, Retain Handling
// 3, No Local on a shared subscription, packet identifier 0 where one is
// required. 0x84 Unsupported Protocol Version: a CONNECT of a protocol level
// other than 4 and 5 (Connect.Version says 3 for MQTT 3.1, so it can be
// refused with return code 0x01). ReturnCode311 maps a CONNECT refusal onto
// the five 3.1.1 return codes as RFC 0002 does.
//
// What MQTT leaves to the server - a client id's characters and length, a user
// name's control characters, a topic's length and depth, the reserved $saguin/
// space, a filter's wildcard placement (codec/topic) - is not decided here.
// CheckClientID, CheckEmptyClientID, CheckUserName and CheckPayloadFormat are
// helpers the broker calls for the ones that concern a packet's own fields.
package codec
