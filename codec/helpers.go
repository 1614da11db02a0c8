package codec

import (
	"unicode/utf8"
)

// What MQTT leaves to the server to decide. These are not applied by Decode,
// since the outcome is the broker's (a CONNACK code, a PUBACK code); the
// broker calls them and answers with the *Error's Code.

// CheckClientID applies RFC 0002's client identifier rules (0x85 Client
// Identifier not valid): at most maxLen bytes (limits.max_client_id_length;
// maxLen <= 0 skips the check) and no control character U+0001-U+001F or
// U+007F-U+009F. Decode already refused ill-formed UTF-8 and U+0000. The
// zero-length id asking for a kept session (MQTT-3.1.3-8) needs the Clean
// Start flag as well: see CheckEmptyClientID.
func CheckClientID(id []byte, maxLen int) error {
	if maxLen > 0 && len(id) > maxLen {
		return &Error{Code: ClientIdentifierNotValid, Rule: "client identifier is longer than limits.max_client_id_length"}
	}
	if hasControl(id) {
		return &Error{Code: ClientIdentifierNotValid, Rule: "client identifier holds a control character (U+0001-U+001F, U+007F-U+009F)"}
	}
	return nil
}

// CheckEmptyClientID refuses a zero-length client id that asks for a session
// outliving the connection (Clean Start 0 / cleanSession 0): MQTT-3.1.3-8 and
// RFC 0002 answer 0x85 on both protocols (3.1.1: return code 0x02).
func CheckEmptyClientID(c *Connect) error {
	if len(c.ClientID) == 0 && !c.CleanStart {
		return &Error{Code: ClientIdentifierNotValid, Rule: "zero-length client identifier with Clean Start 0 (MQTT-3.1.3-8)"}
	}
	return nil
}

// CheckUserName applies RFC 0002 "TLS on a listener": a name holding U+0000
// or a control character (U+0001-U+001F, U+007F-U+009F) is nobody's and is
// refused 0x86 Bad User Name or Password. The same rule serves a
// certificate's Common Name and a proxy's name.
func CheckUserName(name []byte) error {
	for _, c := range name {
		if c == 0 {
			return &Error{Code: BadUserNameOrPassword, Rule: "user name holds U+0000"}
		}
	}
	if !utf8.Valid(name) {
		return &Error{Code: BadUserNameOrPassword, Rule: "user name is not well-formed UTF-8"}
	}
	if hasControl(name) {
		return &Error{Code: BadUserNameOrPassword, Rule: "user name holds a control character (U+0001-U+001F, U+007F-U+009F)"}
	}
	return nil
}

// CheckPayloadFormat applies MQTT 5 3.3.2.3.2: a publish whose Payload Format
// Indicator is 1 must carry well-formed UTF-8, else 0x99 Payload format
// invalid - a PUBACK/PUBREC answer, not a malformed packet, which is why
// Publish.Decode leaves it to the broker.
func CheckPayloadFormat(p *Publish) error {
	if p.Properties.PayloadFormat == 1 && !utf8.Valid(p.Payload) {
		return &Error{Code: PayloadFormatInvalid, Rule: "Payload Format Indicator says UTF-8 and the payload is not (MQTT 5 3.3.2.3.2)"}
	}
	return nil
}

// hasControl reports a C0 or C1 control character other than U+0000 in
// well-formed UTF-8: U+0001-U+001F, U+007F, and U+0080-U+009F (encoded
// 0xC2 0x80-0x9F).
func hasControl(b []byte) bool {
	for i := 0; i < len(b); i++ {
		c := b[i]
		if (c >= 0x01 && c <= 0x1F) || c == 0x7F {
			return true
		}
		if c == 0xC2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] <= 0x9F {
			return true
		}
	}
	return false
}
