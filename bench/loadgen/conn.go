// Package loadgen is the benchmark's own MQTT 5 client, written on the
// project's codec so that the load generator costs as little as the broker
// under test ought to: raw TCP, one reader goroutine per connection reusing
// one buffer and one decoded packet, QoS 1 publishing pipelined inside the
// Receive Maximum the broker granted, acknowledgements batched per read, and
// nothing allocated per message once a connection is up.
//
// It is a load generator, not a library: it speaks the subset of MQTT 5 the
// scenarios need (CONNECT, SUBSCRIBE, PUBLISH at QoS 0 and 1, PUBACK,
// DISCONNECT) and treats anything unexpected from the broker as the end of
// the connection, recorded in Err.
package loadgen

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/saguin-edge/saguin/bench/stats"
	"github.com/saguin-edge/saguin/codec"
)

// maxPacket bounds what the generator will read: the brokers deliver what
// the scenarios publish (at most a few KiB), so anything larger is a broken
// stream rather than a packet worth growing a buffer for.
const maxPacket = 1 << 20

// Options are one connection's settings.
type Options struct {
	Addr     string
	ClientID string
	// ReadBuffer is the reader's buffer size; 64 KiB when zero. Idle
	// connections held by the thousand want it small.
	ReadBuffer int
	// SocketReceiveBuffer, when positive, sets SO_RCVBUF before CONNECT: a
	// subscriber that stops reading fills a small kernel buffer sooner, so the
	// broker meets it within the measured window.
	SocketReceiveBuffer int
	// OnPublish is called on the reader goroutine for every PUBLISH delivered.
	// The packet and its slices are reused for the next one: copy what is kept.
	OnPublish func(p *codec.Publish)
	// AckLatency, when set, records the time from writing each QoS 1 PUBLISH
	// to reading its PUBACK.
	AckLatency *stats.Histogram
	// RefusedLatency, when set, takes the round trip of each refused QoS 1
	// PUBLISH, which is then no error: a producer at a queue's max_bytes is
	// answered 0x97, and that answer's latency is what is measured.
	RefusedLatency *stats.Histogram
	// DialTimeout bounds the TCP connect and the CONNACK; 10 s when zero.
	DialTimeout time.Duration
	// Retain sets RETAIN on every QoS 1 PUBLISH: a retained value on a
	// broadcast broker, a latest channel's value on Sagüin.
	Retain bool
	// Reply, when set, is called on the reader goroutine after each QoS 1
	// PUBLISH delivered, and what it appends to out is written right after
	// that delivery's PUBACK, in the same write: a queue worker's answer on
	// its Response Topic. The packet is OnPublish's.
	Reply func(p *codec.Publish, out []byte) []byte
	// KeepAlive is the CONNECT's keepalive in seconds; 0 (none) when zero.
	// The generator sends no PINGREQ: a case that sets it holds connections
	// for less than one and a half times it.
	KeepAlive uint16
	// SessionExpiry, when non-zero, connects with Clean Start 0 and this
	// Session Expiry in seconds: a durable consumer whose session, and what
	// it is owed, outlives the connection (the replay scenario).
	SessionExpiry uint32
	// ReceiveMaximum, when non-zero, is the CONNECT's Receive Maximum: how
	// many QoS 1 deliveries the broker may have unacknowledged to it.
	ReceiveMaximum uint16
	// Source, when set, is the local address the connection is dialed from
	// (any port). One source address has only the kernel's ephemeral ports
	// (about 28,000 by default) to dial one broker address with.
	Source net.IP
	// TLS, when set, runs a TLS handshake with this configuration before
	// CONNECT (a broker's TLS door); DialTimeout bounds it too.
	TLS *tls.Config
}

// Conn is one connection to the broker.
type Conn struct {
	nc  net.Conn
	opt Options

	// Granted by the CONNACK.
	receiveMaximum uint16 // how many QoS 1 publishes may be unacknowledged

	wmu  sync.Mutex // one writer at a time: a publisher and the reader's PUBACKs
	wbuf []byte

	// free holds the packet identifiers not in flight; its capacity is the
	// window, so taking one is waiting for room and a PUBACK gives it back.
	free   chan uint16
	sentAt []atomic.Int64 // Now() at writing, by packet identifier; 0 when not in flight
	order  sendOrder      // the identifiers in flight in the order written

	acked     atomic.Uint64 // PUBACKs read
	refused   atomic.Uint64 // of those, refusals (with RefusedLatency)
	delivered atomic.Uint64 // PUBLISHes read

	paused  atomic.Bool
	resume  chan struct{} // closed by Close to release a paused reader
	started bool
	done    chan struct{} // closed when the reader has returned
	errMu   sync.Mutex
	err     error
	closed  atomic.Bool
}

// epoch is the origin of every timestamp the generator writes: monotonic
// time since the process started, so sender and receiver, both in this
// process, agree without a wall clock.
var epoch = time.Now()

// Now is the generator's clock, the value Stamp writes into a payload.
func Now() int64 { return int64(time.Since(epoch)) }

// Dial connects, sends CONNECT (MQTT 5, no keepalive; Clean Start and no
// session kept after the connection unless Options.SessionExpiry says
// otherwise) and waits for a CONNACK that accepts it.
func Dial(ctx context.Context, opt Options) (*Conn, error) {
	if opt.ReadBuffer <= 0 {
		opt.ReadBuffer = 64 << 10
	}
	if opt.DialTimeout <= 0 {
		opt.DialTimeout = 10 * time.Second
	}
	d := net.Dialer{Timeout: opt.DialTimeout}
	if opt.Source != nil {
		d.LocalAddr = &net.TCPAddr{IP: opt.Source}
	}
	nc, err := d.DialContext(ctx, "tcp", opt.Addr)
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", opt.Addr, err)
	}
	if opt.SocketReceiveBuffer > 0 {
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(opt.SocketReceiveBuffer)
		}
	}
	if opt.TLS != nil {
		tc := tls.Client(nc, opt.TLS)
		hctx, cancel := context.WithTimeout(ctx, opt.DialTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", opt.Addr, err)
		}
		nc = tc
	}
	c := &Conn{nc: nc, opt: opt, resume: make(chan struct{}), done: make(chan struct{})}
	if err := c.handshake(); err != nil {
		nc.Close()
		return nil, fmt.Errorf("connecting %q to %s: %w", opt.ClientID, opt.Addr, err)
	}
	return c, nil
}

func (c *Conn) handshake() error {
	_ = c.nc.SetDeadline(time.Now().Add(c.opt.DialTimeout))
	defer c.nc.SetDeadline(time.Time{})
	p := codec.Connect{Version: codec.Version5, CleanStart: c.opt.SessionExpiry == 0, KeepAlive: c.opt.KeepAlive, ClientID: []byte(c.opt.ClientID)}
	if c.opt.SessionExpiry > 0 {
		p.Properties.SessionExpiry = c.opt.SessionExpiry
		p.Properties.Present.Set(codec.PropSessionExpiry)
	}
	if c.opt.ReceiveMaximum > 0 {
		p.Properties.ReceiveMaximum = c.opt.ReceiveMaximum
		p.Properties.Present.Set(codec.PropReceiveMaximum)
	}
	if _, err := c.nc.Write(p.Append(nil, codec.Version5)); err != nil {
		return fmt.Errorf("writing CONNECT: %w", err)
	}
	h, body, err := c.readPacket(make([]byte, 0, 256))
	if err != nil {
		return fmt.Errorf("reading CONNACK: %w", err)
	}
	if h.Type != codec.TypeConnack {
		return fmt.Errorf("broker answered CONNECT with %s", h.Type)
	}
	var ack codec.Connack
	if err := ack.Decode(h, body, codec.Version5); err != nil {
		return fmt.Errorf("decoding CONNACK: %w", err)
	}
	if ack.ReasonCode != codec.Success {
		return fmt.Errorf("CONNACK refused: %s", ack.ReasonCode)
	}
	c.receiveMaximum = 65535 // absent means 65,535 (MQTT 5 3.2.2.3.3)
	if ack.Properties.Present.Has(codec.PropReceiveMaximum) {
		c.receiveMaximum = ack.Properties.ReceiveMaximum
	}
	return nil
}

// readPacket reads exactly one packet synchronously, for the handshakes that
// happen before the reader goroutine starts.
func (c *Conn) readPacket(buf []byte) (codec.Header, []byte, error) {
	buf = buf[:0]
	var one [1]byte
	for {
		h, err := codec.ReadHeader(buf, maxPacket)
		if err == nil {
			body := make([]byte, h.Remaining)
			if _, err := io.ReadFull(c.nc, body); err != nil {
				return h, nil, err
			}
			return h, body, nil
		}
		if !errors.Is(err, codec.ErrNeedMore) {
			return h, nil, err
		}
		if _, err := io.ReadFull(c.nc, one[:]); err != nil {
			return h, nil, err
		}
		buf = append(buf, one[0])
	}
}

// Subscribe subscribes to filter at qos and waits for the SUBACK. It is
// called before Start, while nothing else reads the connection.
func (c *Conn) Subscribe(filter string, qos uint8) error {
	if c.started {
		return errors.New("loadgen: Subscribe after Start")
	}
	_ = c.nc.SetDeadline(time.Now().Add(c.opt.DialTimeout))
	defer c.nc.SetDeadline(time.Time{})
	p := codec.Subscribe{PacketID: 1, Subscriptions: []codec.Subscription{{Filter: []byte(filter), QoS: qos}}}
	if _, err := c.nc.Write(p.Append(nil, codec.Version5)); err != nil {
		return fmt.Errorf("writing SUBSCRIBE %q: %w", filter, err)
	}
	h, body, err := c.readPacket(make([]byte, 0, 16))
	if err != nil {
		return fmt.Errorf("reading SUBACK for %q: %w", filter, err)
	}
	if h.Type != codec.TypeSuback {
		return fmt.Errorf("broker answered SUBSCRIBE %q with %s", filter, h.Type)
	}
	var ack codec.Suback
	if err := ack.Decode(h, body, codec.Version5); err != nil {
		return fmt.Errorf("decoding SUBACK for %q: %w", filter, err)
	}
	if len(ack.ReasonCodes) != 1 || ack.ReasonCodes[0] > codec.ReasonCode(qos) {
		return fmt.Errorf("SUBSCRIBE %q at QoS %d answered %v", filter, qos, ack.ReasonCodes)
	}
	return nil
}

// Start launches the reader goroutine and sets the QoS 1 window to the
// smaller of window and the broker's Receive Maximum (window <= 0 means the
// broker's). A connection never started is never read: the conns scenario
// holds idle connections that way.
func (c *Conn) Start(window int) {
	if c.started {
		return
	}
	c.started = true
	if window <= 0 || window > int(c.receiveMaximum) {
		window = int(c.receiveMaximum)
	}
	c.free = make(chan uint16, window)
	for id := 1; id <= window; id++ {
		c.free <- uint16(id)
	}
	c.sentAt = make([]atomic.Int64, window+1)
	c.order.ids = make([]uint16, window)
	go c.readLoop()
}

// sendOrder is a ring of the packet identifiers in flight in the order their
// PUBLISHes were written: a broker must answer QoS 1 in the order it received
// (MQTT 5 4.6, MQTT-4.6.0-2), and a run whose PUBACKs came out of order is no
// figure. Its own lock, not the writer's: a write blocked on a broker that
// is not reading must not stall the reader.
type sendOrder struct {
	mu      sync.Mutex
	ids     []uint16
	head, n int
}

func (o *sendOrder) push(id uint16) {
	o.mu.Lock()
	o.ids[(o.head+o.n)%len(o.ids)] = id
	o.n++
	o.mu.Unlock()
}

// pop takes the oldest identifier in flight; ok is false when none is.
func (o *sendOrder) pop() (id uint16, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == 0 {
		return 0, false
	}
	id = o.ids[o.head]
	o.head = (o.head + 1) % len(o.ids)
	o.n--
	return id, true
}

// Window is the number of QoS 1 publishes that may be unacknowledged.
func (c *Conn) Window() int { return cap(c.free) }

// Acked is how many PUBACKs have been read.
func (c *Conn) Acked() uint64 { return c.acked.Load() }

// Refused is how many PUBACKs refused their PUBLISH (counted only with
// Options.RefusedLatency, without which a refusal ends the connection).
func (c *Conn) Refused() uint64 { return c.refused.Load() }

// Delivered is how many PUBLISHes have been read.
func (c *Conn) Delivered() uint64 { return c.delivered.Load() }

// Pause stops reading the socket, as a client that has stopped reading does:
// what the broker sends stays in the kernel's buffers and then the broker's.
func (c *Conn) Pause() { c.paused.Store(true) }

// Err is why the connection ended early, or nil.
func (c *Conn) Err() error {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	return c.err
}

func (c *Conn) fail(err error) {
	c.errMu.Lock()
	if c.err == nil && !c.closed.Load() {
		c.err = err
	}
	c.errMu.Unlock()
}

// Close sends DISCONNECT (normal disconnection), closes the socket and waits
// for the reader to return.
func (c *Conn) Close() {
	if c.closed.Swap(true) {
		return
	}
	close(c.resume)
	// The deadline first, outside the lock: a publisher blocked in Write on a
	// broker that stopped reading holds the lock, and this is what frees it.
	_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	c.wmu.Lock()
	// DISCONNECT with Remaining Length 0: reason Normal disconnection, no
	// properties (MQTT 5 3.14.2.1).
	_, _ = c.nc.Write([]byte{byte(codec.TypeDisconnect) << 4, 0})
	c.wmu.Unlock()
	c.nc.Close()
	if c.started {
		<-c.done
	}
}

// PeerClosed reports whether the broker has ended the connection, by the
// kernel's TCP state rather than by reading: a paused subscriber's socket is
// full of unread deliveries, and the broker's FIN or RST waits behind them.
func (c *Conn) PeerClosed() (bool, error) {
	tc, ok := c.nc.(*net.TCPConn)
	if !ok {
		return false, errors.New("loadgen: not a TCP connection")
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return false, fmt.Errorf("reaching the socket: %w", err)
	}
	var info *unix.TCPInfo
	var infoErr error
	if err := raw.Control(func(fd uintptr) {
		info, infoErr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil {
		return false, fmt.Errorf("reaching the socket: %w", err)
	}
	if infoErr != nil {
		return false, fmt.Errorf("reading TCP_INFO: %w", infoErr)
	}
	return info.State != unix.BPF_TCP_ESTABLISHED, nil
}
