package netloop

import (
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// spareFD is one descriptor a door's accept loop holds in reserve for when
// the process runs out of them. Accept then fails with EMFILE while the
// connection stays in the kernel's queue, where a client waits for its
// CONNACK until its own timeout (30 s and more for most libraries) and the
// queue stays full. With the spare given up for a moment, the connection is
// accepted and shut at once, nothing read or written - shed in the time of a
// few system calls, as Mosquitto does - and the connections already held are
// served throughout.
//
// The socket shed becomes the next spare (shut down both ways, so its client
// sees the close now) rather than being closed and /dev/null opened again:
// another thread - an enroller's dup - would take the descriptor freed in
// between, and the next shed would have none.
type spareFD struct{ fd io.Closer }

func newSpareFD() *spareFD {
	s := &spareFD{}
	s.reopen()
	return s
}

// reopen takes a descriptor for the spare, if one is free.
func (sp *spareFD) reopen() {
	if f, err := os.Open(os.DevNull); err == nil {
		sp.fd = f
	}
}

// outOfFiles reports whether an Accept error is the process or the system
// running out of descriptors.
func outOfFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// shed accepts one queued connection on the spare descriptor and shuts it,
// reporting whether it did; false leaves the caller to back off.
func (sp *spareFD) shed(s *Server, l *listener) bool {
	if sp.fd == nil {
		if sp.reopen(); sp.fd == nil {
			return false
		}
	}
	sp.fd.Close()
	sp.fd = nil
	nc, err := l.ln.Accept()
	if err != nil {
		sp.reopen()
		return false
	}
	s.counters.ConnectionsRefused.Add(delivery.ReasonOf(codec.ServerBusy))
	if sh, ok := nc.(interface {
		CloseRead() error
		CloseWrite() error
	}); ok {
		sh.CloseRead()
		sh.CloseWrite()
		sp.fd = nc
		return true
	}
	nc.Close()
	sp.reopen()
	return true
}

func (sp *spareFD) close() {
	if sp.fd != nil {
		sp.fd.Close()
	}
}
