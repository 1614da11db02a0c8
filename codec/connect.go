package codec

import "bytes"

// Connect is a CONNECT packet (MQTT 3.1.1 3.1, MQTT 5 3.1). Byte slices alias
// the body handed to Decode.
type Connect struct {
	Version    uint8 // protocol level: Version31, Version311 or Version5
	CleanStart bool  // Clean Start (5) / Clean Session (3.1.1)
	KeepAlive  uint16
	Properties Properties // MQTT 5 only
	ClientID   []byte

	WillFlag       bool
	WillQoS        uint8
	WillRetain     bool
	WillProperties Properties // MQTT 5 only
	WillTopic      []byte
	WillPayload    []byte

	UsernameFlag bool
	Username     []byte
	PasswordFlag bool
	Password     []byte
}

var (
	protoMQTT   = []byte("MQTT")
	protoMQIsdp = []byte("MQIsdp")
)

// Decode reads a CONNECT. The protocol version comes from the packet itself
// (the version argument is ignored). Version is set to the protocol level as
// soon as the packet has said which protocol it speaks, so that a refusal can
// be answered in that protocol's vocabulary: when Decode fails with Version 0
// the packet never said (close with nothing written); with Version31 it is
// MQTT 3.1, always refused (Code 0x84, answered with the 3.1 CONNACK return
// code 0x01); any other level than 4 and 5 under the name "MQTT" is refused
// 0x84 with Version holding the level, which MQTT-3.1.2-2 answers with a
// 3.1.1 CONNACK carrying 0x01.
func (p *Connect) Decode(h Header, body []byte, _ uint8) error {
	p.reset()
	if err := checkHeader(h, body, TypeConnect); err != nil {
		return err
	}
	r := reader{b: body}
	name, err := r.binary("CONNECT protocol name")
	if err != nil {
		return err
	}
	level, err := r.byte1("CONNECT protocol level")
	if err != nil {
		return err
	}
	switch {
	case bytes.Equal(name, protoMQTT) && (level == Version311 || level == Version5):
		p.Version = level
	case bytes.Equal(name, protoMQIsdp) && level == Version31:
		p.Version = Version31
		return &Error{Code: UnsupportedProtocolVersion, Rule: "MQTT 3.1 (MQIsdp, level 3) is not served"}
	case bytes.Equal(name, protoMQTT):
		p.Version = level
		return &Error{Code: UnsupportedProtocolVersion, Rule: "CONNECT protocol level " + itoa(int(level)) + " is not MQTT 3.1.1 (4) or 5 (5) (MQTT-3.1.2-2)"}
	default:
		return malformed("CONNECT protocol name is not \"MQTT\" (MQTT-3.1.2-1)")
	}
	flags, err := r.byte1("CONNECT flags")
	if err != nil {
		return err
	}
	if flags&0x01 != 0 {
		return malformed("CONNECT reserved flag is set (MQTT-3.1.2-3)")
	}
	p.CleanStart = flags&0x02 != 0
	p.WillFlag = flags&0x04 != 0
	p.WillQoS = (flags >> 3) & 0x03
	p.WillRetain = flags&0x20 != 0
	p.PasswordFlag = flags&0x40 != 0
	p.UsernameFlag = flags&0x80 != 0
	if p.WillQoS == 3 {
		return malformed("CONNECT Will QoS is 3 (MQTT-3.1.2-12)")
	}
	if !p.WillFlag && p.WillQoS != 0 {
		return malformed("CONNECT Will QoS is set without a Will (MQTT-3.1.2-11)")
	}
	if !p.WillFlag && p.WillRetain {
		return protocol("CONNECT Will Retain is set without a Will (MQTT-3.1.2-13)")
	}
	if p.Version == Version311 && p.PasswordFlag && !p.UsernameFlag {
		return protocol("MQTT 3.1.1 CONNECT carries a password without a user name (MQTT-3.1.2-22)")
	}
	if p.KeepAlive, err = r.uint16("CONNECT keep alive"); err != nil {
		return err
	}
	if p.Version == Version5 {
		if err := p.Properties.decode(&r, ctxConnect); err != nil {
			return err
		}
		if p.Properties.Present.Has(PropAuthData) && !p.Properties.Present.Has(PropAuthMethod) {
			return protocol("CONNECT carries Authentication Data without an Authentication Method (MQTT 5 3.1.2.11.10)")
		}
	}
	if p.ClientID, err = r.utf8("CONNECT client identifier"); err != nil {
		return err
	}
	if p.WillFlag {
		if p.Version == Version5 {
			if err := p.WillProperties.decode(&r, ctxWill); err != nil {
				return err
			}
		}
		if p.WillTopic, err = r.utf8("CONNECT Will topic"); err != nil {
			return err
		}
		if p.WillPayload, err = r.binary("CONNECT Will payload"); err != nil {
			return err
		}
	}
	if p.UsernameFlag {
		// The user name is read as well-formed UTF-8 only: RFC 0002 answers a
		// name holding U+0000 or a control character with 0x86, the broker's
		// refusal through CheckUserName, not the codec's 0x81.
		if p.Username, err = r.binary("CONNECT user name"); err != nil {
			return err
		}
		if !utf8Valid(p.Username) {
			return &Error{Code: MalformedPacket, Rule: RuleUserNameUTF8}
		}
	}
	if p.PasswordFlag {
		if p.Password, err = r.binary("CONNECT password"); err != nil {
			return err
		}
	}
	return r.finish("CONNECT")
}

func (p *Connect) reset() {
	props, will := p.Properties, p.WillProperties
	props.Reset()
	will.Reset()
	*p = Connect{Properties: props, WillProperties: will}
}

// propSizes are the two property blocks' sizes at version (0 below MQTT 5).
func (p *Connect) propSizes(version uint8) (props, will int) {
	if version != Version5 {
		return 0, 0
	}
	return p.Properties.size(ctxConnect), p.WillProperties.size(ctxWill)
}

func (p *Connect) remaining(version uint8, props, will int) int {
	n := 2 + 4 + 1 + 1 + 2 // protocol name, level, flags, keep alive
	if version == Version31 {
		n += 2
	}
	if version == Version5 {
		n += prefixed(props)
	}
	n += 2 + len(p.ClientID)
	if p.WillFlag {
		if version == Version5 {
			n += prefixed(will)
		}
		n += 4 + len(p.WillTopic) + len(p.WillPayload)
	}
	if p.UsernameFlag {
		n += 2 + len(p.Username)
	}
	if p.PasswordFlag {
		n += 2 + len(p.Password)
	}
	return n
}

// Size is the encoded packet's length in bytes, fixed header included.
func (p *Connect) Size(version uint8) int {
	props, will := p.propSizes(version)
	n := p.remaining(version, props, will)
	return headerLen(n) + n
}

// Append encodes the CONNECT at the given protocol level (Version31 writes
// "MQIsdp", which a test needs to see refused) and appends it to dst. The
// flags are written from the struct as they are, so a test can build a
// packet that breaks a rule; the Flag fields decide which fields are written.
func (p *Connect) Append(dst []byte, version uint8) []byte {
	props, will := p.propSizes(version)
	dst = appendHeader(dst, TypeConnect, 0, p.remaining(version, props, will))
	if version == Version31 {
		dst = appendBytes(dst, protoMQIsdp)
	} else {
		dst = appendBytes(dst, protoMQTT)
	}
	dst = append(dst, version)
	var flags byte
	if p.CleanStart {
		flags |= 0x02
	}
	if p.WillFlag {
		flags |= 0x04
	}
	flags |= (p.WillQoS & 0x03) << 3
	if p.WillRetain {
		flags |= 0x20
	}
	if p.PasswordFlag {
		flags |= 0x40
	}
	if p.UsernameFlag {
		flags |= 0x80
	}
	dst = append(dst, flags)
	dst = appendUint16(dst, p.KeepAlive)
	if version == Version5 {
		dst = p.Properties.appendTo(dst, ctxConnect, props)
	}
	dst = appendBytes(dst, p.ClientID)
	if p.WillFlag {
		if version == Version5 {
			dst = p.WillProperties.appendTo(dst, ctxWill, will)
		}
		dst = appendBytes(dst, p.WillTopic)
		dst = appendBytes(dst, p.WillPayload)
	}
	if p.UsernameFlag {
		dst = appendBytes(dst, p.Username)
	}
	if p.PasswordFlag {
		dst = appendBytes(dst, p.Password)
	}
	return dst
}

func itoa(v int) string {
	if v == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	neg := v < 0
	if neg {
		v = -v
	}
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
