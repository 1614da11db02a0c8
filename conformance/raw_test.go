package conformance

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// waitLong bounds every wait for something the spec says will happen; a test
// never sleeps to synchronise, it waits for the event with this deadline.
const waitLong = 10 * time.Second

// raw speaks MQTT bytes through the codec, for tests that must see exactly
// what the broker writes and when it closes.
type raw struct {
	t       testing.TB
	nc      net.Conn
	version byte
	buf     []byte
	// early are point-read replies that arrived before their PUBACK
	// (latest_test.go's pointRead).
	early []*codec.Publish
}

func dialRaw(t testing.TB, addr string, version byte) *raw {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, waitLong)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &raw{t: t, nc: nc, version: version}
}

func dialRawUnix(t testing.TB, path string, version byte) *raw {
	t.Helper()
	nc, err := net.DialTimeout("unix", path, waitLong)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &raw{t: t, nc: nc, version: version}
}

func (c *raw) send(b []byte) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(waitLong))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// connectPacket is a CONNECT with Clean Start, keepalive 60 and id.
func (c *raw) connectPacket(id string, mutate func(*codec.Connect)) []byte {
	p := &codec.Connect{Version: c.version, CleanStart: true, KeepAlive: 60, ClientID: []byte(id)}
	if mutate != nil {
		mutate(p)
	}
	return p.Append(nil, c.version)
}

// connect sends a CONNECT and returns the CONNACK.
func (c *raw) connect(id string, mutate func(*codec.Connect)) *codec.Connack {
	c.t.Helper()
	c.send(c.connectPacket(id, mutate))
	return c.connack()
}

// connack reads the next packet as a CONNACK.
func (c *raw) connack() *codec.Connack {
	c.t.Helper()
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

// mustConnect connects and fails unless the CONNACK says yes.
func (c *raw) mustConnect(id string, mutate func(*codec.Connect)) *codec.Connack {
	c.t.Helper()
	ack := c.connect(id, mutate)
	if ack.ReasonCode != codec.Success {
		c.t.Fatalf("CONNACK %s (0x%02x), want success", ack.ReasonCode, byte(ack.ReasonCode))
	}
	return ack
}

func (c *raw) read() (codec.Header, []byte) {
	c.t.Helper()
	h, body, err := c.next(waitLong)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return h, body
}

// next returns the next packet, or the error that ended the wait.
func (c *raw) next(wait time.Duration) (codec.Header, []byte, error) {
	deadline := time.Now().Add(wait)
	tmp := make([]byte, 64<<10)
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
		n, err := c.nc.Read(tmp)
		c.buf = append(c.buf, tmp[:n]...)
		if err != nil && n == 0 {
			return codec.Header{}, nil, err
		}
	}
}

// expectClosedSilently waits for the broker to close the connection having
// written nothing at all.
func (c *raw) expectClosedSilently() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(waitLong))
	b, err := io.ReadAll(c.nc)
	if err != nil && !isReset(err) {
		c.t.Fatalf("want the connection closed, got %v", err)
	}
	if len(b)+len(c.buf) != 0 {
		c.t.Fatalf("want nothing written before the close, got % x", append(c.buf, b...))
	}
}

// expectClosed waits for the close, ignoring whatever comes before it.
func (c *raw) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(waitLong))
	if _, err := io.Copy(io.Discard, c.nc); err != nil && !isReset(err) {
		c.t.Fatalf("want the connection closed, got %v", err)
	}
}

// expectDisconnect reads a DISCONNECT carrying code and then the close.
func (c *raw) expectDisconnect(code codec.ReasonCode) {
	c.t.Helper()
	for {
		h, body := c.read()
		if h.Type == codec.TypePublish || h.Type == codec.TypePuback || h.Type == codec.TypePubrec {
			continue // deliveries and answers decided before the end
		}
		if h.Type != codec.TypeDisconnect {
			c.t.Fatalf("want DISCONNECT 0x%02x, got %s", byte(code), h.Type)
		}
		var d codec.Disconnect
		if err := d.Decode(h, body, codec.Version5); err != nil {
			c.t.Fatal(err)
		}
		if d.ReasonCode != code {
			c.t.Fatalf("DISCONNECT %s (0x%02x), want 0x%02x", d.ReasonCode, byte(d.ReasonCode), byte(code))
		}
		break
	}
	c.expectClosed()
}

// expectEnd checks the end a refusal takes in c's protocol: DISCONNECT code
// for MQTT 5, a bare close for 3.1.1.
func (c *raw) expectEnd(code codec.ReasonCode) {
	c.t.Helper()
	if c.version == codec.Version5 {
		c.expectDisconnect(code)
		return
	}
	c.expectClosed()
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

func (c *raw) subscribe(id uint16, filter string, qos byte) []codec.ReasonCode {
	c.t.Helper()
	s := &codec.Subscribe{PacketID: id, Subscriptions: []codec.Subscription{{Filter: []byte(filter), QoS: qos}}}
	c.send(s.Append(nil, c.version))
	h, body := c.read()
	if h.Type != codec.TypeSuback {
		c.t.Fatalf("want SUBACK, got %s", h.Type)
	}
	var ack codec.Suback
	if err := ack.Decode(h, body, c.version); err != nil {
		c.t.Fatal(err)
	}
	return ack.ReasonCodes
}

func (c *raw) publish(topic string, payload []byte, qos byte, id uint16) {
	c.t.Helper()
	p := &codec.Publish{QoS: qos, Topic: []byte(topic), Payload: payload, PacketID: id}
	c.send(p.Append(nil, c.version))
}

// expectPuback reads the next packet as the PUBACK for id and returns its code.
func (c *raw) expectPuback(id uint16) codec.ReasonCode {
	c.t.Helper()
	h, body := c.read()
	if h.Type != codec.TypePuback {
		c.t.Fatalf("want PUBACK, got %s", h.Type)
	}
	var a codec.Ack
	if err := a.Decode(h, body, c.version); err != nil {
		c.t.Fatal(err)
	}
	if a.PacketID != id {
		c.t.Fatalf("PUBACK for %d, want %d", a.PacketID, id)
	}
	return a.ReasonCode
}

// expectPublish reads the next packet as a PUBLISH.
func (c *raw) expectPublish() *codec.Publish {
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

// versions runs f once per protocol, as a subtest named after it.
func versions(t *testing.T, f func(t *testing.T, v byte)) {
	for _, v := range []byte{codec.Version311, codec.Version5} {
		name := "3.1.1"
		if v == codec.Version5 {
			name = "5"
		}
		t.Run("v"+name, func(t *testing.T) { f(t, v) })
	}
}
