// Package proxytest writes PROXY protocol v2 headers as a proxy would, for
// tests of the doors that read them.
package proxytest

import (
	"encoding/binary"
	"hash/crc32"
	"net/netip"
)

// The SSL TLV's client flags.
const (
	ClientSSL      = 0x01
	ClientCertConn = 0x02
	ClientCertSess = 0x04
)

// Header is what to write.
type Header struct {
	Local          bool           // the LOCAL command, naming no client
	Source, Dest   netip.AddrPort // INET or INET6 (both of one family)
	SSL            bool           // write an SSL TLV
	ClientFlags    byte
	Verify         uint32
	CN             string // the SSL TLV's CN sub-TLV, if not empty
	CRC32C         bool   // end with a CRC32C TLV
	CorruptCRC32C  bool   // ... whose value is wrong
	AuthorityFirst string // an authority TLV before the SSL one, if not empty
}

// Bytes is the header.
func (h Header) Bytes() []byte {
	b := []byte{0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A}
	cmd := byte(0x21)
	if h.Local {
		cmd = 0x20
	}
	switch {
	case h.Source.Addr().Is4():
		b = append(b, cmd, 0x11, 0, 0)
		s, d := h.Source.Addr().As4(), h.Dest.Addr().As4()
		b = append(b, s[:]...)
		b = append(b, d[:]...)
	case h.Source.Addr().Is6():
		b = append(b, cmd, 0x21, 0, 0)
		s, d := h.Source.Addr().As16(), h.Dest.Addr().As16()
		b = append(b, s[:]...)
		b = append(b, d[:]...)
	default:
		b = append(b, cmd, 0x00, 0, 0)
	}
	if h.Source.IsValid() {
		b = binary.BigEndian.AppendUint16(b, h.Source.Port())
		b = binary.BigEndian.AppendUint16(b, h.Dest.Port())
	}
	if h.AuthorityFirst != "" {
		b = tlv(b, 0x02, []byte(h.AuthorityFirst))
	}
	if h.SSL {
		v := []byte{h.ClientFlags}
		v = binary.BigEndian.AppendUint32(v, h.Verify)
		v = tlv(v, 0x21, []byte("TLSv1.3"))
		if h.CN != "" {
			v = tlv(v, 0x22, []byte(h.CN))
		}
		b = tlv(b, 0x20, v)
	}
	crcAt := -1
	if h.CRC32C {
		b = append(b, 0x03, 0, 4)
		crcAt = len(b)
		b = append(b, 0, 0, 0, 0)
	}
	binary.BigEndian.PutUint16(b[14:], uint16(len(b)-16))
	if crcAt >= 0 {
		sum := crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))
		if h.CorruptCRC32C {
			sum ^= 1
		}
		binary.BigEndian.PutUint32(b[crcAt:], sum)
	}
	return b
}

func tlv(b []byte, typ byte, v []byte) []byte {
	b = append(b, typ)
	b = binary.BigEndian.AppendUint16(b, uint16(len(v)))
	return append(b, v...)
}
