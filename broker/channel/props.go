package channel

import (
	"encoding/binary"

	"github.com/saguin-edge/saguin/codec"
)

// The stored form of a record's publish properties: one byte naming the
// property, then its value - a byte, four bytes big-endian, or two bytes of
// length and the bytes. Only the five a record keeps are written (RFC 0003
// "From publish to record"); User Properties are the record's headers. Both
// providers keep it as opaque bytes, and the broker's broadcast log writes
// the same form.

// propsSize is the stored form's length, 0 when p carries none of the five.
func propsSize(pr *codec.Properties) int {
	var n int
	has := pr.Present.Has
	if has(codec.PropPayloadFormat) {
		n += 2
	}
	if has(codec.PropMessageExpiry) {
		n += 5
	}
	if has(codec.PropContentType) {
		n += 3 + len(pr.ContentType)
	}
	if has(codec.PropResponseTopic) {
		n += 3 + len(pr.ResponseTopic)
	}
	if has(codec.PropCorrelationData) {
		n += 3 + len(pr.CorrelationData)
	}
	return n
}

// EncodeProps is the stored form of pr's five kept properties, nil when it
// carries none.
func EncodeProps(pr *codec.Properties) []byte {
	n := propsSize(pr)
	if n == 0 {
		return nil
	}
	return appendProps(make([]byte, 0, n), pr)
}

func appendProps(out []byte, pr *codec.Properties) []byte {
	has := pr.Present.Has
	if has(codec.PropPayloadFormat) {
		out = append(out, byte(codec.PropPayloadFormat), pr.PayloadFormat)
	}
	if has(codec.PropMessageExpiry) {
		out = append(out, byte(codec.PropMessageExpiry))
		out = binary.BigEndian.AppendUint32(out, pr.MessageExpiry)
	}
	bin := func(id codec.PropID, b []byte) {
		if has(id) {
			out = append(out, byte(id))
			out = binary.BigEndian.AppendUint16(out, uint16(len(b)))
			out = append(out, b...)
		}
	}
	bin(codec.PropContentType, pr.ContentType)
	bin(codec.PropResponseTopic, pr.ResponseTopic)
	bin(codec.PropCorrelationData, pr.CorrelationData)
	return out
}

// DecodeProps reads EncodeProps' form into pr, setting each property's
// Present bit; the byte slices alias b. What it cannot read it stops at (a
// store hands back exactly what it was given, so that is never reached).
func DecodeProps(b []byte, pr *codec.Properties) {
	for len(b) > 0 {
		id := codec.PropID(b[0])
		b = b[1:]
		switch id {
		case codec.PropPayloadFormat:
			if len(b) < 1 {
				return
			}
			pr.PayloadFormat, b = b[0], b[1:]
		case codec.PropMessageExpiry:
			if len(b) < 4 {
				return
			}
			pr.MessageExpiry, b = binary.BigEndian.Uint32(b), b[4:]
		case codec.PropContentType, codec.PropResponseTopic, codec.PropCorrelationData:
			if len(b) < 2 || len(b) < 2+int(binary.BigEndian.Uint16(b)) {
				return
			}
			n := int(binary.BigEndian.Uint16(b))
			v := b[2 : 2+n : 2+n]
			b = b[2+n:]
			switch id {
			case codec.PropContentType:
				pr.ContentType = v
			case codec.PropResponseTopic:
				pr.ResponseTopic = v
			default:
				pr.CorrelationData = v
			}
		default:
			return
		}
		pr.Present.Set(id)
	}
}
