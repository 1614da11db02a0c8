package proxyproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net/netip"
	"testing"
)

// tlv is one type-length-value.
func tlv(typ byte, v []byte) []byte {
	b := []byte{typ, 0, 0}
	binary.BigEndian.PutUint16(b[1:], uint16(len(v)))
	return append(b, v...)
}

// sslTLV is the SSL TLV with its client flags, verify result and a CN.
func sslTLV(flags byte, verify uint32, cn string) []byte {
	v := []byte{flags, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(v[1:], verify)
	v = append(v, tlv(0x21, []byte("TLSv1.3"))...)
	if cn != "" {
		v = append(v, tlv(subTypeSSLCN, []byte(cn))...)
	}
	return tlv(typeSSL, v)
}

// header builds a v2 header: cmd 0 LOCAL or 1 PROXY, an INET source
// 192.0.2.7:40000, then the TLVs; withCRC appends a correct CRC32C TLV.
func header(cmd byte, withCRC bool, tlvs ...[]byte) []byte {
	b := append([]byte{}, signature[:]...)
	b = append(b, 0x20|cmd, 0x11, 0, 0)
	b = append(b, 192, 0, 2, 7, 10, 0, 0, 1, 0x9c, 0x40, 0x22, 0xb3)
	for _, t := range tlvs {
		b = append(b, t...)
	}
	crcAt := -1
	if withCRC {
		b = append(b, typeCRC32C, 0, 4)
		crcAt = len(b)
		b = append(b, 0, 0, 0, 0)
	}
	binary.BigEndian.PutUint16(b[14:], uint16(len(b)-headerLen))
	if crcAt >= 0 {
		binary.BigEndian.PutUint32(b[crcAt:], crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
	}
	return b
}

func TestVerifiedCertificateNameIsBelieved(t *testing.T) {
	h, n, err := Parse(header(1, false, sslTLV(clientSSL|clientCertConn, 0, "device-7")))
	if err != nil {
		t.Fatal(err)
	}
	if name, ok := h.Name(); !ok || name != "device-7" {
		t.Fatalf("name %q %v, want device-7", name, ok)
	}
	if want := netip.MustParseAddrPort("192.0.2.7:40000"); h.Source != want {
		t.Fatalf("source %v, want %v", h.Source, want)
	}
	if n != len(header(1, false, sslTLV(clientSSL|clientCertConn, 0, "device-7"))) {
		t.Fatalf("length %d", n)
	}
}

// RFC 0002: the CN is believed only with TLS and a certificate in the client
// flags and verify result 0; otherwise the client is certless.
func TestNameBelievedOnlyWhenTheProxyVerified(t *testing.T) {
	for _, c := range []struct {
		what       string
		flags      byte
		verify     uint32
		cn         string
		unverified bool
	}{
		{"optional_no_ca: verify 21", clientSSL | clientCertConn, 21, "device-7", true},
		{"no certificate presented", clientSSL, 0, "device-7", false},
		{"not TLS", clientCertConn, 0, "device-7", false},
		{"verified, no CN", clientSSL | clientCertConn, 0, "", false},
	} {
		h, _, err := Parse(header(1, false, sslTLV(c.flags, c.verify, c.cn)))
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if name, ok := h.Name(); ok {
			t.Errorf("%s: believed %q", c.what, name)
		}
		if h.Unverified() != c.unverified {
			t.Errorf("%s: Unverified %v, want %v", c.what, h.Unverified(), c.unverified)
		}
	}
	// A resumed session's certificate counts as presented.
	h, _, _ := Parse(header(1, false, sslTLV(clientSSL|clientCertSess, 0, "device-8")))
	if name, ok := h.Name(); !ok || name != "device-8" {
		t.Fatalf("resumed session: %q %v", name, ok)
	}
}

// GAP-4: LOCAL is a header naming nobody, the socket peer kept.
func TestLocalNamesNobodyAndKeepsThePeer(t *testing.T) {
	h, _, err := Parse(header(0, false, sslTLV(clientSSL|clientCertConn, 0, "device-7")))
	if err != nil {
		t.Fatal(err)
	}
	if !h.Local || h.Source.IsValid() {
		t.Fatalf("local %v source %v", h.Local, h.Source)
	}
	if _, ok := h.Name(); ok {
		t.Fatal("a LOCAL header named a client")
	}
}

// GAP-4: a CRC32C is checked when present; a mismatch refuses the header.
func TestCRC32CCheckedWhenPresent(t *testing.T) {
	b := header(1, true, tlv(typeAuthority, []byte("broker.example")), sslTLV(clientSSL|clientCertConn, 0, "device-7"))
	h, _, err := Parse(b)
	if err != nil {
		t.Fatalf("a correct CRC32C refused: %v", err)
	}
	if h.Authority != "broker.example" {
		t.Fatalf("authority %q", h.Authority)
	}
	b[len(b)-1] ^= 0xFF
	if _, _, err := Parse(b); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a wrong CRC32C: %v, want ErrMalformed", err)
	}
}

func TestUnknownTLVsAreSkipped(t *testing.T) {
	h, _, err := Parse(header(1, false, tlv(0x05, []byte("unique")), tlv(0xE0, []byte("vendor")), sslTLV(clientSSL|clientCertConn, 0, "d")))
	if err != nil {
		t.Fatal(err)
	}
	if name, _ := h.Name(); name != "d" {
		t.Fatalf("name %q", name)
	}
}

func TestV1IsRefusedNamingTheSetting(t *testing.T) {
	_, err := Read(bytes.NewReader([]byte("PROXY TCP4 192.0.2.7 10.0.0.1 40000 8883\r\n\x10\x0c")))
	if !errors.Is(err, ErrV1) {
		t.Fatalf("v1: %v", err)
	}
	if !bytes.Contains([]byte(err.Error()), []byte("proxy_protocol v2")) {
		t.Fatalf("the refusal does not name the setting: %v", err)
	}
	// Short v1 (UNKNOWN) is recognised from its first six bytes.
	if _, err := Read(bytes.NewReader([]byte("PROXY UNKNOWN\r\n"))); !errors.Is(err, ErrV1) {
		t.Fatalf("v1 UNKNOWN: %v", err)
	}
}

func TestNoHeaderIsRefused(t *testing.T) {
	// An MQTT CONNECT straight away: the proxy is not sending headers.
	if _, err := Read(bytes.NewReader([]byte{0x10, 0x0c, 0, 4, 'M', 'Q', 'T', 'T', 5, 2, 0, 60, 0, 0})); !errors.Is(err, ErrNoHeader) {
		t.Fatalf("no header: %v", err)
	}
	if _, err := Read(bytes.NewReader([]byte("POST / HTTP/1.1\r\n"))); !errors.Is(err, ErrNoHeader) {
		t.Fatalf("HTTP: %v", err)
	}
}

// Read takes the header and not one byte more: the CONNECT after it is the
// connection's.
func TestReadLeavesWhatFollows(t *testing.T) {
	after := []byte{0x10, 0x0c, 0, 4, 'M', 'Q', 'T', 'T'}
	r := &oneByte{b: append(header(1, true, sslTLV(clientSSL|clientCertConn, 0, "device-7")), after...)}
	h, err := Read(r)
	if err != nil {
		t.Fatal(err)
	}
	if name, _ := h.Name(); name != "device-7" {
		t.Fatalf("name %q", name)
	}
	rest, _ := io.ReadAll(r)
	if !bytes.Equal(rest, after) {
		t.Fatalf("left %x, want %x", rest, after)
	}
}

// oneByte hands out its bytes one at a time, as a slow socket might.
type oneByte struct{ b []byte }

func (o *oneByte) Read(p []byte) (int, error) {
	if len(o.b) == 0 {
		return 0, io.EOF
	}
	p[0] = o.b[0]
	o.b = o.b[1:]
	return 1, nil
}

func TestINET6AndTruncations(t *testing.T) {
	b := append([]byte{}, signature[:]...)
	b = append(b, 0x21, 0x21, 0, 36)
	src := netip.MustParseAddr("2001:db8::7").As16()
	b = append(b, src[:]...)
	b = append(b, make([]byte, 16)...)
	b = append(b, 0x9c, 0x40, 0x22, 0xb3)
	h, _, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.Source != netip.MustParseAddrPort("[2001:db8::7]:40000") {
		t.Fatalf("source %v", h.Source)
	}
	for i := 0; i < len(b); i++ {
		if _, _, err := Parse(b[:i]); !errors.Is(err, ErrNeedMore) {
			t.Fatalf("%d bytes: %v, want ErrNeedMore", i, err)
		}
	}
	// A TLV that runs past the header.
	bad := header(1, false, tlv(0x05, []byte("x")))
	bad[len(bad)-2] = 9
	if _, _, err := Parse(bad); !errors.Is(err, ErrMalformed) {
		t.Fatalf("overlong TLV: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(header(1, true, sslTLV(clientSSL|clientCertConn, 0, "device-7")))
	f.Add(header(0, false))
	f.Add([]byte("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := Parse(b)
		if err != nil {
			return
		}
		if n < headerLen || n > len(b) {
			t.Fatalf("length %d of %d bytes", n, len(b))
		}
		// Read over the same bytes agrees, and leaves the rest.
		r := bytes.NewReader(b)
		h2, err := Read(r)
		if err != nil {
			t.Fatalf("Parse took it, Read refused: %v", err)
		}
		if h2 != h || r.Len() != len(b)-n {
			t.Fatalf("Read %+v left %d, Parse %+v took %d", h2, r.Len(), h, n)
		}
	})
}

// Checklist C.4 #47, RFC 0002 "Behind a proxy that terminated TLS": nginx's
// proxy_protocol v2 sends the authority TLV, a CRC32C and an SSL TLV whose
// sub-TLVs carry the version, the CN, the cipher (0x23), the signature
// algorithm (0x24) and the key algorithm (0x25). The three last are read
// past wherever they stand - after the CN as nginx sends them, or before it
// - and the CN is still believed.
func TestNginxSSLSubTLVsCipherSigAlgKeyAlgAreReadPast(t *testing.T) {
	ssl := func(subs ...[]byte) []byte {
		v := []byte{clientSSL | clientCertConn, 0, 0, 0, 0}
		for _, s := range subs {
			v = append(v, s...)
		}
		return tlv(typeSSL, v)
	}
	version := tlv(0x21, []byte("TLSv1.3"))
	cn := tlv(subTypeSSLCN, []byte("device-7"))
	cipher := tlv(0x23, []byte("TLS_AES_256_GCM_SHA384"))
	sigAlg := tlv(0x24, []byte("ECDSA-SHA256"))
	keyAlg := tlv(0x25, []byte("EC256"))
	for what, subs := range map[string][][]byte{
		"nginx's order": {version, cn, cipher, sigAlg, keyAlg},
		"before the CN": {version, cipher, sigAlg, keyAlg, cn},
	} {
		b := header(1, true, tlv(typeAuthority, []byte("broker.example")), ssl(subs...))
		h, n, err := Parse(b)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if name, ok := h.Name(); !ok || name != "device-7" || n != len(b) || h.Authority != "broker.example" {
			t.Fatalf("%s: name %q %v, length %d of %d, authority %q", what, name, ok, n, len(b), h.Authority)
		}
	}
}
