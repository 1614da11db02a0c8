package appendch

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker/channel"
	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/store"
)

// A consumer caught up with the channel is handed a new record by the
// publishing call itself: it is on the consumer's connection when Publish
// returns, labelled as its goroutine would label it, and not sent again.
func TestLiveRecordIsOnTheCaughtUpConsumersConnectionWhenPublishReturns(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	e := newEngine(t, memProvider(t, ""), clk, false)
	var cls []*client
	for _, id := range []string{"a", "b"} {
		s := session{id: id}
		cl := newClient(id, 10)
		e.Resume(s, cl, nil)
		e.Subscribe(s, plainSub(1))
		cls = append(cls, cl)
	}
	publish(t, e, "pub", "x")
	for _, cl := range cls {
		select {
		case x := <-cl.got:
			if string(x.m.Payload) != "x" || x.d.Ref.N != 1 || !hasLabel(x, channel.OffsetKey, "1") {
				t.Fatalf("%s got %q at %d, labels %v", cl.id, x.m.Payload, x.d.Ref.N, x.m.Props)
			}
		default:
			t.Fatalf("%s: nothing on its connection when Publish returned", cl.id)
		}
		cl.none(t)
	}
}

// Publishers storing concurrently while consumers with small windows
// acknowledge: whether a record goes by a hand-over or by the consumer's
// goroutine, every consumer gets every offset once, in order.
func TestEveryConsumerGetsEveryRecordOnceInOrderWhicheverSendsIt(t *testing.T) {
	p := memProvider(t, "")
	log, err := p.Append("events", store.ChannelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := New(Options{Name: "events", Filters: []string{"ev/#"}, Log: log, Host: host{clock.Real}})
	if err := e.Restore(); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const publishers, each, consumers = 4, 250, 8
	// Two consumers are there from the start, the others subscribe while
	// the records arrive, replaying into the live stream.
	var wg sync.WaitGroup
	errs := make(chan string, consumers)
	var cls []*client
	consume := func(i int) {
		s := session{id: "c" + strconv.Itoa(i)}
		cl := newClient(s.id, 1+i%3)
		cls = append(cls, cl)
		e.Resume(s, cl, nil)
		e.Subscribe(s, plainSub(1))
		wg.Go(func() {
			for want := uint64(1); want <= publishers*each; want++ {
				x := <-cl.got
				if x.d.Ref.N != want {
					errs <- s.id + ": got offset " + strconv.FormatUint(x.d.Ref.N, 10) + ", want " + strconv.FormatUint(want, 10)
					return
				}
				cl.ack(e, s, x)
			}
		})
	}
	consume(0)
	consume(1)
	var pubs sync.WaitGroup
	for i := range publishers {
		pubs.Go(func() {
			for range each {
				if code, _ := e.Publish("p"+strconv.Itoa(i), &codec.Publish{QoS: 1, Topic: []byte("ev/a"), Payload: []byte("x")}); code != codec.Success {
					errs <- "publish refused"
					return
				}
			}
		})
	}
	for i := 2; i < consumers; i++ {
		consume(i)
	}
	pubs.Wait()
	wg.Wait()
	for _, cl := range cls {
		cl.none(t) // nothing sent twice
	}
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
}

func hasLabel(x delivered, key, value string) bool {
	if x.m.Props == nil {
		return false
	}
	for _, u := range x.m.Props.User {
		if string(u.Key) == key && string(u.Value) == value {
			return true
		}
	}
	return false
}
