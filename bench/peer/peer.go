// Package peer starts and stops the brokers a benchmark compares: Sagüin
// built from the tree (on a memory and on a sqlite provider), Mosquitto from
// the distribution, and mochi-mqtt built from its own module under
// bench/peers/mochi. Each run gets a fresh process on a loopback port of its
// own, so no run inherits another's memory or sessions.
package peer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/saguin-edge/saguin/bench/proc"
)

// The brokers the harness knows, by the name used on its command line.
const (
	Saguin       = "saguin"
	SaguinSQLite = "saguin-sqlite"
	Mosquitto    = "mosquitto"
	Mochi        = "mochi"
)

// How long a broker gets to open its port, and to go after SIGTERM.
const (
	startTimeout = 15 * time.Second
	stopTimeout  = 5 * time.Second
)

// Broker is one peer, ready to be started as often as the runs need.
type Broker struct {
	Name    string
	Version string
	// command builds the process for one run as r says, writing any file it
	// needs (configuration, database) into r.dir.
	command func(r run) (*exec.Cmd, error)
	// ops: the broker serves /metrics on a port of its own (Sagüin), which a
	// scenario reads for what only the broker can count (records per commit).
	ops bool
	// tls: the broker serves a TLS door beside its tcp one (Sagüin,
	// Mosquitto), with the run's certificate.
	tls bool
}

// run is what one run of a broker is given: where its files go, the
// loopback addresses it listens on, and the certificate its TLS door serves.
type run struct {
	dir, addr string
	opsAddr   string    // "" for a broker with no operations listener
	tlsAddr   string    // "" for a broker with no TLS door
	tls       *tlsFiles // nil with tlsAddr
}

// ServesTLS reports whether the broker has a TLS door, which the TLS
// scenarios need.
func (b *Broker) ServesTLS() bool { return b.tls }

// Process is one running broker.
type Process struct {
	Broker *Broker
	Addr   string // host:port it listens on
	// OpsAddr is the host:port of its operations listener (/metrics), ""
	// for a broker that has none.
	OpsAddr string
	// TLSAddr is the host:port of its TLS door, and ClientTLS what a client
	// dials it with; "" and nil for a broker that has none.
	TLSAddr   string
	ClientTLS *tls.Config
	Pid       int
	cmd       *exec.Cmd
	exited    chan struct{} // closed once the process has been reaped
	err       error         // what Wait said, valid once exited is closed
	log       string        // the file holding its standard output and error
}

// Start runs the broker on a free loopback port, its files in dir, and
// returns once the port accepts connections.
func (b *Broker) Start(ctx context.Context, dir string) (*Process, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	r := run{dir: dir, addr: addr}
	if b.ops {
		if r.opsAddr, err = freeAddr(); err != nil {
			return nil, err
		}
	}
	if b.tls {
		if r.tlsAddr, err = freeAddr(); err != nil {
			return nil, err
		}
		if r.tls, err = writeTLS(dir); err != nil {
			return nil, err
		}
	}
	cmd, err := b.command(r)
	if err != nil {
		return nil, fmt.Errorf("preparing %s: %w", b.Name, err)
	}
	logPath := filepath.Join(dir, b.Name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating %s log: %w", b.Name, err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group keeps a terminal's ^C for the harness, which stops
	// every broker itself; Pdeathsig takes the broker down if the harness dies
	// without getting the chance.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", b.Name, err)
	}
	p := &Process{Broker: b, Addr: addr, OpsAddr: r.opsAddr, TLSAddr: r.tlsAddr, Pid: cmd.Process.Pid, cmd: cmd, exited: make(chan struct{}), log: logPath}
	if r.tls != nil {
		p.ClientTLS = r.tls.clientTLS()
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	if err := p.waitListening(ctx); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// waitListening returns once every door of the process accepts.
func (p *Process) waitListening(ctx context.Context) error {
	deadline := time.Now().Add(startTimeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	addrs := []string{p.Addr}
	if p.TLSAddr != "" {
		addrs = append(addrs, p.TLSAddr)
	}
	for {
		for len(addrs) > 0 {
			c, err := net.DialTimeout("tcp", addrs[0], 100*time.Millisecond)
			if err != nil {
				break
			}
			c.Close()
			addrs = addrs[1:]
		}
		if len(addrs) == 0 {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before listening on %s (%v): %s", p.Broker.Name, p.Addr, p.err, p.LogTail(400))
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not listen on %s within %v: %s", p.Broker.Name, p.Addr, startTimeout, p.LogTail(400))
		}
	}
}

// Alive reports whether the process is still running.
func (p *Process) Alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Usage reads the broker's CPU time and memory from /proc.
func (p *Process) Usage() (proc.Usage, error) { return proc.Read(p.Pid) }

// Stop sends SIGTERM, and SIGKILL if the broker is still there stopTimeout
// later. It returns once the process is reaped.
func (p *Process) Stop() {
	if !p.Alive() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// LogTail returns the last n bytes the broker wrote, for an error message.
func (p *Process) LogTail(n int) string {
	raw, err := os.ReadFile(p.log)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if len(raw) > n {
		raw = raw[len(raw)-n:]
	}
	s := strings.TrimSpace(string(raw))
	if s == "" {
		return "(nothing logged)"
	}
	return s
}

// freeAddr asks the kernel for a loopback port nobody holds. The port is free
// again before the broker binds it, and could in principle be taken between;
// a broker that fails to bind fails its start, loudly, rather than measuring
// the wrong process.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// RaiseFileLimit lifts this process's open-file limit to need, or as near
// as it may, explicitly, so that the brokers it starts inherit it too (Go
// raises its own soft limit silently but restores the old one for children it
// starts unless the program set the limit itself). The hard ceiling is raised
// to need first where the process may (CAP_SYS_RESOURCE, up to fs.nr_open);
// refused, the soft limit goes to the ceiling as it is. Every idle connection
// is a descriptor on each side: 100,000 of them need 100,000 in the generator
// and as many in the broker. It returns the limit now in force.
func RaiseFileLimit(need uint64) (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("reading the open-file limit: %w", err)
	}
	if lim.Max < need {
		raised := syscall.Rlimit{Cur: need, Max: need}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			return need, nil
		}
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("raising the open-file limit to %d: %w", lim.Max, err)
	}
	return lim.Cur, nil
}

var errNotFound = errors.New("not found")
