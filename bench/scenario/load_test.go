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
