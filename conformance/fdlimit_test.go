package conformance

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// Out of file descriptors (`ulimit -n 300`, 600 clients connecting at once)
// the broker closes the connections it has no descriptor for at once rather
// than leaving them in the kernel's queue for the clients' own timeouts, and
// keeps serving the ones it holds; once some close, new ones are admitted.
func TestOutOfDescriptorsShedsTheExtraAndKeepsServing(t *testing.T) {
	if *brokerFlag != "" {
		t.Skip("needs a broker started under its own ulimit; -broker is set")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "saguin.yaml")
	cfg := brokerConfig{Limits: "max_connections: 1000\nmax_connect_rate: none"}
	if err := os.WriteFile(path, []byte(cfg.yaml(dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	br := launchUnder(t, dir, path, "ulimit -n 300")

	const n = 600
	type outcome struct {
		nc   net.Conn // held: answered CONNACK 0x00
		shed time.Duration
		err  error
	}
	out := make([]outcome, n)
	var wg sync.WaitGroup
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 64 {
				start := time.Now()
				nc, err := net.DialTimeout("tcp", br.addr, 5*time.Second)
				if err != nil {
					out[i].err = err
					continue
				}
				p := &codec.Connect{Version: codec.Version5, CleanStart: true, ClientID: []byte("fd-" + strconv.Itoa(i))}
				nc.SetDeadline(time.Now().Add(10 * time.Second))
				nc.Write(p.Append(nil, codec.Version5))
				var ack [64]byte
				if m, err := nc.Read(ack[:]); err == nil && m >= 4 && ack[0] == 0x20 && ack[3] == 0 {
					out[i].nc = nc
					continue
				} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
					out[i].err = err
				}
				out[i].shed = time.Since(start)
				nc.Close()
			}
		}()
	}
	wg.Wait()
	var held []net.Conn
	var shed int
	var slowest time.Duration
	for i, o := range out {
		switch {
		case o.err != nil:
			t.Errorf("client %d was neither answered nor closed: %v", i, o.err)
		case o.nc != nil:
			held = append(held, o.nc)
		default:
			shed++
			slowest = max(slowest, o.shed)
		}
	}
	defer func() {
		for _, nc := range held {
			nc.Close()
		}
	}()
	t.Logf("%d held, %d shed, the slowest closed after %v", len(held), shed, slowest)
	if len(held) < 200 || shed == 0 {
		t.Fatalf("%d held and %d shed of %d under 300 descriptors, want about 300 held and the rest shed", len(held), shed, n)
	}
	// Mosquitto sheds in 0.1 s; a loaded two-core machine is given a second.
	if slowest > time.Second {
		t.Errorf("the slowest shed connection was closed after %v, want well under a second", slowest)
	}
	ping := (&codec.Pingreq{}).Append(nil, codec.Version5)
	for i, nc := range held {
		nc.SetDeadline(time.Now().Add(5 * time.Second))
		var resp [2]byte
		if _, err := nc.Write(ping); err != nil {
			t.Fatalf("held connection %d: %v", i, err)
		}
		if _, err := nc.Read(resp[:]); err != nil || resp[0] != 0xD0 {
			t.Fatalf("held connection %d: want PINGRESP while others are shed, got %x %v", i, resp, err)
		}
	}
	// Descriptors given back are taken again: a new client gets in.
	for _, nc := range held[:50] {
		nc.Close()
	}
	held = held[50:]
	deadline := time.Now().Add(10 * time.Second)
admitted:
	for {
		nc, err := net.DialTimeout("tcp", br.addr, 5*time.Second)
		if err == nil {
			p := &codec.Connect{Version: codec.Version5, CleanStart: true, ClientID: []byte("after")}
			nc.SetDeadline(time.Now().Add(5 * time.Second))
			nc.Write(p.Append(nil, codec.Version5))
			var ack [64]byte
			m, err := nc.Read(ack[:])
			nc.Close()
			if err == nil && m >= 4 && ack[0] == 0x20 && ack[3] == 0 {
				break admitted
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new connection admitted within 10 s of 50 held ones closing: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // a retry pace, not a synchronization
	}
	// The line retracting the out-of-descriptors error is written at that
	// error's level (RFC 0002 "How much the broker says"; checklist D9.101).
	if br.log.wait(regexp.MustCompile(`level=ERROR msg="accepting again"`), waitLong) == "" {
		t.Fatal("no \"accepting again\" line at the error level of the line it retracts")
	}
}
