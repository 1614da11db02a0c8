package queue

import (
	"path/filepath"
	"testing"

	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/sqlite"
)

// BenchmarkJobCycle is one job's whole cycle with one worker: the publish
// stored, the offer built and handed over, its PUBACK (the lease stored),
// the ack (resolved) and the next offer made at once - the engine's hot
// path, with the mailbox hops to its goroutine - on the memory provider and
// on sqlite, each with 64 jobs waiting behind the one out (the bench/
// harness's backlog).
//
//	go test -run XXX -bench JobCycle -benchmem ./broker/queue/
func BenchmarkJobCycle(b *testing.B) {
	b.Run("memory", func(b *testing.B) { jobCycle(b, newRig(b, opts())) })
	b.Run("sqlite", func(b *testing.B) {
		p, err := sqlite.Open(store.SQLiteOptions{Name: "disk", FilePath: filepath.Join(b.TempDir(), "q.db")})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = p.Close() })
		q, err := p.Queue("jobs", store.QueueOptions{})
		if err != nil {
			b.Fatal(err)
		}
		jobCycle(b, startRig(b, q, opts()))
	})
}

func jobCycle(b *testing.B, r *rig) {
	const backlog = 64
	w := r.worker("w1")
	p := &codec.Publish{QoS: 1, Topic: []byte("work/7/inspect"), Payload: make([]byte, 128)}
	for range backlog {
		r.e.Publish("producer", p)
	}
	r.tick()
	ans := &codec.Publish{QoS: 1, Topic: []byte(r.e.ResponseTopic()), Payload: []byte("ack")}
	ans.Properties.Present.Set(codec.PropCorrelationData)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.e.Publish("producer", p)
		w.mu.Lock()
		o := w.got[len(w.got)-1]
		w.got = w.got[:0]
		w.mu.Unlock()
		r.e.Ack(sess("w1"), o.d.Ref, engine.AckFinished, 0)
		ans.Properties.CorrelationData = o.m.Props.CorrelationData
		r.e.Publish("w1", ans)
		r.e.sync()
	}
	b.StopTimer()
	_ = r.e.Close()
}
