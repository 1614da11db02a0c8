package netloop_test

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker"
	"github.com/saguin-edge/saguin/codec"
)

// BenchmarkKeptSubscriberAckToNextDeliverySQLite is the latency a QoS 1
// subscriber of a kept session (Session Expiry 1 h) on sqlite sees from
// writing a PUBACK to reading the next PUBLISH, while 32 publishers commit
// QoS 1 publishes to its topic as fast as they are answered. The broker's
// session_queue_bytes is small enough that the subscriber holds one delivery
// at a time: every PUBACK makes the room the next delivery waits for, so the
// next one is handed over by the acknowledgement (backlog.pump), never live.
// An op is one PUBACK followed by its next delivery; ack-p50/ack-p99 are
// that gap in microseconds.
func BenchmarkKeptSubscriberAckToNextDeliverySQLite(b *testing.B) {
	_, addr := serveSQLite(b, broker.Options{SessionsWaitOnDisk: true, RetainedWaitOnDisk: true, SessionQueueBytes: 4 << 10})

	sub := benchConnectWith(b, addr, &codec.Connect{Version: codec.Version5, ClientID: []byte("kept-sub"),
		Properties: codec.Properties{SessionExpiry: 3600, Present: 1 << codec.PropSessionExpiry}})
	sub.subscribe(b, "kept/#", 1)

	// 1,500-byte payloads against a 4 KiB bound: half of it (what the
	// connection may hold unacknowledged) takes one message.
	payload := make([]byte, 1500)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i := range 32 {
		pub := benchConnect(b, addr, "kept-pub-"+string(rune('a'+i/26))+string(rune('a'+i%26)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			pkt := &codec.Publish{QoS: 1, Topic: []byte("kept/x"), Payload: payload}
			var out, buf []byte
			for id := uint16(1); !stop.Load(); id++ {
				if id == 0 {
					id = 1
				}
				pkt.PacketID = id
				out = pkt.Append(out[:0], codec.Version5)
				if _, err := pub.nc.Write(out); err != nil {
					return
				}
				var t codec.Type
				var err error
				if t, buf, err = pub.readPacket(buf); err != nil || t != codec.TypePuback {
					return
				}
			}
		}()
	}
	b.Cleanup(func() {
		stop.Store(true)
		wg.Wait()
	})

	gaps := make([]time.Duration, 0, b.N)
	var buf []byte
	var ackedAt time.Time
	b.ResetTimer()
	for len(gaps) < b.N {
		t, body, err := sub.readPacket(buf)
		buf = body
		if err != nil {
			b.Fatal(err)
		}
		if t != codec.TypePublish || len(body) < 2 {
			continue
		}
		if !ackedAt.IsZero() {
			gaps = append(gaps, time.Since(ackedAt))
		}
		tl := int(body[0])<<8 | int(body[1])
		id := body[2+tl : 4+tl]
		ackedAt = time.Now()
		if _, err := sub.nc.Write([]byte{0x40, 2, id[0], id[1]}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	slices.Sort(gaps)
	b.ReportMetric(float64(gaps[len(gaps)/2].Microseconds()), "ack-p50-us")
	b.ReportMetric(float64(gaps[len(gaps)*99/100].Microseconds()), "ack-p99-us")
}
