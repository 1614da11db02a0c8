package netloop

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/gobwas/ws"
)

// The WebSocket door (RFC 0002 "Which web pages may connect", "How long a
// socket may wait to send CONNECT"): an HTTP/1.1 upgrade on any path, the
// mqtt subprotocol selected when offered, the page's Origin decided before
// the 101, then MQTT in binary frames. gobwas/ws parses the request and the
// frame headers; it works on a plain io.ReadWriter, so the same code serves
// ws and wss, and reads a frame header into a buffer of ours, allocating
// nothing per frame.

// WebSocket opcodes written here (RFC 6455 5.2).
const (
	opBinary = byte(ws.OpBinary)
	opClose  = byte(ws.OpClose)
	opPong   = byte(ws.OpPong)
)

// maxRequestHead bounds the HTTP request an upgrade reads: a request line
// and headers no browser comes near, and memory a stranger chooses.
const maxRequestHead = 16 << 10

// maxRequestBody bounds the body an upgrade request may declare: it is part
// of the request connect_timeout covers (RFC 0002), read and discarded before
// the upgrade, and no WebSocket client sends one.
const maxRequestBody = 16 << 10

// maxOriginLogged bounds the Origin a refusal's log line quotes.
const maxOriginLogged = 256

// wsState is a WebSocket connection's reading side.
type wsState struct {
	br         *bufio.Reader              // from bufReads; nil while parked
	hdr        [ws.MaxHeaderSize - 2]byte // ReadHeaderBuffer's working room
	ctl        [ws.MaxControlFramePayloadSize]byte
	fragmented bool // inside a message of several frames
}

var (
	errPeerClosed = errors.New("the client closed the WebSocket")
	errTextFrame  = errors.New("a text frame: MQTT travels in binary frames")
)

// upgrade reads the HTTP request and answers it: 101 with the mqtt
// subprotocol when offered, or - for a page whose origin is refused, a
// request that is not an upgrade, a malformed one - an error status, the
// slot given back before that answer is written.
func (t *streamConn) upgrade(rw io.ReadWriter) error {
	st := &wsState{br: bufReads.Get().(*bufio.Reader)}
	st.br.Reset(t.rd.fill)
	var host, origin string
	var accepted, refused, chunked bool
	body := int64(-1) // Content-Length, -1 for none (or one that is not a number)
	u := ws.Upgrader{
		Protocol: func(p []byte) bool { return string(p) == "mqtt" },
		OnHost: func(h []byte) error {
			host = string(h)
			return nil
		},
		OnHeader: func(k, v []byte) error {
			switch {
			case strings.EqualFold(string(k), "Origin"):
				origin = string(v)
			case strings.EqualFold(string(k), "Content-Length"):
				if n, err := strconv.ParseInt(string(v), 10, 64); err == nil && n >= 0 {
					body = n
				}
			case strings.EqualFold(string(k), "Transfer-Encoding"):
				chunked = true
			}
			return nil
		},
		OnBeforeUpgrade: func() (ws.HandshakeHeader, error) {
			// A declared body is part of the request (RFC 0002 "How long a
			// socket may wait to send CONNECT"): read under the same bound,
			// never taken for the frames behind it.
			switch {
			case chunked:
				return nil, ws.RejectConnectionError(ws.RejectionStatus(400), ws.RejectionReason("a chunked body on an upgrade request"))
			case body > maxRequestBody:
				return nil, ws.RejectConnectionError(ws.RejectionStatus(413), ws.RejectionReason("the upgrade request declares a body larger than this door reads"))
			case body > 0:
				if _, err := io.CopyN(io.Discard, st.br, body); err != nil {
					return nil, err
				}
			}
			if !t.l.origins.Load().admits(origin, host, t.l.door.TLS != nil) {
				refused = true
				t.c.slotRelease()
				t.c.logWarn("refused a WebSocket upgrade: the page's origin is not admitted (same_origin, allowed_origins)", "origin", bounded(origin, maxOriginLogged))
				return nil, ws.RejectConnectionError(ws.RejectionStatus(403), ws.RejectionReason("this page's origin may not connect"))
			}
			accepted = true
			return nil, nil
		},
	}
	hc := &handshakeConn{head: headReader{br: st.br}, w: rw, beforeAnswer: func() {
		if !accepted {
			t.c.slotRelease() // the answer is a refusal: the slot goes back first
		}
	}}
	if _, err := u.Upgrade(hc); err != nil {
		if !refused && t.c.state.Load() != stateEnding {
			t.c.logWarn("closed: not a WebSocket upgrade this door takes", "error", err)
		}
		return err
	}
	t.wmu.Lock()
	t.ws = st
	t.wmu.Unlock()
	return nil
}

// handshakeConn is what the upgrade reads and writes: the request head and
// not a byte more (the frames after it are read by readFrames from the same
// buffer), and the answer, before whose first byte beforeAnswer runs.
type handshakeConn struct {
	head         headReader
	w            io.Writer
	beforeAnswer func()
	answered     bool
}

func (h *handshakeConn) Read(p []byte) (int, error) { return h.head.Read(p) }

func (h *handshakeConn) Write(p []byte) (int, error) {
	if !h.answered {
		h.answered = true
		h.beforeAnswer()
	}
	return h.w.Write(p)
}

// headReader serves the HTTP request head from br up to and including the
// blank line that ends it: gobwas reads through a buffer of its own, and
// whatever it read beyond the head - a client's first frame - would be lost
// with that buffer.
type headReader struct {
	br      *bufio.Reader
	served  int
	lineLen int // bytes of the current line, CR aside
	done    bool
}

var errHeadTooLarge = fmt.Errorf("the HTTP request head is larger than %d bytes", maxRequestHead)

func (h *headReader) Read(p []byte) (int, error) {
	if h.done {
		return 0, io.EOF
	}
	if h.br.Buffered() == 0 {
		if _, err := h.br.Peek(1); err != nil {
			return 0, err
		}
	}
	buf, _ := h.br.Peek(h.br.Buffered())
	n := 0
	for n < len(buf) && n < len(p) && !h.done {
		switch c := buf[n]; {
		case c == '\n' && h.lineLen == 0 && h.served+n > 0:
			h.done = true // a line with nothing on it: the head is over
		case c == '\n':
			h.lineLen = 0
		case c != '\r':
			h.lineLen++
		}
		n++
	}
	h.served += n
	if h.served > maxRequestHead {
		return 0, errHeadTooLarge
	}
	return h.br.Read(p[:n])
}

// readFrames reads the client's frames: binary payloads are the MQTT bytes,
// in order whatever the framing; pings are answered; a close ends the
// connection; a text frame, an unmasked one or any other violation of RFC
// 6455 ends it with a close frame saying why.
func (t *streamConn) readFrames(woken bool) error {
	st := t.ws
	defer t.parkFrames()
	for ; ; woken = false {
		// Between frames with nothing read and not taken, the reader parks
		// holding neither its bufio.Reader nor its buffer.
		if !woken && (st.br == nil || st.br.Buffered() == 0) && !t.rd.buffered() {
			return errPark
		}
		if st.br == nil {
			st.br = bufReads.Get().(*bufio.Reader)
			st.br.Reset(t.rd.fill)
		}
		h, err := ws.ReadHeaderBuffer(st.br, st.hdr[:2])
		if err != nil {
			return err
		}
		state := ws.StateServerSide
		if st.fragmented {
			state |= ws.StateFragmented
		}
		if err := ws.CheckHeader(h, state); err != nil {
			t.c.logWarn("closed: WebSocket protocol error", "error", err)
			t.closeWS(ws.StatusProtocolError)
			return err
		}
		if h.OpCode.IsControl() {
			p := st.ctl[:h.Length]
			if _, err := io.ReadFull(st.br, p); err != nil {
				return err
			}
			ws.Cipher(p, h.Mask, 0)
			switch h.OpCode {
			case ws.OpPing:
				t.writeControl(opPong, p)
			case ws.OpClose:
				t.closeWS(ws.StatusNormalClosure)
				return errPeerClosed
			}
			continue
		}
		if h.OpCode == ws.OpText {
			t.c.logWarn("closed: " + errTextFrame.Error())
			t.closeWS(ws.StatusUnsupportedData)
			return errTextFrame
		}
		st.fragmented = !h.Fin
		for off, rem := 0, h.Length; rem > 0; {
			rbuf := t.rd.take()
			chunk := rbuf[:min(rem, int64(len(rbuf)))]
			if _, err := io.ReadFull(st.br, chunk); err != nil {
				return err
			}
			ws.Cipher(chunk, h.Mask, off)
			off += len(chunk)
			rem -= int64(len(chunk))
			t.feed(chunk)
		}
	}
}

// parkFrames gives the frame reader's bufio.Reader and buffer back; the
// bufio.Reader only when it holds nothing.
func (t *streamConn) parkFrames() {
	if st := t.ws; st.br != nil && st.br.Buffered() == 0 {
		st.br.Reset(nil)
		bufReads.Put(st.br)
		st.br = nil
	}
	t.rd.giveBack()
}

// closeWS sends a close frame with code and ends the connection after it.
func (t *streamConn) closeWS(code ws.StatusCode) {
	t.writeControl(opClose, []byte{byte(code >> 8), byte(code)})
	t.Close()
}

// appendFrameHeader appends an unmasked, final frame's header (RFC 6455
// 5.2): a server never masks.
func appendFrameHeader(b []byte, op byte, n int) []byte {
	b = append(b, 0x80|op)
	switch {
	case n < 126:
		return append(b, byte(n))
	case n <= 0xFFFF:
		return append(b, 126, byte(n>>8), byte(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, 127), uint64(n))
	}
}

// originRule is a ws door's same_origin and allowed_origins, replaced
// whole when SIGUSR1 re-reads them.
type originRule struct {
	crossOrigin bool            // same_origin: false
	allowed     map[string]bool // normalised; empty checks nothing
}

func newOriginRule(crossOrigin bool, allowed []string) *originRule {
	r := &originRule{crossOrigin: crossOrigin, allowed: map[string]bool{}}
	for _, a := range allowed {
		if n, ok := normaliseOrigin(a); ok {
			r.allowed[n] = true
		}
	}
	return r
}

// admits decides a page: a request with no Origin is not a browser's and is
// admitted; otherwise same_origin wants the page's scheme, host and port to
// be the request's own (https on a TLS door, the Host it asked for), and a
// list wants the origin on it; with both, both.
func (r *originRule) admits(origin, host string, secure bool) bool {
	if origin == "" {
		return true
	}
	o, ok := normaliseOrigin(origin)
	if !ok {
		return r.crossOrigin && len(r.allowed) == 0
	}
	if !r.crossOrigin {
		scheme := "http"
		if secure {
			scheme = "https"
		}
		own, ok := normaliseOrigin(scheme + "://" + host)
		if !ok || own != o {
			return false
		}
	}
	return len(r.allowed) == 0 || r.allowed[o]
}

// normaliseOrigin reads scheme://host[:port] as a browser compares it: scheme
// and host in lower case, a default port (80 for http, 443 for https) the
// same as none. Anything with a path, query, fragment or user is no origin.
func normaliseOrigin(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", false
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if port == "80" && scheme == "http" || port == "443" && scheme == "https" {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		return scheme + "://" + host + ":" + port, true
	}
	return scheme + "://" + host, true
}

// bounded cuts s to n bytes for a log line.
func bounded(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// SetOrigins replaces the page rule of the ws door named door, as SIGUSR1
// re-reads it; false when no ws door has that name.
func (s *Server) SetOrigins(door string, crossOrigin bool, allowed []string) bool {
	for _, l := range s.doors {
		if l.door.Name == door && l.door.Kind == KindWS {
			l.origins.Store(newOriginRule(crossOrigin, allowed))
			return true
		}
	}
	return false
}
