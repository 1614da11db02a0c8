package latest

import (
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/memory"
	"github.com/saguin-edge/saguin/store/sqlite"
)

// benchEngine is an engine on a fresh provider of the kind named.
func benchEngine(b *testing.B, kind string) (*Engine, *testHost) {
	b.Helper()
	var p store.Provider
	var err error
	if kind == "sqlite" {
		p, err = sqlite.Open(store.SQLiteOptions{Name: "disk", FilePath: filepath.Join(b.TempDir(), "s.db"), ReadConnections: 2})
	} else {
		p, err = memory.Open(store.MemoryOptions{Name: "mem"})
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	st, err := p.Latest("state", store.ChannelOptions{})
	if err != nil {
		b.Fatal(err)
	}
	h := &testHost{clk: clock.NewFake(epoch), clients: map[string]delivery.Client{}}
	e, err := New(Config{Name: "state", Filters: []string{"state/#"}, Store: st, SessionQueueBytes: 1 << 20,
		Record: testRecord, NewBuilder: func() Builder { return &testBuilder{} }}, h)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return e, h
}

// BenchmarkLatestPublish is the publish path a PUBACK waits for: the value
// stored and handed to the readers' waiting sets (no subscriber here), a
// replacement of one of 100 topics and a first sighting of a new topic.
func BenchmarkLatestPublish(b *testing.B) {
	for _, kind := range []string{"memory", "sqlite"} {
		for _, mode := range []string{"replace", "first"} {
			b.Run(kind+"/"+mode, func(b *testing.B) {
				e, _ := benchEngine(b, kind)
				p := codec.Publish{QoS: 1, Payload: []byte("21.5")}
				topics := make([][]byte, 100)
				for i := range topics {
					topics[i] = []byte("state/dev-" + strconv.Itoa(i))
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if mode == "first" {
						p.Topic = []byte("state/new-" + strconv.Itoa(i))
					} else {
						p.Topic = topics[i%len(topics)]
					}
					if code, _ := e.Publish("pub", &p); code != codec.Success {
						b.Fatal(code)
					}
				}
			})
		}
	}
}

// BenchmarkLatestCatchUp is a state pass of 10,000 values to one connected
// subscriber that takes everything.
func BenchmarkLatestCatchUp(b *testing.B) {
	for _, kind := range []string{"memory", "sqlite"} {
		b.Run(kind, func(b *testing.B) {
			e, h := benchEngine(b, kind)
			for i := 0; i < 10000; i++ {
				e.Publish("pub", &codec.Publish{QoS: 1, Topic: []byte("state/dev-" + strconv.Itoa(i)), Payload: []byte("21.5")})
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				id := "c" + strconv.Itoa(i)
				c := &testClient{id: id, version: 5, window: 1 << 30}
				h.mu.Lock()
				h.clients[id] = c
				h.mu.Unlock()
				e.Subscribe(testSession{id: id}, filterOf("state/#", delivery.SubscribeOptions{QoS: 0}, true, nil))
				for c.count() < 10000 {
					runtime.Gosched()
				}
				e.End(testSession{id: id})
			}
		})
	}
}

// BenchmarkLatestPointRead is a point read's engine part: one topic's
// current value out of 10,000 (the broker's front judges the request and
// writes the reply around it).
func BenchmarkLatestPointRead(b *testing.B) {
	for _, kind := range []string{"memory", "sqlite"} {
		b.Run(kind, func(b *testing.B) {
			e, _ := benchEngine(b, kind)
			topics := make([]string, 10000)
			for i := range topics {
				topics[i] = "state/dev-" + strconv.Itoa(i)
				e.Publish("pub", &codec.Publish{QoS: 1, Topic: []byte(topics[i]), Payload: []byte("21.5")})
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, ok, err := e.Get(topics[i%len(topics)]); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

// BenchmarkLatestResumeAfter10000Changes is issue 12's resumed session: a
// kept QoS 1 subscriber away while 10,000 changes are made to 100 topics,
// then resumed - it is sent the 100 current values only (values/op), and the
// figure is the time from Resume to the last of them handed over.
func BenchmarkLatestResumeAfter10000Changes(b *testing.B) {
	for _, kind := range []string{"memory", "sqlite"} {
		b.Run(kind, func(b *testing.B) {
			e, h := benchEngine(b, kind)
			p := codec.Publish{QoS: 1, Payload: []byte("21.5")}
			topics := make([][]byte, 100)
			for i := range topics {
				topics[i] = []byte("state/dev-" + strconv.Itoa(i))
				p.Topic = topics[i]
				e.Publish("pub", &p)
			}
			s := testSession{id: "c", kept: true}
			first := &testClient{id: "c", version: 5, window: 1 << 30}
			h.mu.Lock()
			h.clients["c"] = first
			h.mu.Unlock()
			e.Subscribe(s, filterOf("state/#", delivery.SubscribeOptions{QoS: 1}, true, nil))
			for first.count() < len(topics) {
				runtime.Gosched()
			}
			var sent int
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				e.Detach(s)
				for k := 0; k < 10000; k++ {
					p.Topic = topics[k%len(topics)]
					e.Publish("pub", &p)
				}
				c := &testClient{id: "c", version: 5, window: 1 << 30}
				b.StartTimer()
				e.Resume(s, c, nil)
				for c.count() < len(topics) {
					runtime.Gosched()
				}
				b.StopTimer()
				sent += c.count()
				// Acknowledged, so the next round's mark is past them all.
				for _, g := range c.take() {
					e.Ack(s, delivery.Ref{Kind: delivery.KindLatest, N: g.offset, Name: "state"}, engine.AckFinished, 0)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(sent)/float64(b.N), "values/op")
		})
	}
}
