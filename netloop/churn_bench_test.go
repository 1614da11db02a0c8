package netloop_test

import (
	"bufio"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
)

// BenchmarkQoS1BesideDisconnectsSQLite is one QoS 1 publisher waiting for
// each PUBACK while N other connections of its event loop (one loop) resume
// a persistent session and DISCONNECT, over and over, on a sqlite provider:
// every disconnect stores the session's record and cursor. An op is one
// publish answered; disconnects/s is what the churners managed meanwhile.
// Where a disconnect's commits are made on the loop, the publisher waits for
// them.
func BenchmarkQoS1BesideDisconnectsSQLite(b *testing.B) {
	for _, churners := range []int{1, 8} {
		b.Run(fmt.Sprintf("churners=%d", churners), func(b *testing.B) { benchBesideDisconnects(b, churners) })
	}
}

func benchBesideDisconnects(b *testing.B, churners int) {
	quiet := slog.New(slog.DiscardHandler)
	p, sessions, retained := openSQLite(b)
	br, err := broker.New(broker.Options{Sessions: sessions, Retained: retained, Logger: quiet,
		SessionsWaitOnDisk: true, RetainedWaitOnDisk: true, AwaitClient: p.AwaitClient})
	if err != nil {
		b.Fatal(err)
	}
	s, err := netloop.New(netloop.Options{Handler: br, Logger: quiet, EventLoops: 1,
		Doors: []netloop.Door{{Name: "tcp", Kind: netloop.KindTCP, Address: "127.0.0.1:0"}}})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	addr := s.Addr("tcp").String()
	stop := make(chan struct{})
	var churns atomic.Int64
	var wg sync.WaitGroup
	b.Cleanup(func() {
		close(stop)
		wg.Wait()
		s.Shutdown(b.Context())
		br.Close()
		p.Close()
	})
	for i := range churners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			connect := &codec.Connect{Version: codec.Version5, ClientID: []byte(fmt.Sprintf("churn-%d", i)),
				Properties: codec.Properties{SessionExpiry: 3600, Present: 1 << codec.PropSessionExpiry}}
			out := append(connect.Append(nil, codec.Version5), (&codec.Disconnect{}).Append(nil, codec.Version5)...)
			for {
				select {
				case <-stop:
					return
				default:
				}
				nc, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				c := &benchConn{nc: nc, r: bufio.NewReader(nc)}
				nc.Write(out)
				if t, _, err := c.readPacket(nil); err == nil && t == codec.TypeConnack {
					churns.Add(1)
				}
				c.r.ReadByte() // the broker closes after the DISCONNECT
				nc.Close()
			}
		}()
	}
	pub := benchConnect(b, addr, "bench-pub")
	pkt := &codec.Publish{QoS: 1, Topic: []byte("beside/x"), Payload: make([]byte, 64)}
	var out, buf []byte
	churns0 := churns.Load()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		pkt.PacketID = uint16(i%65535) + 1
		out = pkt.Append(out[:0], codec.Version5)
		pub.nc.Write(out)
		var t codec.Type
		if t, buf, err = pub.readPacket(buf); err != nil || t != codec.TypePuback {
			b.Fatalf("want PUBACK: %v %v", t, err)
		}
	}
	elapsed := time.Since(start).Seconds()
	b.ReportMetric(float64(b.N)/elapsed, "msgs/s")
	b.ReportMetric(float64(churns.Load()-churns0)/elapsed, "disconnects/s")
}
