package queue

import (
	"testing"

	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/codec"
)

// BenchmarkJobCycle is one job's whole cycle on the memory provider with
// one worker: the publish stored, the offer built and handed over, its
// PUBACK (the lease stored), the ack (resolved) and the next offer made at
// once - the engine's hot path, with the mailbox hops to its goroutine.
//
//	go test -run XXX -bench JobCycle -benchmem ./broker/queue/
func BenchmarkJobCycle(b *testing.B) {
	r := newRig(b, opts())
	w := r.worker("w1")
	p := &codec.Publish{QoS: 1, Topic: []byte("work/7/inspect"), Payload: make([]byte, 64)}
	r.e.Publish("producer", p)
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
