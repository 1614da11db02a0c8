package scenario

import (
	"context"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/bench/loadgen"
	"github.com/saguin-edge/saguin/codec"
)

// busyAfter is a stand-in broker that accepts the first n CONNECTs and
// answers every later one 0x89 Server busy; closed receives one value each
// time an accepted client goes away.
func busyAfter(t *testing.T, n int32) (addr string, closed chan struct{}) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	closed = make(chan struct{}, 64)
	var accepted atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 256)
				if _, err := c.Read(buf); err != nil {
					return
				}
				ack := codec.Connack{}
				ok := accepted.Add(1) <= n
				if !ok {
					ack.ReasonCode = codec.ServerBusy
				}
				if _, err := c.Write(ack.Append(nil, codec.Version5)); err != nil || !ok {
					return
				}
				_, _ = io.Copy(io.Discard, c)
				closed <- struct{}{}
			}()
		}
	}()
	return l.Addr().String(), closed
}

func TestDialManyClosesWhatItOpenedWhenOneIsRefused(t *testing.T) {
	addr, closed := busyAfter(t, 3)
	_, err := dialMany(context.Background(), 5, 1, "c", loadgen.Options{Addr: addr}, nil)
	if err == nil || !strings.Contains(err.Error(), "connection 4 of 5") {
		t.Fatalf("error %v, want the fourth connection's refusal", err)
	}
	for i := range 3 {
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of the 3 accepted connections were closed", i)
		}
	}
}

func TestDrainGivesUpOnceTheCountStopsMoving(t *testing.T) {
	got := drain(context.Background(), func() uint64 { return 7 }, 10, time.Minute)
	if got != 7 {
		t.Fatalf("drain returned %d, want the count it stalled at, 7", got)
	}
}

func TestDrainReturnsOnceTheTargetIsReached(t *testing.T) {
	var n atomic.Uint64
	go func() {
		for range 10 {
			n.Add(1)
		}
	}()
	if got := drain(context.Background(), n.Load, 10, time.Minute); got != 10 {
		t.Fatalf("drain returned %d, want 10", got)
	}
}

func TestConnectionsPastOneAddressPortsDialFromTheNextLoopbackAddress(t *testing.T) {
	for _, c := range []struct {
		addr string
		i    int
		want string
	}{
		{"127.0.0.1:1883", 0, "<nil>"},
		{"127.0.0.1:1883", perSource - 1, "<nil>"},
		{"127.0.0.1:1883", perSource, "127.0.0.2"},
		{"127.0.0.1:1883", 99999, "127.0.0.5"},
		{"localhost:1883", perSource, "<nil>"}, // not an address: the system's choice
		{"192.0.2.1:1883", perSource, "<nil>"}, // off loopback: the system's choice
	} {
		if got := sourceFor(c.addr, c.i).String(); got != c.want {
			t.Errorf("sourceFor(%s, %d) = %s, want %s", c.addr, c.i, got, c.want)
		}
	}
	// The address chosen is the one the broker sees the connection come from.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	from := make(chan net.Addr, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		from <- c.RemoteAddr()
		if _, err := c.Read(make([]byte, 256)); err == nil {
			_, _ = c.Write((&codec.Connack{}).Append(nil, codec.Version5))
		}
		_, _ = io.Copy(io.Discard, c)
	}()
	c, err := loadgen.Dial(context.Background(), loadgen.Options{Addr: l.Addr().String(), ClientID: "far", Source: sourceFor(l.Addr().String(), 2*perSource)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if a := (<-from).(*net.TCPAddr); a.IP.String() != "127.0.0.3" {
		t.Fatalf("the broker saw the connection from %s, want 127.0.0.3", a)
	}
}

func TestDialManyEndedEarlyIsAnErrorNotASliceWithHoles(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	conns, err := dialMany(ctx, 2, 1, "early", loadgen.Options{Addr: "127.0.0.1:1"}, nil)
	if err == nil || conns != nil {
		t.Fatalf("dialMany on an ended context: %d connections, error %v; want none and an error", len(conns), err)
	}
}
