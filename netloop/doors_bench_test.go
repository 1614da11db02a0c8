package netloop_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
)

// What each door costs against plain tcp, in the same run: a QoS 1 round
// trip (publish, delivery to a subscriber that acknowledges, PUBACK) through
// each door, and full TLS handshakes a second. Both ends are in this
// process, the WebSocket client's framing included.

// doorDialer opens client connections to one door of s.
type doorDialer func() (net.Conn, error)

func benchDoors(b *testing.B) (*netloop.Server, map[string]doorDialer) {
	f := newTLSFixture(b, false, false)
	s := startServer(b, netloop.Options{SessionQueueBytes: 64 << 20, Doors: []netloop.Door{
		{Name: "tcp", Kind: netloop.KindTCP, Address: "127.0.0.1:0"},
		{Name: "tls", Kind: netloop.KindTCP, Address: "127.0.0.1:0", TLS: f.config},
		{Name: "ws", Kind: netloop.KindWS, Address: "127.0.0.1:0"},
		{Name: "wss", Kind: netloop.KindWS, Address: "127.0.0.1:0", TLS: f.config},
	}})
	clientTLS := &tls.Config{RootCAs: f.ca.Pool(), ServerName: "localhost"}
	wsDial := func(url string) doorDialer {
		return func() (net.Conn, error) {
			d := ws.Dialer{Protocols: []string{"mqtt"}, TLSConfig: clientTLS}
			nc, br, _, err := d.Dial(context.Background(), url)
			if err != nil {
				return nil, err
			}
			var r io.Reader = nc
			if br != nil {
				r = io.MultiReader(br, nc)
			}
			return &wsNetConn{Conn: nc, rw: struct {
				io.Reader
				io.Writer
			}{r, nc}}, nil
		}
	}
	return s, map[string]doorDialer{
		"tcp": func() (net.Conn, error) { return net.Dial("tcp", s.Addr("tcp").String()) },
		"tls": func() (net.Conn, error) { return tls.Dial("tcp", s.Addr("tls").String(), clientTLS) },
		"ws":  wsDial("ws://" + s.Addr("ws").String() + "/mqtt"),
		"wss": wsDial("wss://localhost:" + portOf(s.Addr("wss")) + "/mqtt"),
	}
}

func benchConnectVia(b *testing.B, dial doorDialer, id string) *benchConn {
	b.Helper()
	nc, err := dial()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { nc.Close() })
	c := &benchConn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10)}
	p := &codec.Connect{Version: codec.Version5, CleanStart: true, ClientID: []byte(id)}
	if _, err := nc.Write(p.Append(nil, codec.Version5)); err != nil {
		b.Fatal(err)
	}
	if t, _, err := c.readPacket(nil); err != nil || t != codec.TypeConnack {
		b.Fatalf("CONNACK: %v %v", t, err)
	}
	return c
}

// BenchmarkDoorQoS1RoundTrip: one publisher and one subscriber on the same
// door; an op is one QoS 1 publish acknowledged, its delivery acknowledged
// by the subscriber.
func BenchmarkDoorQoS1RoundTrip(b *testing.B) {
	_, doors := benchDoors(b)
	for _, name := range []string{"tcp", "tls", "ws", "wss"} {
		b.Run("door="+name, func(b *testing.B) {
			sub := benchConnectVia(b, doors[name], "door-sub-"+name)
			sub.subscribe(b, "door/"+name, 1)
			go func() {
				var buf []byte
				ack := []byte{0x40, 2, 0, 0}
				for {
					t, body, err := sub.readPacket(buf)
					buf = body
					if err != nil {
						return
					}
					if t == codec.TypePublish && len(body) >= 2 {
						tl := int(body[0])<<8 | int(body[1])
						ack[2], ack[3] = body[2+tl], body[3+tl]
						sub.nc.Write(ack)
					}
				}
			}()
			pub := benchConnectVia(b, doors[name], "door-pub-"+name)
			b.ReportAllocs()
			b.ResetTimer()
			b.ReportMetric(publishQoS1Round(b, []*benchConn{pub}, "door/"+name), "msgs/s")
		})
	}
}

// BenchmarkTLSHandshake: full handshakes a second with an ECDSA P-256
// certificate, each a new connection sending CONNECT and reading CONNACK.
func BenchmarkTLSHandshake(b *testing.B) {
	f := newTLSFixture(b, false, false)
	s := startServer(b, netloop.Options{Doors: []netloop.Door{{Name: "tls", Kind: netloop.KindTCP, Address: "127.0.0.1:0", TLS: f.config}}})
	pkt := (&codec.Connect{Version: codec.Version5, CleanStart: true, ClientID: []byte("bench-hs")}).Append(nil, codec.Version5)
	for _, v := range []struct {
		name string
		max  uint16
	}{{"tls1.2", tls.VersionTLS12}, {"tls1.3", tls.VersionTLS13}} {
		b.Run(v.name, func(b *testing.B) {
			cfg := &tls.Config{RootCAs: f.ca.Pool(), ServerName: "localhost", MaxVersion: v.max, ClientSessionCache: nil}
			var ack [16]byte
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				c, err := tls.Dial("tcp", s.Addr("tls").String(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				c.Write(pkt)
				if _, err := c.Read(ack[:]); err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "handshakes/s")
		})
	}
}

// BenchmarkIdleStreamConnection: the heap and goroutine stacks 2,000 idle
// connections hold on each stream door (each sent CONNECT and read
// CONNACK), after collections, per connection, with the goroutines left per
// connection - what a heap profile of this benchmark
// (-memprofile) splits by allocation site. Both ends are in this process, so
// the heap is the client's and the broker's together; stacks are the
// broker's alone (a client is driven from the benchmark's goroutine).
// conformance's BenchmarkIdleConnectionMemoryPerDoor is the broker's RSS.
func BenchmarkIdleStreamConnection(b *testing.B) {
	const n = 2000
	for _, name := range []string{"tls", "ws", "wss"} {
		b.Run("door="+name, func(b *testing.B) {
			_, doors := benchDoors(b)
			var before, after runtime.MemStats
			for b.Loop() {
				runtime.GC()
				runtime.ReadMemStats(&before)
				g := runtime.NumGoroutine()
				conns := make([]net.Conn, 0, n)
				var ack [64]byte
				for i := range n {
					nc, err := doors[name]()
					if err == nil {
						_, err = nc.Write((&codec.Connect{Version: codec.Version5, CleanStart: true, ClientID: []byte("idle-" + strconv.Itoa(i))}).Append(nil, codec.Version5))
					}
					if err == nil {
						_, err = nc.Read(ack[:])
					}
					if err != nil {
						b.Fatalf("connection %d: %v", i, err)
					}
					conns = append(conns, nc)
				}
				// Stacks shrink at collections to what a parked goroutine
				// uses; a few let every one of them get there.
				for range 4 {
					runtime.GC()
				}
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/n, "heap-B/conn")
				b.ReportMetric(float64(int64(after.StackInuse)-int64(before.StackInuse))/n, "stack-B/conn")
				b.ReportMetric(float64(runtime.NumGoroutine()-g)/n, "goroutines/conn")
				for _, nc := range conns {
					nc.Close()
				}
			}
		})
	}
}
