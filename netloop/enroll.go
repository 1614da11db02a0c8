package netloop

import (
	"net"
	"time"
)

// enrollers is how many sockets may be waiting at once for an event loop to
// register them. gnet's EnrollContext returns only once the loop has taken
// the socket; made on the accept loop, that wait (a wake of the loop and of
// the accept goroutine again, per connection) bounded how fast connections
// were admitted. The accept loop queues the admitted socket for these
// workers and accepts the next one; the loop registers the queued ones in
// one pass. Workers rather than a goroutine per socket: a fresh goroutine
// grew its stack on every enrol (6% of the broker's connect-phase samples).
const enrollers = 8

// enrollment is one admitted socket on its way to an event loop.
type enrollment struct {
	l         *listener
	nc        net.Conn
	arrivedAt time.Time
}

// startEnrollers runs the workers until the accept loops have ended and the
// queue is drained.
func (s *Server) startEnrollers() {
	for range enrollers {
		s.enrollWG.Add(1)
		go func() {
			defer s.enrollWG.Done()
			for e := range s.enrollq {
				s.enroll(e.l, e.nc, e.arrivedAt)
			}
		}()
	}
}
