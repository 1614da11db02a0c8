package netloop_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker"
	"github.com/saguin-edge/saguin/broker/brokertest"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
)

// startServer runs a broker on a free port with opts, stopped at cleanup.
func startServer(t testing.TB, opts netloop.Options) *netloop.Server {
	t.Helper()
	if opts.Handler == nil {
		sessions, retained := brokertest.Stores(t, 0)
		b, err := broker.New(broker.Options{Sessions: sessions, Retained: retained, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Close)
		opts.Handler = b
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if len(opts.Doors) == 0 {
		opts.Doors = []netloop.Door{{Name: "tcp", Kind: netloop.KindTCP, Address: "127.0.0.1:0"}}
	}
	s, err := netloop.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Not t.Context(), which is done before cleanups run: the shutdown
		// waits for every connection to end - a call out included - before
		// the handler's own cleanup closes it.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return s
}

// rawClient speaks MQTT bytes through the codec, for tests that need to see
// exactly what the broker writes.
type rawClient struct {
	t       testing.TB
	nc      net.Conn
	version byte
	buf     []byte
}

func dial(t testing.TB, s *netloop.Server, version byte) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addr("tcp").String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc, version: version}
}

func (c *rawClient) send(b []byte) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// connect sends a CONNECT and returns the CONNACK.
func (c *rawClient) connect(id string, mutate func(*codec.Connect)) *codec.Connack {
	c.t.Helper()
	p := &codec.Connect{Version: c.version, CleanStart: true, KeepAlive: 60, ClientID: []byte(id)}
	if mutate != nil {
		mutate(p)
	}
	c.send(p.Append(nil, c.version))
	h, body := c.read()
	if h.Type != codec.TypeConnack {
		c.t.Fatalf("want CONNACK, got %s", h.Type)
	}
	var ack codec.Connack
	if err := ack.Decode(h, body, c.version); err != nil {
		c.t.Fatal(err)
	}
	return &ack
}

// read returns the next packet, failing the test after 5 s.
func (c *rawClient) read() (codec.Header, []byte) {
	c.t.Helper()
	h, body, err := c.next(5 * time.Second)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return h, body
}

// next returns the next packet or the error that ended the wait.
func (c *rawClient) next(wait time.Duration) (codec.Header, []byte, error) {
	deadline := time.Now().Add(wait)
	for {
		h, err := codec.ReadHeader(c.buf, 0)
		if err == nil && len(c.buf) >= h.Total() {
			body := append([]byte(nil), c.buf[h.HeaderLen:h.Total()]...)
			c.buf = c.buf[h.Total():]
			return h, body, nil
		}
		if err != nil && !errors.Is(err, codec.ErrNeedMore) {
			return h, nil, err
		}
		c.nc.SetReadDeadline(deadline)
		tmp := make([]byte, 64<<10)
		n, err := c.nc.Read(tmp)
		c.buf = append(c.buf, tmp[:n]...)
		if err != nil && n == 0 {
			return codec.Header{}, nil, err
		}
	}
}

// expectClosed waits for the broker to close the connection, failing if a
// packet arrives instead.
func (c *rawClient) expectClosed() {
	c.t.Helper()
	h, _, err := c.next(5 * time.Second)
	if err == nil {
		c.t.Fatalf("want the connection closed, got %s", h.Type)
	}
	if !errors.Is(err, io.EOF) && !isReset(err) {
		c.t.Fatalf("want the connection closed, got %v", err)
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

func (c *rawClient) subscribe(id uint16, filter string, qos byte) []codec.ReasonCode {
	c.t.Helper()
	s := &codec.Subscribe{PacketID: id, Subscriptions: []codec.Subscription{{Filter: []byte(filter), QoS: qos}}}
	c.send(s.Append(nil, c.version))
	h, body := c.read()
	var ack codec.Suback
	if err := ack.Decode(h, body, c.version); err != nil {
		c.t.Fatal(err)
	}
	return ack.ReasonCodes
}

func (c *rawClient) publish(topic, payload string, qos byte, id uint16) {
	c.t.Helper()
	p := &codec.Publish{QoS: qos, Topic: []byte(topic), Payload: []byte(payload), PacketID: id}
	c.send(p.Append(nil, c.version))
}

// expectPublish reads the next packet as a PUBLISH.
func (c *rawClient) expectPublish() *codec.Publish {
	c.t.Helper()
	h, body := c.read()
	if h.Type != codec.TypePublish {
		c.t.Fatalf("want PUBLISH, got %s", h.Type)
	}
	var p codec.Publish
	if err := p.Decode(h, body, c.version); err != nil {
		c.t.Fatal(err)
	}
	return &p
}
