package netloop

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// listener is one open door: the socket accepting connections, and for a unix
// door the lock that says this broker serves the path.
type listener struct {
	door Door
	ln   net.Listener
	lock *os.File // unix only; nil for tcp and abstract names
	// origins is a ws door's page rule, replaced whole by SetOrigins.
	origins atomic.Pointer[originRule]
}

// tcpListenConfig gives accepted TCP sockets the keepalive Go's Accept gives
// by default (probes after 15 s idle, every 15 s, 9 of them) by setting it once
// on the listening socket, which Linux copies to every socket it accepts,
// rather than with four setsockopt calls after each Accept (KeepAlive -1
// turns those off).
var tcpListenConfig = net.ListenConfig{
	KeepAlive: -1,
	Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			for _, o := range [...]struct{ level, opt, v int }{
				{syscall.SOL_SOCKET, syscall.SO_KEEPALIVE, 1},
				{syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE, 15},
				{syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL, 15},
				{syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT, 9},
			} {
				if serr == nil {
					serr = syscall.SetsockoptInt(int(fd), o.level, o.opt, o.v)
				}
			}
		})
		if err != nil {
			return err
		}
		return serr
	},
}

// openDoor binds one door. A unix door follows RFC 0002 Validation: the path
// is held by <path>.lock for as long as the broker runs; a socket left behind
// by a broker that is gone is replaced, a socket whose lock is held refuses
// the start, and anything at the path that is not a socket is left alone.
func openDoor(d Door) (*listener, error) {
	switch d.Kind {
	case KindTCP, KindWS:
		ln, err := tcpListenConfig.Listen(context.Background(), "tcp", d.Address)
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", d.Name, err)
		}
		l := &listener{door: d, ln: ln}
		l.origins.Store(newOriginRule(d.CrossOrigin, d.AllowedOrigins))
		return l, nil
	case KindUnix:
		return openUnixDoor(d)
	}
	return nil, fmt.Errorf("listener %s: kind %q is not served by netloop", d.Name, d.Kind)
}

func openUnixDoor(d Door) (*listener, error) {
	if strings.HasPrefix(d.Path, "@") {
		// An abstract name has no file to leave behind and takes no lock.
		ln, err := net.Listen("unix", d.Path)
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", d.Name, err)
		}
		return &listener{door: d, ln: ln}, nil
	}
	lockPath := d.Path + ".lock"
	lock, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("listener %s: opening lock %s: %w", d.Name, lockPath, err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("listener %s: another broker is serving %s (it holds %s)", d.Name, d.Path, lockPath)
		}
		return nil, fmt.Errorf("listener %s: locking %s: %w", d.Name, lockPath, err)
	}
	fi, err := os.Lstat(d.Path)
	switch {
	case err == nil && fi.Mode()&fs.ModeSocket == 0:
		lock.Close()
		return nil, fmt.Errorf("listener %s: %s exists and is not a socket; it is left alone", d.Name, d.Path)
	case err == nil:
		// A socket with a free lock was left by a broker that crashed, was
		// killed or lost power: replace it so an unattended restart comes back.
		if err := os.Remove(d.Path); err != nil {
			lock.Close()
			return nil, fmt.Errorf("listener %s: replacing leftover socket %s: %w", d.Name, d.Path, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		lock.Close()
		return nil, fmt.Errorf("listener %s: %w", d.Name, err)
	}
	ln, err := net.Listen("unix", d.Path)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("listener %s: %w", d.Name, err)
	}
	// We remove the socket ourselves, before releasing the lock, so that a
	// broker only ever removes its own.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	mode := d.Mode
	if mode == 0 {
		mode = defaultUnixMode
	}
	if err := os.Chmod(d.Path, mode); err != nil {
		ln.Close()
		os.Remove(d.Path)
		lock.Close()
		return nil, fmt.Errorf("listener %s: setting mode %04o on %s: %w", d.Name, mode, d.Path, err)
	}
	return &listener{door: d, ln: ln, lock: lock}, nil
}

// close stops accepting; for a unix door it removes the socket and then
// releases the lock, keeping the lock file (RFC 0002 Validation).
func (l *listener) close() {
	l.ln.Close()
	if l.lock != nil {
		os.Remove(l.door.Path)
		l.lock.Close()
	}
}

// Addr is the address the door is bound to (the real port for ":0").
func (l *listener) addr() net.Addr { return l.ln.Addr() }

// Listen binds d by the same rules netloop binds its own doors (a unix
// door's lock, its leftover socket replaced, its mode), for a listener that
// something else serves - the operations listener - so that both kinds of
// door follow one copy of them. Closing the returned listener removes a unix
// socket before releasing its lock, once however often it is called.
func Listen(d Door) (net.Listener, error) {
	l, err := openDoor(d)
	if err != nil {
		return nil, err
	}
	return &ownedListener{Listener: l.ln, l: l}, nil
}

type ownedListener struct {
	net.Listener
	l    *listener
	once sync.Once
}

func (o *ownedListener) Close() error {
	o.once.Do(o.l.close)
	return nil
}
