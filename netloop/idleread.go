package netloop

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"syscall"
)

// A stream connection's reader holds no buffer while its client is silent:
// it parks on the socket's readiness (parkUntilReadable) and takes a read
// buffer - and on a WebSocket door a bufio.Reader - from a pool only once
// the socket has bytes, giving them back when every byte read has been fed
// and nothing is left in crypto/tls or bufio. An idle TLS or ws connection
// then costs its state, crypto/tls's own buffers and one parked goroutine's
// small stack, not 8 KiB of read buffers and a second goroutine
// (docs/transports.md "What each door costs").

var (
	readBufs = sync.Pool{New: func() any { b := make([]byte, streamReadSize); return &b }}
	bufReads = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, streamReadSize) }}
)

// tlsRecordHeader is a TLS record's type, version and length.
const tlsRecordHeader = 5

// recordReader is the socket a TLS door's crypto/tls reads from. It reads
// the socket into a pooled buffer, only when crypto/tls asks, and hands out
// no byte past the end of the TLS record the bytes belong to: crypto/tls
// keeps whatever it is given beyond the record it decrypts, where nobody can
// see it, so held to one record it keeps nothing, and "nothing buffered"
// is knowable - this holds nothing (held) and the last read of plaintext did
// not fill its buffer (streamConn.readFull).
type recordReader struct {
	net.Conn
	buf  *[]byte // nil while empty
	r, w int
	err  error // the socket's error behind the bytes held
	hdr  [tlsRecordHeader]byte
	at   int // bytes of the current record handed out
	size int // the current record's length with its header; 0 until the header is whole
}

func (rr *recordReader) Read(p []byte) (int, error) {
	if rr.r == rr.w {
		if rr.err != nil {
			return 0, rr.err
		}
		if rr.buf == nil {
			rr.buf = readBufs.Get().(*[]byte)
		}
		n, err := rr.Conn.Read(*rr.buf)
		rr.r, rr.w, rr.err = 0, n, err
		if n == 0 {
			rr.release()
			return 0, err
		}
	}
	avail := (*rr.buf)[rr.r:rr.w]
	if rr.size == 0 {
		// The header's bytes, as many as are held, say the record's
		// length: then header and body go out in one read, as crypto/tls
		// asks for them when it can.
		if k := copy(rr.hdr[rr.at:], avail); rr.at+k == tlsRecordHeader {
			rr.size = tlsRecordHeader + int(binary.BigEndian.Uint16(rr.hdr[3:]))
		}
	}
	if rr.size > 0 {
		avail = avail[:min(len(avail), rr.size-rr.at)]
	} // else all that is held is the start of a header
	n := copy(p, avail)
	rr.r += n
	rr.at += n
	if rr.size > 0 && rr.at == rr.size {
		rr.at, rr.size = 0, 0
	}
	if rr.r == rr.w {
		rr.release()
	}
	return n, nil
}

func (rr *recordReader) release() {
	if rr.buf != nil {
		readBufs.Put(rr.buf)
		rr.buf = nil
	}
}

// held reports bytes read from the socket and not yet handed to crypto/tls.
func (rr *recordReader) held() bool { return rr.r < rr.w }

// fillReader notes whether the last read filled its buffer: then crypto/tls
// may hold more plaintext of the record, and the reader must not park.
type fillReader struct {
	r    io.Reader
	full bool
}

func (f *fillReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	f.full = n == len(p) && n > 0
	return n, err
}

// idleRead is a stream connection's reading side as far as parking goes.
type idleRead struct {
	raw  syscall.RawConn // the socket's; nil: never park (reads hold a buffer)
	rr   *recordReader   // a TLS door's; nil without TLS
	fill *fillReader     // what the reader reads: crypto/tls, or the socket
	buf  *[]byte         // the read buffer, nil while parked
	// peek is parkUntilReadable's check, made once so that parking
	// allocates nothing; peeked is where its byte lands.
	peek   func(fd uintptr) bool
	peeked [1]byte
}

// setSocket takes the socket to park on, when it is one.
func (ir *idleRead) setSocket(nc net.Conn) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	ir.raw = raw
	ir.peek = func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), ir.peeked[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return err != syscall.EAGAIN && err != syscall.EINTR
	}
}

// buffered reports bytes read from the socket that nobody has taken yet.
func (ir *idleRead) buffered() bool {
	return ir.fill.full || ir.rr != nil && ir.rr.held()
}

// parkUntilReadable waits, holding no buffer, until the socket has bytes,
// its end or an error - the read after it reports which - or the read
// deadline (closeGrace) passes. Without a raw socket it returns at once.
func (ir *idleRead) parkUntilReadable() error {
	if ir.raw == nil {
		return nil
	}
	return ir.raw.Read(ir.peek)
}

// take is the read buffer, from the pool if parked.
func (ir *idleRead) take() []byte {
	if ir.buf == nil {
		ir.buf = readBufs.Get().(*[]byte)
	}
	return *ir.buf
}

// giveBack returns the read buffer to the pool.
func (ir *idleRead) giveBack() {
	if ir.buf != nil {
		readBufs.Put(ir.buf)
		ir.buf = nil
	}
}
