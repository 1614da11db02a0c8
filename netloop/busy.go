package netloop

import (
	"crypto/tls"
	"net"
	"time"
)

// Server busy, as each protocol says it (RFC 0002 "Every reason code, in one
// place": 0x89, and 3.1.1's 0x03 Server unavailable). Written by hand rather
// than through the codec because nothing else of the CONNECT is read.
var (
	connackBusy5   = []byte{0x20, 3, 0x00, 0x89, 0x00}
	connackBusy311 = []byte{0x20, 2, 0x00, 0x03}
)

// busyTransport is what a Server busy answer is read and written over: the
// socket itself, or on a tls door the TLS session its handshake opens by
// deadline (nil when it does not: the socket is closed with nothing
// written). The handshake checks a client certificate as the door's always
// does; no password is read.
func busyTransport(l *listener, nc net.Conn, deadline time.Time) net.Conn {
	cfg := l.door.TLS
	if cfg == nil {
		return nc
	}
	tc := tls.Server(nc, cfg)
	tc.SetDeadline(deadline)
	if tc.Handshake() != nil {
		return nil
	}
	return tc
}

// answerBusy reads the opening bytes of a CONNECT from a socket that found a
// place in the overflow budget but no slot, and answers Server busy in the
// protocol the CONNECT names, checking no credential. Anything that is not
// the opening of a CONNECT of 3.1.1 or 5, or that does not arrive by
// deadline, is closed with nothing written. The caller closes nc.
func answerBusy(nc net.Conn, deadline time.Time) {
	nc.SetDeadline(deadline)
	// Fixed header (up to 5 bytes), then protocol name "MQTT" (2+4) and level.
	var buf [16]byte
	n := 0
	for {
		level, ok, more := connectLevel(buf[:n])
		if !more {
			if !ok {
				return
			}
			switch level {
			case 5:
				nc.Write(connackBusy5)
			case 4:
				nc.Write(connackBusy311)
			default:
				return
			}
			drainUntilClosed(nc)
			return
		}
		if n == len(buf) {
			return
		}
		m, err := nc.Read(buf[n:])
		n += m
		if err != nil && m == 0 {
			return
		}
	}
}

// connectLevel reads the protocol level from the opening bytes of a CONNECT:
// more is true while the bytes so far could still be one; ok says they are.
func connectLevel(b []byte) (level byte, ok, more bool) {
	if len(b) == 0 {
		return 0, false, true
	}
	if b[0] != 0x10 {
		return 0, false, false
	}
	// Remaining Length: skip its bytes.
	i := 1
	for ; ; i++ {
		if i >= len(b) {
			return 0, false, true
		}
		if i > 4 {
			return 0, false, false
		}
		if b[i]&0x80 == 0 {
			i++
			break
		}
	}
	const name = "\x00\x04MQTT"
	for j := 0; j < len(name); j++ {
		if i+j >= len(b) {
			return 0, false, true
		}
		if b[i+j] != name[j] {
			return 0, false, false
		}
	}
	if i+len(name) >= len(b) {
		return 0, false, true
	}
	return b[i+len(name)], true, false
}

// drainUntilClosed sends FIN after what was written and discards what the
// peer still sends (the rest of its CONNECT) until it closes or the deadline
// passes: closing with unread bytes would answer with a reset, which can
// destroy the CONNACK before the client reads it.
func drainUntilClosed(nc net.Conn) {
	if cw, ok := nc.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	var sink [512]byte
	for {
		if _, err := nc.Read(sink[:]); err != nil {
			return
		}
	}
}
