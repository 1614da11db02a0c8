package loadgen

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/bench/peer"
	"github.com/saguin-edge/saguin/bench/stats"
	"github.com/saguin-edge/saguin/codec"
)

// startMosquitto runs the Mosquitto peer for one test: the generator is
// proven against a mature broker, so a failure here is the generator's.
func startMosquitto(t *testing.T) string {
	t.Helper()
	brokers, failed := peer.Prepare(context.Background(), peer.Options{BinDir: t.TempDir()}, []string{peer.Mosquitto})
	if err := failed[peer.Mosquitto]; err != nil {
		t.Skipf("no mosquitto to test against: %v", err)
	}
	p, err := brokers[peer.Mosquitto].Start(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p.Addr
}

func dial(t *testing.T, addr, id string, onPublish func(*codec.Publish)) *Conn {
	t.Helper()
	c, err := Dial(context.Background(), Options{Addr: addr, ClientID: id, OnPublish: onPublish})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestEveryQoS1PublishIsAcknowledgedAndDeliveredOnce(t *testing.T) {
	addr := startMosquitto(t)
	var got atomic.Uint64
	sub := dial(t, addr, "sub", func(p *codec.Publish) {
		if p.QoS == 1 && bytes.Equal(p.Topic, []byte("bench/q1")) {
			got.Add(1)
		}
	})
	if err := sub.Subscribe("bench/#", 1); err != nil {
		t.Fatal(err)
	}
	sub.Start(0)
	var rtt stats.Histogram
	pub, err := Dial(context.Background(), Options{Addr: addr, ClientID: "pub", AckLatency: &rtt})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	pub.Start(16)
	payload := make([]byte, 128)
	const n = 2000
	for range n {
		if err := pub.PublishQoS1(context.Background(), []byte("bench/q1"), payload); err != nil {
			t.Fatal(err)
		}
		if pub.InFlight() > pub.Window() {
			t.Fatalf("%d in flight in a window of %d", pub.InFlight(), pub.Window())
		}
	}
	waitFor(t, "every PUBACK", func() bool { return pub.Acked() == n })
	waitFor(t, "every delivery", func() bool { return got.Load() == n })
	if rtt.Count() != n {
		t.Fatalf("%d round trips recorded, want %d", rtt.Count(), n)
	}
	if sub.Err() != nil || pub.Err() != nil {
		t.Fatalf("connection errors: sub %v, pub %v", sub.Err(), pub.Err())
	}
}

func TestAWindowOfOneWaitsForEachPubackBeforeTheNextPublish(t *testing.T) {
	addr := startMosquitto(t)
	pub := dial(t, addr, "pub", nil)
	pub.Start(1)
	payload := make([]byte, 16)
	for i := range 100 {
		if err := pub.PublishQoS1(context.Background(), []byte("bench/one"), payload); err != nil {
			t.Fatal(err)
		}
		// The publish before this one was acknowledged before this one could
		// take the only packet identifier.
		if got := pub.Acked(); got < uint64(i) {
			t.Fatalf("publish %d went out with only %d acknowledged", i+1, got)
		}
	}
}

func TestQoS0BatchesArriveInOrderWithTheirStamps(t *testing.T) {
	addr := startMosquitto(t)
	var got atomic.Uint64
	var bad atomic.Uint64
	sub := dial(t, addr, "sub", func(p *codec.Publish) {
		if age := Age(p.Payload); age < 0 || age > time.Minute {
			bad.Add(1)
		}
		got.Add(1)
	})
	if err := sub.Subscribe("bench/q0", 0); err != nil {
		t.Fatal(err)
	}
	sub.Start(0)
	pub := dial(t, addr, "pub", nil)
	pub.Start(0)
	payload := make([]byte, 128)
	for range 10 {
		if err := pub.PublishQoS0([]byte("bench/q0"), payload, 50); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "500 deliveries", func() bool { return got.Load() == 500 })
	if bad.Load() != 0 {
		t.Fatalf("%d deliveries carried no sensible stamp", bad.Load())
	}
}

func TestARefusedConnectionIsAnError(t *testing.T) {
	// Port 1 on loopback is not an MQTT broker.
	if _, err := Dial(context.Background(), Options{Addr: "127.0.0.1:1", ClientID: "x", DialTimeout: time.Second}); err == nil {
		t.Fatal("dialing a closed port succeeded")
	}
}

func TestStampAgeIsTheTimeSinceStamping(t *testing.T) {
	p := make([]byte, StampSize)
	Stamp(p)
	if age := Age(p); age < 0 || age > time.Second {
		t.Fatalf("age of a fresh stamp is %v", age)
	}
	if Age(p[:4]) != -1 {
		t.Fatal("a payload too short for a stamp has an age")
	}
}

func TestPeerClosedSeesTheBrokerGoEvenBehindUnreadData(t *testing.T) {
	brokers, failed := peer.Prepare(context.Background(), peer.Options{BinDir: t.TempDir()}, []string{peer.Mosquitto})
	if err := failed[peer.Mosquitto]; err != nil {
		t.Skipf("no mosquitto: %v", err)
	}
	p, err := brokers[peer.Mosquitto].Start(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	sub := dial(t, p.Addr, "deaf", nil)
	if err := sub.Subscribe("bench/deaf", 0); err != nil {
		t.Fatal(err)
	}
	pub := dial(t, p.Addr, "pub", nil)
	if err := pub.PublishQoS0([]byte("bench/deaf"), make([]byte, 64), 10); err != nil {
		t.Fatal(err)
	}
	if closed, err := sub.PeerClosed(); err != nil || closed {
		t.Fatalf("closed %v, %v with the broker running", closed, err)
	}
	p.Stop()
	waitFor(t, "the broker's close to reach the unread socket", func() bool {
		closed, err := sub.PeerClosed()
		return err == nil && closed
	})
}

// A broker that answers two QoS 1 publishes out of order ends the run: the
// second PUBACK arriving first is an error, not a figure.
func TestAPubackOutOfOrderIsAnError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var buf []byte
		chunk := make([]byte, 4096)
		var ids []uint16
		connected := false
		for len(ids) < 2 {
			n, err := c.Read(chunk)
			if err != nil {
				return
			}
			buf = append(buf, chunk[:n]...)
			for {
				h, err := codec.ReadHeader(buf, 0)
				if err != nil || len(buf) < h.Total() {
					break
				}
				body := buf[h.HeaderLen:h.Total()]
				if !connected {
					connected = true
					ack := codec.Connack{}
					c.Write(ack.Append(nil, codec.Version5))
				} else if h.Type == codec.TypePublish {
					var p codec.Publish
					if p.Decode(h, body, codec.Version5) == nil {
						ids = append(ids, p.PacketID)
					}
				}
				buf = buf[h.Total():]
			}
		}
		var out []byte
		for _, id := range []uint16{ids[1], ids[0]} {
			out = (&codec.Ack{Type: codec.TypePuback, PacketID: id}).Append(out, codec.Version5)
		}
		c.Write(out)
		io.Copy(io.Discard, c)
	}()
	pub := dial(t, l.Addr().String(), "pub", nil)
	pub.Start(2)
	for range 2 {
		if err := pub.PublishQoS1(context.Background(), []byte("t"), make([]byte, StampSize)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the connection to fail", func() bool { return pub.Err() != nil })
	if !strings.Contains(pub.Err().Error(), "MQTT-4.6.0-2") {
		t.Fatalf("error %v, want the PUBACK order named", pub.Err())
	}
}
