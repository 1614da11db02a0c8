// Package proxyproto reads the PROXY protocol version 2 header a proxy that
// terminated TLS writes at the start of every connection it hands to a unix
// door (RFC 0002 "Behind a proxy that terminated TLS"): the client's real
// address, and the certificate name the proxy verified.
//
// It reads version 2 only. A version 1 header is recognised so that it can be
// refused by name: v1 carries no TLVs, so it cannot say which certificate was
// verified, and "proxy_protocol on" - the natural thing to write at nginx -
// is v1.
package proxyproto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/netip"
	"time"
)

// HeaderTimeout is how long a door with proxy_protocol waits for the header
// from accept: a proxy writes it the moment it connects, so only a peer that
// is not a proxy takes longer. Fixed, not configured (RFC 0002 "Behind a
// proxy that terminated TLS").
const HeaderTimeout = 5 * time.Second

// signature opens every v2 header.
var signature = [12]byte{0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A}

// v1Prefix opens every v1 header.
const v1Prefix = "PROXY "

// headerLen is the fixed part: signature, version and command, family and
// protocol, and the length of what follows.
const headerLen = 16

// TLV types this package reads (the PROXY protocol specification, 2.2).
const (
	typeAuthority = 0x02
	typeCRC32C    = 0x03
	typeSSL       = 0x20
	subTypeSSLCN  = 0x22
)

// The SSL TLV's client flags.
const (
	clientSSL      = 0x01 // the client connected over TLS
	clientCertConn = 0x02 // it presented a certificate on this connection
	clientCertSess = 0x04 // it presented one on the TLS session this connection resumed
)

// Errors a header is refused with. Each is what the broker logs, so each says
// what to change.
var (
	// ErrNoHeader: the connection did not open with a PROXY header.
	ErrNoHeader = errors.New("the connection did not open with a PROXY protocol v2 header, and proxy_protocol: true expects one on every connection")
	// ErrV1: the proxy speaks version 1.
	ErrV1 = errors.New("the proxy sent a PROXY protocol v1 header; Sagüin reads v2 only - set proxy_protocol v2 at nginx (not on), or send-proxy-v2-ssl-cn at HAProxy")
	// ErrMalformed wraps what is wrong with a v2 header.
	ErrMalformed = errors.New("malformed PROXY protocol v2 header")
	// ErrNeedMore: Parse was given less than a whole header.
	ErrNeedMore = errors.New("a PROXY header needs more bytes")
)

// Header is what a v2 header said.
type Header struct {
	// Local is the LOCAL command: the proxy's own connection (a health
	// check, say), carrying no client. The socket's peer stays the address.
	Local bool
	// Source is the client's address for an INET or INET6 header; invalid
	// for LOCAL, UNSPEC and UNIX, where the socket's peer is kept.
	Source netip.AddrPort
	// Authority is the host name the client asked for (SNI), if sent.
	Authority string

	// SSL is set when the header carries an SSL TLV; the fields below are
	// meaningful only then.
	SSL bool
	// ClientFlags are the SSL TLV's client bits.
	ClientFlags byte
	// Verify is the proxy's verification result: 0 is a certificate it
	// verified.
	Verify uint32
	// CN is the certificate's Common Name as the proxy sent it.
	CN string
}

// Name is the client's name the header vouches for, and ok when there is
// one: only the Common Name of a certificate the proxy says it verified - the
// client flags say TLS and a certificate presented, and the verify result is
// 0. Anything else names nobody (RFC 0002 "Behind a proxy that terminated
// TLS").
func (h *Header) Name() (name string, ok bool) {
	if !h.Verified() {
		return "", false
	}
	return h.CN, h.CN != ""
}

// Verified reports a certificate the proxy says it verified - TLS, a
// certificate presented, verify result 0 - whether or not it sent a CN.
func (h *Header) Verified() bool {
	return !h.Local && h.SSL && h.ClientFlags&clientSSL != 0 && h.ClientFlags&(clientCertConn|clientCertSess) != 0 && h.Verify == 0
}

// Unverified reports a certificate the proxy saw and did not verify.
func (h *Header) Unverified() bool {
	return h.SSL && h.ClientFlags&(clientCertConn|clientCertSess) != 0 && h.Verify != 0
}

// Read reads one header from r and nothing after it, so that what follows -
// the client's CONNECT - stays unread for whoever serves the connection.
func Read(r io.Reader) (Header, error) {
	var fixed [headerLen]byte
	n := 0
	for n < headerLen {
		m, err := r.Read(fixed[n:])
		n += m
		if err := checkPrefix(fixed[:n]); err != nil {
			return Header{}, err
		}
		if err != nil && n < headerLen {
			return Header{}, fmt.Errorf("reading the PROXY header: %w", err)
		}
	}
	rest := int(binary.BigEndian.Uint16(fixed[14:16]))
	b := make([]byte, headerLen+rest)
	copy(b, fixed[:])
	if _, err := io.ReadFull(r, b[headerLen:]); err != nil {
		return Header{}, fmt.Errorf("reading the PROXY header's %d bytes: %w", rest, err)
	}
	h, _, err := Parse(b)
	return h, err
}

// checkPrefix says whether b can still open a v2 header: ErrV1 once it is
// plainly a v1 one, ErrNoHeader once it is neither.
func checkPrefix(b []byte) error {
	if len(b) > 0 && b[0] == v1Prefix[0] {
		n := min(len(b), len(v1Prefix))
		if string(b[:n]) != v1Prefix[:n] {
			return ErrNoHeader
		}
		if n == len(v1Prefix) {
			return ErrV1
		}
		return nil
	}
	n := min(len(b), len(signature))
	if string(b[:n]) != string(signature[:n]) {
		return ErrNoHeader
	}
	return nil
}

// Parse reads a header from the start of b and returns it with its length;
// ErrNeedMore when b holds less than a whole one.
func Parse(b []byte) (Header, int, error) {
	if err := checkPrefix(b); err != nil {
		return Header{}, 0, err
	}
	if len(b) < headerLen {
		return Header{}, 0, ErrNeedMore
	}
	total := headerLen + int(binary.BigEndian.Uint16(b[14:16]))
	if len(b) < total {
		return Header{}, 0, ErrNeedMore
	}
	b = b[:total]
	if v := b[12] >> 4; v != 2 {
		return Header{}, 0, fmt.Errorf("%w: version %d", ErrMalformed, v)
	}
	var h Header
	switch cmd := b[12] & 0x0F; cmd {
	case 0:
		h.Local = true
	case 1:
	default:
		return Header{}, 0, fmt.Errorf("%w: command %d is neither LOCAL nor PROXY", ErrMalformed, cmd)
	}
	body := b[headerLen:]
	// The address block's size follows from the family; a LOCAL header's
	// family is usually UNSPEC, and whatever it says is skipped.
	var addrLen int
	family := b[13] >> 4
	switch family {
	case 0: // UNSPEC
	case 1:
		addrLen = 12
	case 2:
		addrLen = 36
	case 3:
		addrLen = 216
	default:
		return Header{}, 0, fmt.Errorf("%w: address family %d", ErrMalformed, family)
	}
	if len(body) < addrLen {
		return Header{}, 0, fmt.Errorf("%w: %d bytes cannot hold the addresses of family %d", ErrMalformed, len(body), family)
	}
	if !h.Local {
		switch family {
		case 1:
			ip := netip.AddrFrom4([4]byte(body[0:4]))
			h.Source = netip.AddrPortFrom(ip, binary.BigEndian.Uint16(body[8:10]))
		case 2:
			ip := netip.AddrFrom16([16]byte(body[0:16]))
			h.Source = netip.AddrPortFrom(ip, binary.BigEndian.Uint16(body[32:34]))
		}
	}
	tlvs := body[addrLen:]
	crcAt := -1
	for off := 0; off < len(tlvs); {
		if len(tlvs)-off < 3 {
			return Header{}, 0, fmt.Errorf("%w: a TLV cut short", ErrMalformed)
		}
		typ := tlvs[off]
		l := int(binary.BigEndian.Uint16(tlvs[off+1 : off+3]))
		if len(tlvs)-off-3 < l {
			return Header{}, 0, fmt.Errorf("%w: TLV 0x%02x declares %d bytes, %d remain", ErrMalformed, typ, l, len(tlvs)-off-3)
		}
		v := tlvs[off+3 : off+3+l]
		switch typ {
		case typeAuthority:
			h.Authority = string(v)
		case typeCRC32C:
			if l != 4 {
				return Header{}, 0, fmt.Errorf("%w: CRC32C TLV of %d bytes", ErrMalformed, l)
			}
			crcAt = headerLen + addrLen + off + 3
		case typeSSL:
			if err := h.readSSL(v); err != nil {
				return Header{}, 0, err
			}
		}
		// Every other TLV - ALPN, unique id, NOOP, NETNS, a vendor's - is
		// skipped: nothing here needs it.
		off += 3 + l
	}
	if crcAt >= 0 {
		want := binary.BigEndian.Uint32(b[crcAt : crcAt+4])
		if got := checksum(b, crcAt); got != want {
			return Header{}, 0, fmt.Errorf("%w: CRC32C 0x%08x, the header's bytes give 0x%08x", ErrMalformed, want, got)
		}
	}
	return h, total, nil
}

// readSSL reads the SSL TLV: client flags, verify result, then sub-TLVs.
func (h *Header) readSSL(v []byte) error {
	if len(v) < 5 {
		return fmt.Errorf("%w: SSL TLV of %d bytes", ErrMalformed, len(v))
	}
	h.SSL = true
	h.ClientFlags = v[0]
	h.Verify = binary.BigEndian.Uint32(v[1:5])
	for sub := v[5:]; len(sub) > 0; {
		if len(sub) < 3 {
			return fmt.Errorf("%w: an SSL sub-TLV cut short", ErrMalformed)
		}
		l := int(binary.BigEndian.Uint16(sub[1:3]))
		if len(sub)-3 < l {
			return fmt.Errorf("%w: SSL sub-TLV 0x%02x declares %d bytes, %d remain", ErrMalformed, sub[0], l, len(sub)-3)
		}
		if sub[0] == subTypeSSLCN {
			h.CN = string(sub[3 : 3+l])
		}
		sub = sub[3+l:]
	}
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksum is the CRC32C of the whole header with its CRC32C value read as
// zeros, as the specification computes it.
func checksum(b []byte, crcAt int) uint32 {
	var zero [4]byte
	c := crc32.Update(0, castagnoli, b[:crcAt])
	c = crc32.Update(c, castagnoli, zero[:])
	return crc32.Update(c, castagnoli, b[crcAt+4:])
}
