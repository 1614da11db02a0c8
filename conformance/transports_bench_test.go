package conformance

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"testing"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/saguin-edge/saguin/codec"
)

// BenchmarkIdleConnectionMemoryPerDoor is what an idle connection costs the
// broker's RSS on each door - plain tcp, TLS (ECDSA P-256) and WebSocket -
// measured the way BenchmarkIdleConnectionMemory measures tcp: RSS after n
// connections have each sent CONNECT and read CONNACK, less RSS before.
func BenchmarkIdleConnectionMemoryPerDoor(b *testing.B) {
	dir := b.TempDir()
	p := newPKI(b, dir)
	for _, door := range []string{"tcp", "tls", "ws"} {
		for _, n := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("door=%s/connections=%d", door, n), func(b *testing.B) {
				listen := "tcp:\n  address: 127.0.0.1:0"
				switch door {
				case "tls":
					listen = "tcp:\n  address: 127.0.0.1:0\n  tls:\n    cert_file: " + p.serverCert + "\n    key_file: " + p.serverKey
				case "ws":
					listen = "ws:\n  address: 127.0.0.1:0"
				}
				br := startBroker(b, brokerConfig{Listen: listen, Limits: "max_connections: 12000\nmax_connect_rate: none"})
				cfg := &tls.Config{RootCAs: p.ca.Pool()}
				before := vmRSS(b, br.cmd.Process.Pid)
				conns := make([]net.Conn, 0, n)
				defer func() {
					for _, nc := range conns {
						nc.Close()
					}
				}()
				for i := 0; i < n; i++ {
					pkt := (&codec.Connect{Version: codec.Version5, CleanStart: true, ClientID: []byte("idle-" + strconv.Itoa(i))}).Append(nil, codec.Version5)
					var nc net.Conn
					var err error
					switch door {
					case "tcp":
						if nc, err = net.Dial("tcp", br.addr); err == nil {
							_, err = nc.Write(pkt)
						}
					case "tls":
						if nc, err = tls.Dial("tcp", br.addr, cfg); err == nil {
							_, err = nc.Write(pkt)
						}
					case "ws":
						if nc, _, _, err = ws.Dial(context.Background(), "ws://"+br.addr+"/mqtt"); err == nil {
							err = wsutil.WriteClientBinary(nc, pkt)
						}
					}
					if err == nil {
						var ack [64]byte
						_, err = nc.Read(ack[:])
					}
					if err != nil {
						b.Fatalf("connection %d: %v", i, err)
					}
					conns = append(conns, nc)
				}
				after := vmRSS(b, br.cmd.Process.Pid)
				b.ReportMetric(float64(after-before)/float64(n), "B/conn")
				b.ReportMetric(float64(after)/(1<<20), "MiB-rss")
			})
		}
	}
}
