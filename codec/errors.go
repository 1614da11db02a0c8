package codec

import "errors"

// ErrNeedMore is returned by ReadHeader when the buffer does not yet hold a
// whole fixed header. It is not a fault: read more bytes and call again.
var ErrNeedMore = errors.New("codec: need more bytes for the fixed header")

// Error is a packet refused while it was read: Code is the reason code RFC 0002
// answers with (0x81 Malformed Packet, 0x82 Protocol Error, 0x95 Packet too
// large, 0x84 Unsupported Protocol Version ...), Rule names the rule broken in
// words an operator can look up, with the MQTT conformance statement where
// there is one. A 3.1.1 connection has no reason codes: the caller maps Code
// (see ReturnCode311) or closes the connection.
type Error struct {
	Code ReasonCode
	Rule string
}

func (e *Error) Error() string {
	return "codec: " + e.Code.String() + " (0x" + hex2(uint8(e.Code)) + "): " + e.Rule
}

// Is lets errors.Is match on the reason code alone: errors.Is(err,
// &codec.Error{Code: codec.ProtocolError}) holds for every protocol error.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Rule == "" || t.Rule == e.Rule)
}

func malformed(rule string) error { return &Error{Code: MalformedPacket, Rule: rule} }
func protocol(rule string) error  { return &Error{Code: ProtocolError, Rule: rule} }

// AsError returns the *Error inside err, or nil when err is not a refusal the
// codec made.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// ReturnCode311 maps a CONNECT refusal to the 3.1.1 CONNACK return code RFC
// 0002 "Every reason code, in one place" assigns: the protocol version to 0x01,
// identifier to 0x02, unavailable to 0x03, a credential to 0x04, and every
// other refusal - malformed flags, Will refusals, protocol errors - to 0x05.
// A user name that is not well-formed UTF-8 is a broken credential (0x04);
// Connect.Decode reports it with Rule RuleUserNameUTF8.
func ReturnCode311(e *Error) ReasonCode {
	switch {
	case e.Code == UnsupportedProtocolVersion:
		return ConnRefusedProtocolVersion311
	case e.Code == ClientIdentifierNotValid:
		return ConnRefusedIdentifier311
	case e.Code == ServerUnavailable || e.Code == ServerBusy || e.Code == ImplementationSpecificError:
		return ConnRefusedServerUnavailable
	case e.Code == BadUserNameOrPassword || e.Rule == RuleUserNameUTF8:
		return ConnRefusedBadUserNamePassword
	default:
		return ConnRefusedNotAuthorized311
	}
}

// RuleUserNameUTF8 is the Rule of the refusal of a CONNECT whose user name is
// not well-formed UTF-8: 0x81 under MQTT 5, return code 0x04 under 3.1.1.
const RuleUserNameUTF8 = "CONNECT user name is not well-formed UTF-8 (MQTT-1.5.4-1)"

// prefixRule names the packet or part an inner refusal happened in.
func prefixRule(where string, err error) error {
	if e, ok := err.(*Error); ok {
		return &Error{Code: e.Code, Rule: where + " " + e.Rule}
	}
	return err
}
