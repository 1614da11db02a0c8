package codec

// MaxRemaining is the largest Remaining Length a four-byte variable byte
// integer can hold (MQTT 1.5.5): 268,435,455.
const MaxRemaining = 268435455

// Header is a fixed header; the whole packet is HeaderLen+Remaining bytes.
type Header struct {
	Type      Type
	Flags     uint8 // the low nibble of the first byte
	Remaining int   // the declared Remaining Length
	HeaderLen int   // 1 + the length of the Remaining Length encoding (2..5)
}

// Total is the whole packet's length in bytes, fixed header included.
func (h Header) Total() int { return h.HeaderLen + h.Remaining }

// ReadHeader frames buf: ErrNeedMore, or the header. A declared total above
// limit (the whole packet, fixed header included, as max_message_size and
// max_connect_size are measured) is refused with *Error 0x95 before any of the
// body is needed; limit <= 0 means no limit but MQTT's own. A variable byte
// integer longer than four bytes, or one not in its shortest form, is
// malformed (0x81). ReadHeader does not judge the type or the flags: the
// packet's Decode does, since what is legal there depends on the type.
func ReadHeader(buf []byte, limit int) (Header, error) {
	if len(buf) < 2 {
		return Header{}, ErrNeedMore
	}
	var h Header
	h.Type = Type(buf[0] >> 4)
	h.Flags = buf[0] & 0x0F
	value, n, err := readVarint(buf[1:])
	if err != nil {
		if err == errVarintShort {
			return Header{}, ErrNeedMore
		}
		return Header{}, malformed("Remaining Length: " + err.Error())
	}
	h.Remaining = int(value)
	h.HeaderLen = 1 + n
	if limit > 0 && h.Total() > limit {
		return h, &Error{Code: PacketTooLarge, Rule: h.Type.String() + " declares a packet larger than the limit"}
	}
	return h, nil
}

// appendHeader writes a fixed header for a body of remaining bytes.
func appendHeader(dst []byte, t Type, flags uint8, remaining int) []byte {
	dst = append(dst, byte(t)<<4|flags&0x0F)
	return appendVarint(dst, uint32(remaining))
}

// headerLen is the fixed header's length for a body of remaining bytes.
func headerLen(remaining int) int { return 1 + varintLen(uint32(remaining)) }

// checkHeader refuses a header whose type is not want, whose flags are not
// the ones MQTT fixes for it, or whose body length disagrees with Remaining.
func checkHeader(h Header, body []byte, want Type) error {
	if h.Type != want {
		return malformed("packet type " + h.Type.String() + " handed to the " + want.String() + " decoder")
	}
	if want != TypePublish && h.Flags != fixedFlags[want] {
		return malformed(want.String() + " fixed header flags are reserved and must be " + flagString(fixedFlags[want]) + " (MQTT-2.1.3-1)")
	}
	if len(body) != h.Remaining {
		return malformed(want.String() + " body length differs from its Remaining Length")
	}
	return nil
}

func flagString(f uint8) string {
	b := []byte("0000")
	for i := 0; i < 4; i++ {
		if f&(8>>i) != 0 {
			b[i] = '1'
		}
	}
	return string(b)
}
