// Package ops is the operations listener (RFC 0005): /health, /metrics and
// the /v1/operations routes, on the tcp and unix doors broker.operations
// names, behind the operators' credentials. It reads; it never writes
// anything, returns a payload or says a secret.
package ops

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/config"
	"github.com/saguin-edge/saguin/netloop"
	"github.com/saguin-edge/saguin/netloop/certs"
)

// The HTTP server's bounds (invariant 13; checklist GAP-5). Every route is a
// small GET, so a caller that takes longer than these to send its request or
// read its answer is holding a slot for nothing.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 60 * time.Second
	maxHeaderBytes    = 16 << 10
	// maxConnsPerDoor bounds the connections one door serves at once; the
	// next waits in the kernel's backlog until one ends.
	maxConnsPerDoor = 64
	// rowLimit is the cap every /v1 list keeps (RFC 0005).
	rowLimit = 100
)

// HealthTimeout is how long /health waits for each publish-path lock: far
// above the tens of microseconds a publish holds one and the ~100 ms a GC
// assist was measured to stretch a hold to, and below the one second a
// liveness probe commonly allows (checklist GAP-7).
const HealthTimeout = 500 * time.Millisecond

// Options are what the listener serves and from where.
type Options struct {
	Config *config.Config
	Source *Source
	// Clock times /health's wait and min_scrape_interval; nil is clock.Real.
	Clock  clock.Clock
	Logger *slog.Logger
}

// Server is the operations listener.
type Server struct {
	opts    Options
	log     *slog.Logger
	clk     clock.Clock
	doors   []*door
	creds   atomic.Pointer[credentials]
	scraper *scraper
	users   atomic.Pointer[usersAnswer]
	// certs holds every TLS door's certificate, key and client CA - the one
	// loader the MQTT doors use too, so both re-read alike on SIGUSR1.
	certs *certs.Store
	wg    sync.WaitGroup
}

// door is one operations door: its configuration, fixed at start, and its
// socket. Which door a request came through is the handler it reached, never
// anything the caller sent.
type door struct {
	cfg config.Listener
	ln  net.Listener
	srv *http.Server
}

// New reads the credentials and certificates every door names and binds
// every door, so that a port in use or a bad file is a startup error naming
// it. Nothing is served until Start.
func New(o Options) (*Server, error) {
	ops := o.Config.Broker.Operations
	if ops == nil {
		return nil, errors.New("ops: the configuration has no broker.operations block")
	}
	s := &Server{opts: o, log: o.Logger, clk: clock.Or(o.Clock)}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.log = s.log.With("component", "operations")
	creds, err := loadCredentials(o.Config)
	if err != nil {
		return nil, err
	}
	s.creds.Store(creds)
	users, err := loadUsers(o.Config)
	if err != nil {
		return nil, err
	}
	s.users.Store(users)
	var files []certs.Files
	for _, d := range ops.Listeners {
		if t := d.TLS; t != nil {
			files = append(files, certs.Files{Listener: d.Key, CertFile: t.CertFile, KeyFile: t.KeyFile,
				ClientCAFile: t.ClientCAFile, RequireCertificate: t.RequireCertificate, MinVersion: certs.MinVersion(t.MinVersion)})
		}
	}
	st, loaded, err := certs.Load(files)
	if err != nil {
		return nil, fmt.Errorf("operations %w", err)
	}
	s.certs = st
	for _, l := range loaded {
		s.log.Info("certificate loaded", "listener", l.Listener, "expires", l.Expires.UTC().Format(time.RFC3339))
	}
	s.scraper = &scraper{src: o.Source, interval: ops.MinScrapeInterval, now: s.clk.Now}
	for _, dc := range ops.Listeners {
		d := &door{cfg: dc}
		nd := netloop.Door{Name: dc.Name, Address: dc.Address, Path: dc.Path, Mode: dc.Mode, Kind: netloop.KindTCP}
		if dc.Kind == config.KindUnix {
			nd.Kind = netloop.KindUnix
		}
		ln, err := netloop.Listen(nd)
		if err != nil {
			s.closeDoors()
			return nil, fmt.Errorf("operations %w", err)
		}
		ln = newLimitListener(ln, maxConnsPerDoor)
		if dc.TLS != nil {
			ln = tls.NewListener(ln, s.certs.Config(dc.Key))
		}
		if dc.ProxyProtocol {
			ln = &proxyListener{Listener: ln, s: s, d: d}
		}
		d.ln = ln
		d.srv = &http.Server{
			Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(d, w, r) }),
			ReadHeaderTimeout: readHeaderTimeout,
			ReadTimeout:       readTimeout,
			WriteTimeout:      writeTimeout,
			IdleTimeout:       idleTimeout,
			MaxHeaderBytes:    maxHeaderBytes,
			ConnContext:       withProxyConn,
			// A stranger's broken handshake or request is theirs, not the
			// broker's fault: said at debug, where it cannot flood the log.
			ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		}
		s.doors = append(s.doors, d)
	}
	return s, nil
}

// Addr is where the door named name listens: its real port for ":0".
func (s *Server) Addr(name string) net.Addr {
	for _, d := range s.doors {
		if d.cfg.Name == name {
			return d.ln.Addr()
		}
	}
	return nil
}

// Start serves every door, each naming itself in the log.
func (s *Server) Start() {
	for _, d := range s.doors {
		at := d.cfg.Path
		if d.cfg.Kind == config.KindTCP {
			at = d.ln.Addr().String()
		}
		s.log.Info("operations listener open", "listener", d.cfg.Name, "kind", d.cfg.Kind, "address", at, "tls", d.cfg.TLS != nil,
			"proxy_protocol", d.cfg.ProxyProtocol, "password_file", d.cfg.PasswordFile)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := d.srv.Serve(d.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("operations listener stopped", "listener", d.cfg.Name, "error", err)
			}
		}()
	}
}

// Shutdown closes every door (a unix socket is removed) and waits for the
// requests in progress, up to ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	var errs []error
	for _, d := range s.doors {
		if err := d.srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("operations listener %s: %w", d.cfg.Name, err))
		}
		d.ln.Close()
	}
	s.wg.Wait()
	return errors.Join(errs...)
}

func (s *Server) closeDoors() {
	for _, d := range s.doors {
		d.ln.Close()
	}
}

// limitListener holds at most cap(slots) connections open at once: Accept
// waits for a slot, and a connection's Close gives it back.
type limitListener struct {
	net.Listener
	slots  chan struct{}
	done   chan struct{}
	closed sync.Once
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &slotConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *limitListener) Close() error {
	l.closed.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type slotConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
