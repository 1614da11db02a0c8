package codec

import (
	"encoding/hex"
	"strings"
	"testing"
)

// pkt builds a packet from its first byte and the parts of its body,
// computing the Remaining Length, so a test can write any byte sequence.
func pkt(first byte, parts ...[]byte) []byte {
	var body []byte
	for _, p := range parts {
		body = append(body, p...)
	}
	return append(appendVarint([]byte{first}, uint32(len(body))), body...)
}

// str is a two-byte-length-prefixed string or binary field.
func str(s string) []byte { return appendBytes(nil, []byte(s)) }

func u16(v uint16) []byte { return appendUint16(nil, v) }

func raw(bs ...byte) []byte { return bs }

// props is an MQTT 5 property block: the length, then the properties.
func props(parts ...[]byte) []byte {
	var body []byte
	for _, p := range parts {
		body = append(body, p...)
	}
	return append(appendVarint(nil, uint32(len(body))), body...)
}

func hx(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

// decodeErr frames and decodes a whole packet, returning the refusal.
func decodeErr(w []byte, version uint8) error {
	h, err := ReadHeader(w, 0)
	if err != nil {
		return err
	}
	if h.Total() > len(w) {
		return ErrNeedMore
	}
	var ps Packets
	_, err = ps.Decode(h, w[h.HeaderLen:h.Total()], version)
	return err
}

// refuses asserts that decoding w fails with code, and returns the refusal.
func refuses(t *testing.T, w []byte, version uint8, code ReasonCode) *Error {
	t.Helper()
	err := decodeErr(w, version)
	e := AsError(err)
	if e == nil {
		t.Fatalf("decoding % x: got %v, want a refusal with %s", w, err, code)
	}
	if e.Code != code {
		t.Fatalf("decoding % x: refused with %s (%s), want %s", w, e.Code, e.Rule, code)
	}
	if e.Rule == "" {
		t.Fatalf("decoding % x: refusal names no rule", w)
	}
	return e
}

// accepts asserts that w decodes.
func accepts(t *testing.T, w []byte, version uint8) {
	t.Helper()
	if err := decodeErr(w, version); err != nil {
		t.Fatalf("decoding % x: %v", w, err)
	}
}

// connectHead is a minimal MQTT 5 CONNECT body up to (not including) the
// properties: protocol name, level, flags, keep alive.
func connectHead(level, flags byte) []byte {
	return append(append(str("MQTT"), level, flags), u16(60)...)
}
