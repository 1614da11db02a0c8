package netloop

import (
	"log/slog"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// fakeTransport records writes and closes, standing in for a socket.
type fakeTransport struct {
	written int
	closed  bool
}

func (f *fakeTransport) Write(b []byte)     { f.written += len(b) }
func (f *fakeTransport) Buffered() int      { return 0 }
func (f *fakeTransport) Close()             { f.closed = true }
func (f *fakeTransport) Abort()             { f.closed = true }
func (f *fakeTransport) Finish() bool       { return false }
func (f *fakeTransport) Wake()              {}
func (f *fakeTransport) RemoteAddr() string { return "fuzz" }

// FuzzConnOnData feeds arbitrary bytes, in arbitrary pieces, to a connection:
// whatever arrives, it must not panic, must consume no more than it was
// given, and must stop reading once it has decided to end.
func FuzzConnOnData(f *testing.F) {
	connect5 := (&codec.Connect{Version: 5, CleanStart: true, ClientID: []byte("f")}).Append(nil, 5)
	connect4 := (&codec.Connect{Version: 4, CleanStart: true, ClientID: []byte("f")}).Append(nil, 4)
	pub := (&codec.Publish{QoS: 1, PacketID: 1, Topic: []byte("a/b"), Payload: []byte("x")}).Append(nil, 5)
	sub := (&codec.Subscribe{PacketID: 2, Subscriptions: []codec.Subscription{{Filter: []byte("a/#"), QoS: 2}}}).Append(nil, 5)
	f.Add(append(append(append([]byte{}, connect5...), pub...), sub...), uint8(3))
	f.Add(append(append([]byte{}, connect4...), 0xC0, 0), uint8(1))
	f.Add([]byte{0x10, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}, uint8(2))
	f.Add(append(append([]byte{}, connect5...), 0x36, 5, 0, 1, 'a', 0, 1), uint8(7))
	s, err := New(Options{Handler: NopHandler{}, Logger: slog.New(slog.DiscardHandler), MaxMessageSize: 4096, MaxConnectSize: 1024})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, piece uint8) {
		tr := &fakeTransport{}
		c := newConn(s, tr, "fuzz", time.Now())
		step := int(piece)%64 + 1
		var pending []byte
		for off := 0; off < len(data); off += step {
			pending = append(pending, data[off:min(off+step, len(data))]...)
			n := c.OnData(pending)
			if n < 0 || n > len(pending) {
				t.Fatalf("consumed %d of %d", n, len(pending))
			}
			ending := c.state.Load() == stateEnding
			pending = pending[n:]
			if ending && len(pending) != 0 {
				t.Fatal("an ending connection left bytes unread")
			}
			c.OnWake()
		}
	})
}
