package ops

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/netloop/proxyproto"
)

// proxyListener serves a unix door with proxy_protocol: every connection
// opens with a PROXY v2 header, read by the connection's first Read (in the
// HTTP server's goroutine for it, so a slow peer holds up nobody's accept),
// and a request is judged by what the header said (RFC 0005 "Who Sagüin
// thinks you are": the Common Name the proxy verified).
type proxyListener struct {
	net.Listener
	s *Server
	d *door
}

func (l *proxyListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	pc := &proxyConn{Conn: nc, s: l.s, d: l.d}
	// The bound runs from accept on the injected clock, as the MQTT unix
	// door's does: closing the socket ends the header's read.
	pc.timer = l.s.clk.AfterFunc(proxyproto.HeaderTimeout, func() {
		pc.late.Store(true)
		nc.Close()
	})
	return pc, nil
}

// proxyConn is one connection of a proxy_protocol door. What the HTTP
// server reads starts after the header, so the request is the client's own.
type proxyConn struct {
	net.Conn
	s     *Server
	d     *door
	timer clock.Timer
	late  atomic.Bool
	once  sync.Once
	hdr   proxyproto.Header
	err   error
}

func (c *proxyConn) Read(b []byte) (int, error) {
	c.once.Do(c.readHeader)
	if c.err != nil {
		return 0, c.err
	}
	return c.Conn.Read(b)
}

// readHeader reads the header exactly, nothing after it. A connection
// without one, with a v1 one, or too slow is closed with nothing written,
// as the MQTT unix door closes it.
func (c *proxyConn) readHeader() {
	h, err := proxyproto.Read(c.Conn)
	if !c.timer.Stop() && c.late.Load() {
		err = fmt.Errorf("no PROXY header within %v of accept", proxyproto.HeaderTimeout)
	}
	if err != nil {
		c.s.log.Warn("operations connection closed: the PROXY header was refused", "listener", c.d.cfg.Name, "error", err)
		c.Conn.Close()
		c.err = fmt.Errorf("operations listener %s: %w", c.d.cfg.Name, err)
		return
	}
	c.hdr = h
	if h.Unverified() {
		c.s.log.Warn("the proxy could not verify this caller's certificate: it is treated as one with no certificate",
			"listener", c.d.cfg.Name, "remote", c.remote(), "verify_result", h.Verify)
	}
}

// remote is the client's address the header gave, else the socket's peer.
func (c *proxyConn) remote() string {
	if c.hdr.Source.IsValid() {
		return c.hdr.Source.String()
	}
	return c.Conn.RemoteAddr().String()
}

func (c *proxyConn) Close() error {
	c.timer.Stop()
	return c.Conn.Close()
}

type proxyConnKey struct{}

// withProxyConn is the HTTP server's ConnContext: it puts a proxy_protocol
// door's connection where its requests can ask what the header said.
func withProxyConn(ctx context.Context, nc net.Conn) context.Context {
	if pc, ok := nc.(*proxyConn); ok {
		return context.WithValue(ctx, proxyConnKey{}, pc)
	}
	return ctx
}

// proxyHeader is what the PROXY header of r's connection said; nil off a
// proxy_protocol door. A request is read only after its header, so the
// header is settled by the time anyone asks.
func proxyHeader(r *http.Request) *proxyproto.Header {
	pc, _ := r.Context().Value(proxyConnKey{}).(*proxyConn)
	if pc == nil || pc.err != nil {
		return nil
	}
	return &pc.hdr
}

// remoteOf is the caller's address for the log: the PROXY header's source
// on a proxy_protocol door, the socket's peer elsewhere.
func remoteOf(r *http.Request) string {
	if pc, _ := r.Context().Value(proxyConnKey{}).(*proxyConn); pc != nil {
		return pc.remote()
	}
	return r.RemoteAddr
}
