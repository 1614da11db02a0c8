package netloop_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker"
	"github.com/saguin-edge/saguin/broker/brokertest"
	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/broker/queue"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/memory"
)

// lockedBuffer is a log written by the broker's goroutines and read by the
// test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// TestQueuePubackReopeningAFullWindowOffersWithoutATick (checklist C4.5):
// a worker with Receive Maximum 1 holds a broadcast delivery; the offer
// tick passes it over; its PUBACK of that broadcast delivery has netloop
// tell the broker the window reopened, and the job is offered with the
// clock standing still.
func TestQueuePubackReopeningAFullWindowOffersWithoutATick(t *testing.T) {
	clk := clock.NewFake(fakeStart)
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sessions, retained := brokertest.Stores(t, 0)
	b, err := broker.New(broker.Options{Sessions: sessions, Retained: retained, Clock: clk, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	p, err := memory.Open(store.MemoryOptions{Name: "mem"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	jobs, err := p.Queue("jobs", store.QueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := queue.New(queue.Options{Name: "jobs", Filters: []string{"work/+/inspect"}, Store: jobs, Host: b.Host("jobs"), VisibilityTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Plug(e); err != nil {
		t.Fatal(err)
	}
	if err := b.Restore(); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, netloop.Options{Handler: b, Clock: clk})
	clk.WaitArmed(2) // the broker's commit ticker and the queue's offer tick

	w := dial(t, s, codec.Version5)
	w.connect("worker", func(c *codec.Connect) {
		c.Properties.ReceiveMaximum = 1
		c.Properties.Present.Set(codec.PropReceiveMaximum)
	})
	w.subscribe(1, "news", 1)
	w.subscribe(2, "$saguin/queue/jobs", 1)
	pub := dial(t, s, codec.Version5)
	pub.connect("producer", nil)
	pub.publish("news", "n", 1, 1)
	pub.expectAck(codec.TypePuback, 1)
	news := w.expectPublish() // its one window place, not acknowledged yet
	pub.publish("work/1/inspect", "job", 1, 2)
	pub.expectAck(codec.TypePuback, 2)

	clk.Advance(queue.Tick)
	waitFor(t, "the tick passing the full window over", func() bool { return logs.count("queue: passed over a full window") == 1 })
	w.send((&codec.Ack{Type: codec.TypePuback, PacketID: news.PacketID}).Append(nil, codec.Version5))
	if o := w.expectPublish(); string(o.Payload) != "job" { // the clock has not moved since the tick
		t.Fatalf("offered %q, want the job", o.Payload)
	}
}
