package netloop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/saguin-edge/saguin/netloop/delivery"

	"github.com/saguin-edge/saguin/codec"
)

// Server runs the doors and every connection they admit.
type Server struct {
	opts     Options
	log      *slog.Logger
	adm      *admission
	loop     *gnet.Client // the event loops; accept is ours (see acceptLoop)
	doors    []*listener
	enrollq  chan enrollment // admitted sockets for the enrollers (enroll.go)
	enrollWG sync.WaitGroup  // the enrollers
	acceptWG sync.WaitGroup  // the accept loops: once they end, enrollq closes

	stopOnce sync.Once
	stopErr  error
	stop     chan struct{} // closed when shutdown begins
	wg       sync.WaitGroup

	mu      sync.Mutex
	conns   map[*Conn]struct{}
	headers map[net.Conn]struct{}         // sockets whose PROXY header is being read (proxydoor.go)
	wakers  map[gnet.EventLoop]*loopWaker // one per event loop, made at its first connection

	timers timers  // every connection's next deadline (timers.go)
	tidy   *tidier // frees memory after a burst of TLS handshakes (tidy.go)

	counters Counters
}

// New checks opts (after WithDefaults) and returns a Server that is not yet
// listening.
func New(opts Options) (*Server, error) {
	opts = opts.WithDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("netloop: %w", err)
	}
	s := &Server{
		opts:    opts,
		log:     opts.Logger,
		adm:     newAdmission(opts.MaxConnections, opts.Clock),
		stop:    make(chan struct{}),
		conns:   make(map[*Conn]struct{}),
		headers: make(map[net.Conn]struct{}),
		enrollq: make(chan enrollment, 64),
		wakers:  make(map[gnet.EventLoop]*loopWaker),
		timers:  timers{clk: opts.Clock},
	}
	s.tidy = newTidier(opts.Clock, s.Connections, opts.Logger)
	return s, nil
}

// Start opens every door or none: a broker never serves half its doors.
func (s *Server) Start() error {
	for _, d := range s.opts.Doors {
		l, err := openDoor(d)
		if err != nil {
			for _, o := range s.doors {
				o.close()
			}
			s.doors = nil
			return err
		}
		s.doors = append(s.doors, l)
	}
	cli, err := gnet.NewClient(&events{s: s},
		gnet.WithMulticore(true),
		gnet.WithNumEventLoop(s.opts.EventLoops),
		// Not a change of Nagle: Go's Accept has already set TCP_NODELAY on
		// the socket gnet is handed (net.newTCPConn does, always), and the
		// descriptor gnet dups shares it. gnet.TCPNoDelay would only set it
		// a second time, one setsockopt more on every accepted connection.
		gnet.WithTCPNoDelay(gnet.TCPDelay),
		gnet.WithLogger(gnetLogger{s.log}),
	)
	if err == nil {
		err = cli.Start()
	}
	if err != nil {
		for _, o := range s.doors {
			o.close()
		}
		return fmt.Errorf("netloop: starting the event loops: %w", err)
	}
	s.loop = cli
	s.startEnrollers()
	for _, l := range s.doors {
		s.log.Info("listening", "listener", l.door.Name, "address", l.addr().String())
		s.acceptWG.Add(1)
		go s.acceptLoop(l)
	}
	go func() {
		s.acceptWG.Wait()
		close(s.enrollq)
	}()
	s.timers.start()
	return nil
}

// Addr returns the bound address of the named door, or nil.
func (s *Server) Addr(name string) net.Addr {
	for _, l := range s.doors {
		if l.door.Name == name {
			return l.addr()
		}
	}
	return nil
}

// Connections reports the max_connections slots held.
func (s *Server) Connections() int { return s.adm.inUse() }

// acceptLoop accepts on one door. The pacer runs before Accept, so a
// connection over max_connect_rate stays in the kernel's accept queue.
func (s *Server) acceptLoop(l *listener) {
	defer s.acceptWG.Done()
	pacer := newAcceptPacer(s.opts.MaxConnectRate, s.opts.Clock)
	spare := newSpareFD()
	defer spare.close()
	shed := 0 // connections shed since descriptors ran out
	for {
		if !pacer.take(s.stop) {
			return
		}
		nc, err := l.ln.Accept()
		if err != nil {
			select {
			case <-s.stop:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if outOfFiles(err) && spare.shed(s, l) {
				if shed == 0 {
					s.log.Error("out of file descriptors: closing new connections until some are free", "listener", l.door.Name, "error", err)
				}
				shed++
				continue
			}
			// Nothing shed (no spare descriptor, or another failure): back
			// off rather than spin; the connection stays queued in the kernel.
			// Out of descriptors the pause is short, since the next try may
			// win a freed one for the spare.
			s.log.Error("accept failed", "listener", l.door.Name, "error", err)
			backoff := 100 * time.Millisecond
			if outOfFiles(err) {
				backoff = 10 * time.Millisecond
			}
			select {
			case <-s.stop:
				return
			case <-time.After(backoff):
			}
			continue
		}
		if shed > 0 {
			// At the level of the line it retracts (RFC 0002 "How much the
			// broker says"): an operator owed the error is owed its end.
			s.log.Error("accepting again", "listener", l.door.Name, "shed", shed)
			shed = 0
		}
		s.arrive(l, nc)
	}
}

// arrive applies admission to a socket just accepted.
func (s *Server) arrive(l *listener, nc net.Conn) {
	arrivedAt := s.opts.Clock.Now()
	switch a, w := s.adm.arrive(); a {
	case admitted:
		s.enrollq <- enrollment{l, nc, arrivedAt}
	case queued:
		s.wg.Add(1)
		go s.overflow(l, nc, w, arrivedAt)
	default:
		// The budget is full (or the broker is stopping): nothing read,
		// nothing written.
		s.counters.ConnectionsRefused.Add(delivery.ReasonOf(codec.ServerBusy))
		nc.Close()
	}
}

// overflow is one socket in the budget: it waits up to 50 ms for a slot; with
// none, it is answered Server busy if it sends the opening of a CONNECT, and
// is closed within 100 ms of arriving, or connect_timeout where that is sooner.
// On a tls door the CONNECT comes inside the TLS session, so the handshake
// runs first, within the same bound (RFC 0002 names tls beside tcp and unix).
// A ws door's socket is closed at once with nothing written: it is not an
// MQTT connection until its upgrade, so there is nobody to answer 0x89 to
// (RFC 0002), even if its first bytes look like a CONNECT.
func (s *Server) overflow(l *listener, nc net.Conn, w *waiter, arrivedAt time.Time) {
	defer s.wg.Done()
	limit := min(overflowClose, s.opts.ConnectTimeout)
	if s.adm.wait(w, min(overflowWait, limit), s.stop) {
		s.enroll(l, nc, arrivedAt)
		return
	}
	select {
	case <-s.stop:
	default:
		s.counters.ConnectionsRefused.Add(delivery.ReasonOf(codec.ServerBusy))
		if l.door.Kind != KindWS {
			// A socket deadline is checked against the wall clock, whatever
			// Clock says: what is left of the limit is carried over to it. A
			// broker running late still reads what the client sent in time:
			// a deadline already past would refuse even a CONNECT waiting in
			// the socket, and its close with those bytes unread is a reset.
			left := max(limit-s.opts.Clock.Now().Sub(arrivedAt), busyReadGrace)
			deadline := time.Now().Add(left)
			if conn := busyTransport(l, nc, deadline); conn != nil {
				answerBusy(conn, deadline)
			}
		}
	}
	nc.Close()
	s.adm.leave()
}

// enroll serves an admitted socket: TLS and WebSocket doors on goroutines of
// their own (streamdoor.go), a unix door that expects a PROXY header once
// it has read it (proxydoor.go), everything else on the event loops.
func (s *Server) enroll(l *listener, nc net.Conn, arrivedAt time.Time) {
	switch {
	case l.door.TLS != nil || l.door.Kind == KindWS:
		s.enrollStream(l, nc, arrivedAt)
	case l.door.ProxyProtocol:
		s.wg.Add(1)
		go s.enrollProxied(l, nc, arrivedAt)
	default:
		s.enrollLoop(l, nc, arrivedAt, nc.RemoteAddr().String(), nil)
	}
}

// enrollLoop hands an admitted socket to the event loops with a fresh Conn;
// remote is the client's address, principal a name the door vouched for.
func (s *Server) enrollLoop(l *listener, nc net.Conn, arrivedAt time.Time, remote string, principal *string) {
	g := &gnetConn{}
	c, t := &g.c, g
	t.remote = remote
	c.init(s, t, &l.door.Name, arrivedAt)
	if principal != nil {
		c.rareState().principal = principal
	}
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	select {
	case <-s.stop:
		// Admitted as the stop began, and perhaps after Shutdown listed
		// the connections it ends: ended like them.
		c.Kick(codec.ServerShuttingDown)
	default:
	}
	gc, err := s.loop.EnrollContext(nc, g)
	if err != nil {
		s.log.Error("handing a connection to the event loop failed", "listener", l.door.Name, "error", err)
		nc.Close()
		c.slotRelease()
		s.forget(c)
	}
	_ = gc // the transport learns its gnet.Conn in OnOpen
}

// infoOn reports whether the logger takes info lines: a connection's lines
// are built only then, since building one allocates.
func (s *Server) infoOn() bool {
	return s.log.Enabled(context.Background(), slog.LevelInfo)
}

func (s *Server) forget(c *Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.timers.remove(c)
}

// Shutdown stops the broker's doors: admission ends, every door closes, MQTT 5
// clients are sent DISCONNECT 0x8B and 3.1.1 connections are closed; then it
// waits for every connection to end (or ctx) and stops the event loops. A
// second call waits for the first and returns its result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() { s.stopErr = s.shutdown(ctx) })
	return s.stopErr
}

func (s *Server) shutdown(ctx context.Context) error {
	s.adm.stop()
	close(s.stop)
	s.tidy.stop()
	for _, l := range s.doors {
		l.close()
	}
	s.mu.Lock()
	for nc := range s.headers {
		nc.Close() // waiting for a PROXY header: ended at once, never admitted
	}
	all := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		all = append(all, c)
	}
	s.mu.Unlock()
	for _, c := range all {
		c.Kick(codec.ServerShuttingDown)
	}
	var err error
	for err == nil {
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		if n == 0 {
			break
		}
		select {
		case <-ctx.Done():
			err = fmt.Errorf("netloop: %d connections still open at shutdown: %w", n, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	s.timers.stop() // after the last end: ending connections still have timers
	s.acceptWG.Wait()
	s.enrollWG.Wait()
	s.wg.Wait()
	if s.loop != nil {
		if e := s.loop.Stop(); e != nil && err == nil {
			err = fmt.Errorf("netloop: stopping the event loops: %w", e)
		}
	}
	return err
}

// gnetLogger sends gnet's own lines to slog at debug, where an operator
// reading why a connection failed can still find them.
type gnetLogger struct{ l *slog.Logger }

func (g gnetLogger) Debugf(f string, a ...any) { g.l.Debug(fmt.Sprintf(f, a...), "component", "gnet") }
func (g gnetLogger) Infof(f string, a ...any)  { g.l.Debug(fmt.Sprintf(f, a...), "component", "gnet") }
func (g gnetLogger) Warnf(f string, a ...any)  { g.l.Debug(fmt.Sprintf(f, a...), "component", "gnet") }
func (g gnetLogger) Errorf(f string, a ...any) { g.l.Error(fmt.Sprintf(f, a...), "component", "gnet") }
func (g gnetLogger) Fatalf(f string, a ...any) { g.l.Error(fmt.Sprintf(f, a...), "component", "gnet") }
