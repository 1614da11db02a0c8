package broker

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/sqlite"
)

// sink takes deliveries and keeps nothing, so the benchmark measures the
// broker's side of a publish alone.
type sink struct{ id string }

func (s *sink) ClientID() string                                  { return s.id }
func (s *sink) Version() byte                                     { return codec.Version5 }
func (s *sink) Deliver(*delivery.Message, delivery.Delivery) bool { return true }
func (s *sink) Kick(codec.ReasonCode)                             {}
func (s *sink) CanTake(*delivery.Message, delivery.Delivery) bool { return true }
func (s *sink) Fits(*delivery.Message, delivery.Delivery) bool    { return true }

// benchBroadcast publishes at qos to subs subscribers whose sessions end with
// their connection (the broadcast path: no store is written).
func benchBroadcast(b *testing.B, subs int, qos byte) {
	br := newTestBroker(b, Options{})
	defer br.Close()
	for i := range subs {
		c := &sink{id: fmt.Sprintf("sub-%d", i)}
		br.Connect(c, &netloop.ConnectRequest{Version: 5, ClientID: c.id, CleanStart: true})
		br.Subscribe(c, []byte("fleet/+/temp"), delivery.SubscribeOptions{QoS: 1})
	}
	pub := &sink{id: "pub"}
	br.Connect(pub, &netloop.ConnectRequest{Version: 5, ClientID: pub.id, CleanStart: true})
	p := &codec.Publish{QoS: qos, Topic: []byte("fleet/dev-17/temp"), Payload: []byte("21.5")}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if code, _ := br.Publish(pub, p); code != codec.Success {
			b.Fatal(code)
		}
	}
}

func BenchmarkBroadcastPublishQoS0To1(b *testing.B)      { benchBroadcast(b, 1, 0) }
func BenchmarkBroadcastPublishQoS1To1(b *testing.B)      { benchBroadcast(b, 1, 1) }
func BenchmarkBroadcastPublishQoS1To100(b *testing.B)    { benchBroadcast(b, 100, 1) }
func BenchmarkBroadcastPublishNoSubscriber(b *testing.B) { benchBroadcast(b, 0, 1) }

// ackSink remembers the Ref of the last delivery, for the benchmark
// to acknowledge as a client keeping up would.
type ackSink struct {
	id   string
	last delivery.Ref
}

func (s *ackSink) ClientID() string { return s.id }
func (s *ackSink) Version() byte    { return codec.Version5 }
func (s *ackSink) Deliver(_ *delivery.Message, d delivery.Delivery) bool {
	s.last = d.Ref
	return true
}
func (s *ackSink) Kick(codec.ReasonCode)                             {}
func (s *ackSink) CanTake(*delivery.Message, delivery.Delivery) bool { return true }
func (s *ackSink) Fits(*delivery.Message, delivery.Delivery) bool    { return true }

// benchDurable is a QoS 1 broadcast to one connected session that outlives
// its connection, acknowledged at once: one log write per publish, released
// at the next commit.
func benchDurable(b *testing.B, o Options) {
	br := newTestBroker(b, o)
	defer br.Close()
	c := &ackSink{id: "durable"}
	br.Connect(c, &netloop.ConnectRequest{Version: 5, ClientID: c.id, CleanStart: true, SessionExpiry: 3600})
	br.Subscribe(c, []byte("fleet/#"), delivery.SubscribeOptions{QoS: 1})
	pub := &sink{id: "pub"}
	br.Connect(pub, &netloop.ConnectRequest{Version: 5, ClientID: pub.id, CleanStart: true})
	p := &codec.Publish{QoS: 1, Topic: []byte("fleet/dev-17/temp"), Payload: []byte("21.5")}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if code, _ := br.Publish(pub, p); code != codec.Success {
			b.Fatal(code)
		}
		br.Acked(c, c.last)
	}
}

// BenchmarkDurablePublishQoS1To1 is benchDurable on the broker's own memory store.
func BenchmarkDurablePublishQoS1To1(b *testing.B) { benchDurable(b, Options{}) }

// BenchmarkDurablePublishQoS1To1SQLite is benchDurable on a sqlite provider:
// each publish waits for its group commit, as a PUBACK does.
func BenchmarkDurablePublishQoS1To1SQLite(b *testing.B) {
	p, err := sqlite.Open(store.SQLiteOptions{Name: "bench", FilePath: filepath.Join(b.TempDir(), "bench.db"), ReadConnections: 2,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ss, err := p.Sessions()
	if err != nil {
		b.Fatal(err)
	}
	r, err := p.Retained(0)
	if err != nil {
		b.Fatal(err)
	}
	benchDurable(b, Options{Sessions: ss, Retained: r})
}
