package netloop

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/saguin-edge/saguin/netloop/proxyproto"
)

// enrollProxied reads the PROXY v2 header of a socket admitted on a
// proxy_protocol door, then hands the socket to the event loops with the
// header's source address in place of the socket's peer (logs, the
// handler's Remote) and the name it vouches for, if any. The header is read
// exactly, so the CONNECT after it is the loop's to read. A socket without a
// header, with a v1 one, or too slow, is closed with nothing written.
func (s *Server) enrollProxied(l *listener, nc net.Conn, arrivedAt time.Time) {
	defer s.wg.Done()
	s.mu.Lock()
	s.headers[nc] = struct{}{}
	s.mu.Unlock()
	// The bound runs on the injected clock: closing the socket ends the read;
	// connect_timeout still runs from accept.
	bound := min(proxyproto.HeaderTimeout, s.opts.ConnectTimeout)
	var late atomic.Bool
	timer := s.opts.Clock.AfterFunc(bound-s.opts.Clock.Now().Sub(arrivedAt), func() {
		late.Store(true)
		nc.Close()
	})
	h, err := proxyproto.Read(nc)
	if !timer.Stop() && late.Load() {
		err = fmt.Errorf("no PROXY header within %v of accept", bound)
	}
	s.mu.Lock()
	delete(s.headers, nc)
	s.mu.Unlock()
	select {
	case <-s.stop:
		err = errors.New("the broker is stopping")
	default:
	}
	peer := nc.RemoteAddr().String()
	if err != nil {
		s.log.Warn("closed: the PROXY header was refused", "listener", l.door.Name, "remote", peer, "error", err)
		nc.Close()
		s.adm.release()
		return
	}
	remote := peer
	if h.Source.IsValid() {
		remote = h.Source.String()
	}
	var principal *string
	if name, ok := h.Name(); ok {
		principal = &name
		if s.infoOn() {
			s.log.Info("a proxy named this client", "listener", l.door.Name, "remote", remote, "principal", name)
		}
	} else if h.Unverified() {
		s.log.Warn("the proxy could not verify this client's certificate: it is treated as one with no certificate",
			"listener", l.door.Name, "remote", remote, "verify_result", h.Verify)
	}
	s.enrollLoop(l, nc, arrivedAt, remote, principal)
}
