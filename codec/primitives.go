package codec

import (
	"bytes"
	"errors"
	"unicode/utf8"
)

var (
	errVarintShort    = errors.New("variable byte integer is cut short")
	errVarintTooLong  = errors.New("variable byte integer is longer than four bytes (MQTT-1.5.5)")
	errVarintNotShort = errors.New("variable byte integer is not in its shortest form (MQTT-1.5.5-1)")
)

// readVarint decodes a variable byte integer (MQTT 1.5.5) at the start of b,
// returning the value and how many bytes it took.
func readVarint(b []byte) (uint32, int, error) {
	var value uint32
	for i := 0; i < 4; i++ {
		if i >= len(b) {
			return 0, 0, errVarintShort
		}
		c := b[i]
		value |= uint32(c&0x7F) << (7 * i)
		if c&0x80 == 0 {
			if c == 0 && i > 0 {
				return 0, 0, errVarintNotShort
			}
			return value, i + 1, nil
		}
	}
	return 0, 0, errVarintTooLong
}

func appendVarint(dst []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if v != 0 {
			dst = append(dst, c|0x80)
			continue
		}
		return append(dst, c)
	}
}

func varintLen(v uint32) int {
	switch {
	case v < 1<<7:
		return 1
	case v < 1<<14:
		return 2
	case v < 1<<21:
		return 3
	default:
		return 4
	}
}

func appendUint16(dst []byte, v uint16) []byte { return append(dst, byte(v>>8), byte(v)) }

func appendUint32(dst []byte, v uint32) []byte {
	return append(dst, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// appendBytes writes a two-byte length and b (a UTF-8 string or binary data).
func appendBytes(dst []byte, b []byte) []byte {
	dst = appendUint16(dst, uint16(len(b)))
	return append(dst, b...)
}

// reader walks a packet body. Every read names the field it reads, so a
// refusal says which field ran past the packet.
type reader struct {
	b   []byte
	off int
}

func (r *reader) remaining() int { return len(r.b) - r.off }

func (r *reader) byte1(field string) (byte, error) {
	if r.off >= len(r.b) {
		return 0, runsPast(field)
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

func (r *reader) uint16(field string) (uint16, error) {
	if len(r.b)-r.off < 2 {
		return 0, runsPast(field)
	}
	v := uint16(r.b[r.off])<<8 | uint16(r.b[r.off+1])
	r.off += 2
	return v, nil
}

func (r *reader) uint32(field string) (uint32, error) {
	if len(r.b)-r.off < 4 {
		return 0, runsPast(field)
	}
	b := r.b[r.off:]
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	r.off += 4
	return v, nil
}

func (r *reader) varint(field string) (uint32, error) {
	v, n, err := readVarint(r.b[r.off:])
	if err != nil {
		if err == errVarintShort {
			return 0, runsPast(field)
		}
		return 0, malformed(field + ": " + err.Error())
	}
	r.off += n
	return v, nil
}

// binary reads two-byte-length-prefixed bytes, aliasing the body.
func (r *reader) binary(field string) ([]byte, error) {
	if len(r.b)-r.off < 2 {
		return nil, runsPast(field + " length")
	}
	n := int(r.b[r.off])<<8 | int(r.b[r.off+1])
	r.off += 2
	if len(r.b)-r.off < n {
		return nil, runsPast(field)
	}
	v := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return v, nil
}

// utf8 reads a UTF-8 Encoded String (MQTT 1.5.4): well-formed, no U+0000.
func (r *reader) utf8(field string) ([]byte, error) {
	v, err := r.binary(field)
	if err != nil {
		return nil, err
	}
	if err := checkUTF8(v, field); err != nil {
		return nil, err
	}
	return v, nil
}

// checkUTF8 refuses what MQTT makes malformed in a UTF-8 Encoded String:
// ill-formed UTF-8, including encoded surrogates (MQTT-1.5.4-1), and U+0000
// (MQTT-1.5.4-2). The code points MQTT only discourages (controls,
// non-characters) pass: rules about those are the server's to choose
// (see ValidClientID, ValidUserName).
func checkUTF8(b []byte, field string) error {
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == 0 {
			return malformed(field + " holds U+0000 (MQTT-1.5.4-2)")
		}
		if c >= utf8.RuneSelf {
			if !utf8.Valid(b[i:]) {
				return malformed(field + " is not well-formed UTF-8 (MQTT-1.5.4-1)")
			}
			if bytes.IndexByte(b[i:], 0) >= 0 {
				return malformed(field + " holds U+0000 (MQTT-1.5.4-2)")
			}
			return nil
		}
	}
	return nil
}

func runsPast(field string) error {
	return malformed(field + " runs past the end of the packet")
}

// finish refuses bytes left after the packet's last field.
func (r *reader) finish(pkt string) error {
	if r.off != len(r.b) {
		return malformed(pkt + " has bytes left after its last field")
	}
	return nil
}

// hasWildcard reports whether a topic name holds + or #, which only filters may.
func hasWildcard(b []byte) bool {
	return bytes.IndexByte(b, '+') >= 0 || bytes.IndexByte(b, '#') >= 0
}

func utf8Valid(b []byte) bool { return utf8.Valid(b) }

// retainedCap is the most elements a reusable struct keeps between decodes.
// A connection that once sent a SUBSCRIBE of thousands of filters should not
// hold their slots for the rest of its life; typical packets stay well under.
const retainedCap = 64

// reuse empties s for the next decode, keeping its capacity unless that is
// more than retainedCap.
func reuse[T any](s []T) []T {
	if cap(s) > retainedCap {
		return nil
	}
	return s[:0]
}

// countFields counts the length-prefixed fields in b, each followed by extra
// bytes (a SUBSCRIBE's options byte), so a list is allocated once at its size.
// It stops at a zero-length field, where the decoder stops too (a filter may
// not be empty), so every slot counted stands for at least 3+extra bytes.
func countFields(b []byte, extra int) int {
	n := 0
	for i := 0; i+2 <= len(b); n++ {
		l := int(b[i])<<8 | int(b[i+1])
		if l == 0 {
			return n
		}
		i += 2 + l + extra
	}
	return n
}
