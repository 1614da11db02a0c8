package loadgen

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// fakeBroker accepts one connection, answers its CONNECT with a CONNACK,
// writes stream copies times and then discards whatever it is sent. It
// stands in for a broker so that a benchmark measures the generator alone.
func fakeBroker(b *testing.B, stream []byte, copies int) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 256)
		if _, err := c.Read(buf); err != nil { // the CONNECT, small enough for one read
			return
		}
		ack := codec.Connack{}
		if _, err := c.Write(ack.Append(nil, codec.Version5)); err != nil {
			return
		}
		for range copies {
			if _, err := c.Write(stream); err != nil {
				return
			}
		}
		_, _ = io.Copy(io.Discard, c)
	}()
	return l.Addr().String()
}

// BenchmarkReaderTakesADelivery is the subscriber side of every scenario:
// framing, decoding and counting one 128-byte QoS 0 PUBLISH. It should
// allocate nothing per delivery.
func BenchmarkReaderTakesADelivery(b *testing.B) {
	const perWrite = 64
	p := codec.Publish{Topic: []byte("bench/fanout"), Payload: make([]byte, 128)}
	var stream []byte
	for range perWrite {
		stream = p.Append(stream, codec.Version5)
	}
	copies := (b.N + perWrite - 1) / perWrite
	addr := fakeBroker(b, stream, copies)
	var got atomic.Int64
	done := make(chan struct{})
	want := int64(copies * perWrite)
	c, err := Dial(context.Background(), Options{Addr: addr, ClientID: "bench", OnPublish: func(*codec.Publish) {
		if got.Add(1) == want {
			close(done)
		}
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	b.ResetTimer()
	c.Start(0)
	<-done
}

// BenchmarkQoS0Publish is the publisher side of fanin-q0: stamping and
// encoding a batch of 128-byte publishes and writing it.
func BenchmarkQoS0Publish(b *testing.B) {
	addr := fakeBroker(b, nil, 0)
	c, err := Dial(context.Background(), Options{Addr: addr, ClientID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	c.Start(0)
	topic, payload := []byte("bench/fanin/0"), make([]byte, 128)
	b.ReportAllocs()
	for b.Loop() {
		if err := c.PublishQoS0(topic, payload, 32); err != nil {
			b.Fatal(err)
		}
	}
}

// ackingBroker accepts one connection, answers CONNECT with a CONNACK and
// every QoS 1 PUBLISH with its PUBACK, doing nothing else: the cheapest peer
// there can be, so that a round trip against it is the generator's own floor.
func ackingBroker(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 64<<10)
		var out []byte
		start, end := 0, 0
		connected := false
		for {
			n, err := c.Read(buf[end:])
			if err != nil {
				return
			}
			end += n
			out = out[:0]
			for {
				h, err := codec.ReadHeader(buf[start:end], 0)
				if err != nil || end-start < h.Total() {
					break
				}
				body := buf[start+h.HeaderLen : start+h.Total()]
				start += h.Total()
				switch {
				case !connected:
					connected = true
					ack := codec.Connack{}
					out = ack.Append(out, codec.Version5)
				case h.Type == codec.TypePublish && len(body) >= 2:
					// QoS 1: the packet identifier follows the topic.
					topicLen := int(body[0])<<8 | int(body[1])
					id := uint16(body[2+topicLen])<<8 | uint16(body[3+topicLen])
					ack := codec.Ack{Type: codec.TypePuback, PacketID: id}
					out = ack.Append(out, codec.Version5)
				}
			}
			copy(buf, buf[start:end])
			end -= start
			start = 0
			if len(out) > 0 {
				if _, err := c.Write(out); err != nil {
					return
				}
			}
		}
	}()
	return l.Addr().String()
}

// BenchmarkQoS1RoundTrip is pub-q1/1's publisher against a peer that only
// acknowledges: one PUBLISH, one PUBACK, the next PUBLISH. Its ns/op is the
// floor the generator and loopback put under every broker's round trip.
func BenchmarkQoS1RoundTrip(b *testing.B) {
	c, err := Dial(context.Background(), Options{Addr: ackingBroker(b), ClientID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	c.Start(1)
	topic, payload := []byte("bench/pubq1/0"), make([]byte, 128)
	b.ReportAllocs()
	for b.Loop() {
		if err := c.PublishQoS1(context.Background(), topic, payload); err != nil {
			b.Fatal(err)
		}
	}
}
