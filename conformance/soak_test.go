package conformance

import (
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// soakDuration is SAGUIN_SOAK as a duration; the test skips when it is unset.
func soakDuration(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("SAGUIN_SOAK")
	if v == "" {
		t.Skip("SAGUIN_SOAK is not set (make soak)")
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("SAGUIN_SOAK=%q: %v", v, err)
	}
	return d
}

// TestSoakConnectionChurnGivesEverySlotBack churns connections for the soak
// duration - 48 clients at 32 slots, both protocols, clean and abrupt ends,
// publishes in flight - and then every slot must be free again and the
// broker's memory where it started, give or take what the runtime keeps.
func TestSoakConnectionChurnGivesEverySlotBack(t *testing.T) {
	d := soakDuration(t)
	b := startBroker(t, brokerConfig{Limits: "max_connections: 32\nmax_connect_rate: none"})
	base := procRSS(t, b.cmd.Process.Pid)
	var rounds, busy atomic.Int64
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := 0; w < 48; w++ { // more than the slots: the budget and 0x89 are exercised too
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(stop); i++ {
				v := byte(codec.Version5)
				if i%2 == 1 {
					v = codec.Version311
				}
				nc, err := net.Dial("tcp", b.addr)
				if err != nil {
					continue
				}
				c := &raw{t: t, nc: nc, version: v}
				nc.Write(c.connectPacket("churn-"+strconv.Itoa(w), nil))
				h, body, err := c.next(waitLong)
				if err != nil || h.Type != codec.TypeConnack {
					nc.Close()
					continue
				}
				var ack codec.Connack
				ack.Decode(h, body, v)
				if ack.ReasonCode != codec.Success {
					busy.Add(1) // 0x89 at the bound is the rule working
					nc.Close()
					continue
				}
				p := &codec.Publish{QoS: 1, PacketID: 1, Topic: []byte("churn/x"), Payload: make([]byte, 512)}
				nc.Write(p.Append(nil, v))
				if i%3 == 0 {
					nc.Write((&codec.Disconnect{}).Append(nil, v))
				}
				nc.Close() // abrupt for the rest
				rounds.Add(1)
			}
		}()
	}
	wg.Wait()
	// Every slot is back: 32 connections are admitted at once.
	for i := 0; i < 32; i++ {
		dialRaw(t, b.addr, codec.Version5).mustConnect("after-"+strconv.Itoa(i), nil)
	}
	rss := procRSS(t, b.cmd.Process.Pid)
	t.Logf("%d connections in %s (%d answered Server busy); RSS %.1f MiB -> %.1f MiB", rounds.Load(), d, busy.Load(), float64(base)/(1<<20), float64(rss)/(1<<20))
	if rss > base+64<<20 {
		t.Fatalf("RSS grew from %.1f to %.1f MiB over the churn", float64(base)/(1<<20), float64(rss)/(1<<20))
	}
}
