package latest

import (
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/saguin-edge/saguin/broker/clock"
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
