package netloop_test

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
)

// Whole-path benchmarks: real sockets on loopback, the broker in this
// process. They measure the broker and the test's clients together on the
// same cores; bench/ compares whole brokers side by side.

// peerFlag aims the wire benchmarks at another broker (Mosquitto, say) so
// that both are measured by the same clients in the same run.
var peerFlag = flag.String("peer", "", "host:port of another broker for the wire benchmarks")

// loopsFlag sets Options.EventLoops of the in-process broker; 0 is the default.
var loopsFlag = flag.Int("loops", 0, "event loops for the in-process broker (0: netloop's default)")

// benchAddr is the broker the wire benchmarks talk to: -peer, or Sagüin in
// this process with a 64 MiB outbound bound per connection.
func benchAddr(b *testing.B) string {
	if *peerFlag != "" {
		return *peerFlag
	}
	return startServer(b, netloop.Options{SessionQueueBytes: 64 << 20, EventLoops: *loopsFlag}).Addr("tcp").String()
}

// benchConn is a connected client with a buffered reader.
type benchConn struct {
	nc net.Conn
	r  *bufio.Reader
}

func benchConnect(b *testing.B, addr string, id string) *benchConn {
	b.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { nc.Close() })
	c := &benchConn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10)}
	p := &codec.Connect{Version: codec.Version5, CleanStart: true, KeepAlive: 0, ClientID: []byte(id)}
	if _, err := nc.Write(p.Append(nil, codec.Version5)); err != nil {
		b.Fatal(err)
	}
	if t, _, err := c.readPacket(nil); err != nil || t != codec.TypeConnack {
		b.Fatalf("CONNACK: %v %v", t, err)
	}
	return c
}

// readPacket reads one packet into buf (grown as needed) and returns its type.
func (c *benchConn) readPacket(buf []byte) (codec.Type, []byte, error) {
	first, err := c.r.ReadByte()
	if err != nil {
		return 0, buf, err
	}
	var n, shift int
	for {
		d, err := c.r.ReadByte()
		if err != nil {
			return 0, buf, err
		}
		n |= int(d&0x7F) << shift
		if d&0x80 == 0 {
			break
		}
		shift += 7
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	_, err = io.ReadFull(c.r, buf)
	return codec.Type(first >> 4), buf, err
}

func (c *benchConn) subscribe(b *testing.B, filter string, qos byte) {
	b.Helper()
	s := &codec.Subscribe{PacketID: 1, Subscriptions: []codec.Subscription{{Filter: []byte(filter), QoS: qos}}}
	c.nc.Write(s.Append(nil, codec.Version5))
	if t, _, err := c.readPacket(nil); err != nil || t != codec.TypeSuback {
		b.Fatalf("SUBACK: %v %v", t, err)
	}
}

// BenchmarkConnect is connections a second: dial, CONNECT, CONNACK, close.
func BenchmarkConnect(b *testing.B) {
	addr := benchAddr(b)
	pkt := (&codec.Connect{Version: codec.Version5, CleanStart: true, ClientID: []byte("bench-connect")}).Append(nil, codec.Version5)
	var ack [16]byte
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		nc.Write(pkt)
		if _, err := nc.Read(ack[:]); err != nil {
			b.Fatal(err)
		}
		nc.Close()
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "conns/s")
}

// BenchmarkQoS0FanIn is N publishers sending QoS 0 into one subscriber; an
// op is one message published. QoS 0 past the subscriber's queue bound is
// shed, so what arrived is reported beside it: delivered/s and shed%.
func BenchmarkQoS0FanIn(b *testing.B) {
	for _, pubs := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("publishers=%d", pubs), func(b *testing.B) {
			s := benchAddr(b)
			sub := benchConnect(b, s, "fanin-sub")
			sub.subscribe(b, "fanin/#", 0)
			publishers := make([]*benchConn, pubs)
			for i := range publishers {
				publishers[i] = benchConnect(b, s, fmt.Sprintf("fanin-pub-%d", i))
			}
			payload := make([]byte, 64)
			one := (&codec.Publish{Topic: []byte("fanin/x"), Payload: payload}).Append(nil, codec.Version5)
			const batch = 64
			var burst []byte
			for i := 0; i < batch; i++ {
				burst = append(burst, one...)
			}
			b.ResetTimer()
			start := time.Now()
			var got atomic.Int64
			var last atomic.Int64 // unix ns of the last delivery
			go func() {
				var buf []byte
				for {
					t, body, err := sub.readPacket(buf)
					buf = body
					if err != nil {
						return
					}
					if t == codec.TypePublish {
						got.Add(1)
						last.Store(time.Now().UnixNano())
					}
				}
			}()
			var wg sync.WaitGroup
			per := (b.N + pubs - 1) / pubs
			for _, p := range publishers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for sent := 0; sent < per; sent += batch {
						n := min(batch, per-sent)
						p.nc.Write(burst[:n*len(one)])
					}
				}()
			}
			wg.Wait()
			total := int64(per * pubs)
			// Everything arrived, or nothing more for 500 ms: the rest was shed.
			for got.Load() < total && time.Since(time.Unix(0, max(last.Load(), start.UnixNano()))) < 500*time.Millisecond {
				time.Sleep(time.Millisecond)
			}
			end := time.Unix(0, max(last.Load(), start.UnixNano()))
			b.StopTimer()
			b.ReportMetric(float64(got.Load())/end.Sub(start).Seconds(), "delivered/s")
			b.ReportMetric(100*float64(total-got.Load())/float64(total), "shed%")
		})
	}
}

// BenchmarkQoS1RoundTrip is N publishers each publishing QoS 1 and waiting
// for the PUBACK before the next, beside one subscriber acknowledging at QoS
// 1; an op is one publish answered.
func BenchmarkQoS1RoundTrip(b *testing.B) {
	for _, pubs := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("publishers=%d", pubs), func(b *testing.B) {
			s := benchAddr(b)
			sub := benchConnect(b, s, "rt-sub")
			sub.subscribe(b, "rt/#", 1)
			go func() {
				var buf []byte
				ack := []byte{0x40, 2, 0, 0} // one PUBACK buffer: the client allocates nothing per message
				for {
					t, body, err := sub.readPacket(buf)
					buf = body
					if err != nil {
						return
					}
					if t == codec.TypePublish && len(body) >= 2 {
						// topic length, topic, then the packet identifier
						tl := int(body[0])<<8 | int(body[1])
						id := body[2+tl : 4+tl]
						ack[2], ack[3] = id[0], id[1]
						sub.nc.Write(ack)
					}
				}
			}()
			publishers := make([]*benchConn, pubs)
			for i := range publishers {
				publishers[i] = benchConnect(b, s, fmt.Sprintf("rt-pub-%d", i))
			}
			b.ResetTimer()
			b.ReportMetric(publishQoS1Round(b, publishers, "rt/x"), "msgs/s")
		})
	}
}

// publishQoS1Round has every publisher send QoS 1 PUBLISHes to topic, each
// waiting for its PUBACK before the next, until b.N have been acknowledged
// between them, and returns the rate they were acknowledged at.
func publishQoS1Round(b *testing.B, publishers []*benchConn, topic string) float64 {
	payload := make([]byte, 64)
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for _, p := range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pkt := &codec.Publish{QoS: 1, Topic: []byte(topic), Payload: payload}
			var out, buf []byte
			for id := uint16(1); next.Add(1) <= int64(b.N); id++ {
				if id == 0 {
					id = 1
				}
				pkt.PacketID = id
				out = pkt.Append(out[:0], codec.Version5)
				p.nc.Write(out)
				var t codec.Type
				var err error
				if t, buf, err = p.readPacket(buf); err != nil || t != codec.TypePuback {
					b.Errorf("want PUBACK: %v %v", t, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return float64(b.N) / time.Since(start).Seconds()
}
