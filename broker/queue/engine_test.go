package queue

import (
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker/acl"
	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/memory"
	"github.com/saguin-edge/saguin/store/sqlite"
)

var t0 = time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)

type fakeHost struct {
	clk     *clock.Fake
	mu      sync.Mutex
	clients map[string]*fakeClient
	denied  map[string]bool // client ids the acl_file refuses consume
	// only narrows a client id's consume to the topics with this prefix, as
	// a channel rule's filter: does.
	only    map[string]string
	regrant []func() // what the engine asked to be told at a re-read
}

func (h *fakeHost) Allows(id, t string, verb acl.Verb) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p, ok := h.only[id]; ok && verb == acl.Consume && !strings.HasPrefix(t, p) {
		return false
	}
	return verb != acl.Consume || !h.denied[id]
}
func (h *fakeHost) OnGrantsChanged(f func()) {
	h.mu.Lock()
	h.regrant = append(h.regrant, f)
	h.mu.Unlock()
}
func (h *fakeHost) WithRoom(_, _ string, write func() error) error { return write() }

// reread is a SIGUSR1 that made new grants: what the engines registered is
// called.
func (h *fakeHost) reread() {
	h.mu.Lock()
	fs := append([]func(){}, h.regrant...)
	h.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

func (h *fakeHost) Clock() clock.Clock   { return h.clk }
func (h *fakeHost) Logger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
func (h *fakeHost) CheckTopic([]byte) (codec.ReasonCode, string) {
	return codec.Success, ""
}
func (h *fakeHost) Client(id string) delivery.Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c := h.clients[id]; c != nil {
		return c
	}
	return nil
}

type offer struct {
	m *delivery.Message
	d delivery.Delivery
}

type fakeClient struct {
	id      string
	version byte
	maxSize int // 0: none
	window  int // 0: none
	mu      sync.Mutex
	got     []offer
	unacked int
	kicked  codec.ReasonCode
	fail    int // Deliver calls still to fail, as a connection closing before the write
}

func (c *fakeClient) ClientID() string { return c.id }
func (c *fakeClient) Version() byte    { return c.version }
func (c *fakeClient) Deliver(m *delivery.Message, d delivery.Delivery) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail > 0 {
		c.fail--
		return false
	}
	c.got = append(c.got, offer{m, d})
	c.unacked++
	return true
}
func (c *fakeClient) CanTake(m *delivery.Message, d delivery.Delivery) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.fitsLocked(m) {
		return false
	}
	return d.QoS == 0 || c.window == 0 || c.unacked < c.window
}
func (c *fakeClient) Fits(m *delivery.Message, _ delivery.Delivery) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fitsLocked(m)
}
func (c *fakeClient) fitsLocked(m *delivery.Message) bool {
	return c.maxSize == 0 || m.Bytes() <= c.maxSize
}
func (c *fakeClient) Kick(r codec.ReasonCode) {
	c.mu.Lock()
	c.kicked = r
	c.mu.Unlock()
}
func (c *fakeClient) offers() []offer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]offer(nil), c.got...)
}
func (c *fakeClient) last(t testing.TB) offer {
	t.Helper()
	o := c.offers()
	if len(o) == 0 {
		t.Fatalf("%s was offered nothing", c.id)
	}
	return o[len(o)-1]
}

type sess string

func (s sess) ClientID() string { return string(s) }
func (s sess) Kept() bool       { return false }
func (s sess) Restoring() bool  { return false }

type rig struct {
	t    testing.TB
	host *fakeHost
	q    store.Queue
	e    *Engine
}

func newRig(t testing.TB, o Options) *rig {
	return newRigBounded(t, o, 0)
}

func newRigBounded(t testing.TB, o Options, maxBytes int64) *rig {
	t.Helper()
	p, err := memory.Open(store.MemoryOptions{Name: "mem"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	q, err := p.Queue("jobs", store.QueueOptions{MaxBytes: maxBytes})
	if err != nil {
		t.Fatal(err)
	}
	return startRig(t, q, o)
}

func startRig(t testing.TB, q store.Queue, o Options) *rig {
	t.Helper()
	h := &fakeHost{clk: clock.NewFake(t0), clients: map[string]*fakeClient{}, denied: map[string]bool{}, only: map[string]string{}}
	o.Name, o.Store, o.Host = "jobs", q, h
	if o.Filters == nil {
		o.Filters = []string{"work/+/inspect"}
	}
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Restore(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	h.clk.WaitArmed(1) // the offer tick
	return &rig{t: t, host: h, q: q, e: e}
}

func opts() Options { return Options{VisibilityTimeout: 30 * time.Second, MaxAttempts: 5} }

func (r *rig) worker(id string) *fakeClient {
	c := &fakeClient{id: id, version: codec.Version5}
	r.host.mu.Lock()
	r.host.clients[id] = c
	r.host.mu.Unlock()
	code, _ := r.e.Subscribe(sess(id), engine.Filter{Filter: r.e.Form(), Inner: r.e.Form(), Options: delivery.SubscribeOptions{QoS: 1}})
	if code != codec.GrantedQoS1 {
		r.t.Fatalf("the form was answered %v", code)
	}
	r.e.sync()
	return c
}

func (r *rig) gone(id string) {
	r.host.mu.Lock()
	delete(r.host.clients, id)
	r.host.mu.Unlock()
	r.e.Detach(sess(id))
	r.e.sync()
}

func (r *rig) publish(topic, payload string, mut ...func(*codec.Publish)) codec.ReasonCode {
	p := &codec.Publish{QoS: 1, Topic: []byte(topic), Payload: []byte(payload)}
	for _, f := range mut {
		f(p)
	}
	code, _ := r.e.Publish("producer", p)
	return code
}

// leased publishes one job, offers it to w and acknowledges the offer's
// PUBLISH: the job is w's, its visibility timeout running.
func (r *rig) leased(w *fakeClient) offer {
	r.publish("work/7/inspect", "x")
	r.tick()
	o := w.last(r.t)
	r.puback(w, o)
	return o
}

// deny sets whether the host's ACL refuses id the consume verb.
func (r *rig) deny(id string, denied bool) {
	r.host.mu.Lock()
	r.host.denied[id] = denied
	r.host.mu.Unlock()
}

// tick advances the clock by one offer tick and waits for the engine.
func (r *rig) tick() { r.advance(Tick) }

func (r *rig) advance(d time.Duration) {
	r.host.clk.Advance(d)
	r.e.sync()
}

func (r *rig) puback(c *fakeClient, o offer) {
	c.mu.Lock()
	c.unacked--
	c.mu.Unlock()
	r.e.Ack(sess(c.id), o.d.Ref, engine.AckFinished, 0)
	r.e.sync()
}

func (r *rig) answer(from string, o offer, payload string) {
	p := &codec.Publish{QoS: 1, Topic: []byte(r.e.ResponseTopic()), Payload: []byte(payload)}
	p.Properties.CorrelationData = o.m.Props.CorrelationData
	p.Properties.Present.Set(codec.PropCorrelationData)
	if code, _ := r.e.Publish(from, p); code != codec.Success {
		r.t.Fatalf("an answer's PUBACK was %v, want 0x00 whatever it says", code)
	}
	r.e.sync()
}

func user(o offer, key string) (string, bool) {
	if o.m.Props == nil {
		return "", false
	}
	for _, u := range o.m.Props.User {
		if string(u.Key) == key {
			return string(u.Value), true
		}
	}
	return "", false
}

func attempt(t *testing.T, o offer) int {
	t.Helper()
	v, ok := user(o, AttemptKey)
	if !ok {
		t.Fatal("the offer carries no saguin-attempt")
	}
	n, _ := strconv.Atoi(v)
	return n
}

func TestOfferIsQoS1OnTheJobsTopicWithResponseTopicDeliveryIDAndLabels(t *testing.T) {
	r := newRig(t, opts())
	w := r.worker("w1")
	r.publish("work/7/inspect", "do it", func(p *codec.Publish) {
		p.Properties.User = []codec.UserProperty{{Key: []byte("k"), Value: []byte("v")}}
		p.Properties.ResponseTopic = []byte("publisher/reply")
		p.Properties.CorrelationData = []byte("publisher-corr")
		p.Properties.Present.Set(codec.PropUserProperty)
		p.Properties.Present.Set(codec.PropResponseTopic)
		p.Properties.Present.Set(codec.PropCorrelationData)
	})
	r.tick()
	o := w.last(t)
	if o.d.QoS != 1 || string(o.m.Topic) != "work/7/inspect" || string(o.m.Payload) != "do it" {
		t.Fatalf("offer QoS %d topic %q payload %q", o.d.QoS, o.m.Topic, o.m.Payload)
	}
	if got := string(o.m.Props.ResponseTopic); got != "$saguin/queue/jobs/response" {
		t.Fatalf("Response Topic %q", got)
	}
	if n := len(o.m.Props.CorrelationData); n == 0 || n > 32 || string(o.m.Props.CorrelationData) == "publisher-corr" {
		t.Fatalf("Correlation Data %q is not a Delivery ID of at most 32 bytes", o.m.Props.CorrelationData)
	}
	for _, k := range []string{"k", "saguin-id", "saguin-offset", "saguin-timestamp"} {
		if _, ok := user(o, k); !ok {
			t.Fatalf("the offer lacks %s", k)
		}
	}
	for _, k := range []string{"saguin-channel", "saguin-expires"} {
		if _, ok := user(o, k); ok {
			t.Fatalf("the offer carries %s", k)
		}
	}
	if attempt(t, o) != 1 {
		t.Fatal("the first offer is not attempt 1")
	}
}

func TestOfferCarriesSaguinExpiresOnlyWhenThePublisherSetAnExpiry(t *testing.T) {
	r := newRig(t, opts())
	w := r.worker("w1")
	r.publish("work/7/inspect", "x", func(p *codec.Publish) {
		p.Properties.MessageExpiry = 1
		p.Properties.Present.Set(codec.PropMessageExpiry)
	})
	r.advance(5 * time.Second) // the expiry ran out: still offered (C8.5)
	if _, ok := user(w.last(t), "saguin-expires"); !ok {
		t.Fatal("an offer of a job with a publisher expiry lacks saguin-expires")
	}
}

func TestDeliveryIDIsUniquePerAttempt(t *testing.T) {
	r := newRig(t, opts())
	w := r.worker("w1")
	first := r.leased(w)
	r.answer("w1", first, "return")
	second := w.last(t)
	if string(first.m.Props.CorrelationData) == string(second.m.Props.CorrelationData) {
		t.Fatal("two attempts carried one Delivery ID")
	}
	if attempt(t, second) != 2 {
		t.Fatalf("attempt %d after one return", attempt(t, second))
	}
}

func TestOneJobPerWorkerWhateverItsWindowAndNextAtOnceAfterAnAnswer(t *testing.T) {
	r := newRig(t, opts())
	w := r.worker("w1")
	for i := 0; i < 3; i++ {
		r.publish("work/7/inspect", "x")
	}
	r.tick()
	r.tick()
	if n := len(w.offers()); n != 1 {
		t.Fatalf("a worker holding a job was offered %d", n)
	}
	o := w.last(t)
	r.puback(w, o)
	if n := len(w.offers()); n != 1 {
		t.Fatalf("a PUBACK offered more: %d", n)
	}
	r.answer("w1", o, "ack") // no tick: the next offer is immediate
	if n := len(w.offers()); n != 2 {
		t.Fatalf("after an ack the worker was offered %d, want its next job at once", n)
	}
}

// settleCounter is a queue store that tells the test of each Settle and
// holds the first until released.
type settleCounter struct {
	store.Queue
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
	sizes   [][2]int // leases, resolutions of each Settle
}

func (s *settleCounter) Settle(l []store.LeaseOf, r []store.Delivery) ([]store.Job, []error) {
	s.mu.Lock()
	first := len(s.sizes) == 0
	s.sizes = append(s.sizes, [2]int{len(l), len(r)})
	s.mu.Unlock()
	if first {
		s.entered <- struct{}{}
		<-s.release
	}
	return s.Queue.Settle(l, r)
}

// TestAnswersHeardTogetherAreStoredInOneSettle: the PUBACKs and acks of
// several workers that reach the queue's goroutine while it is storing go to
// the store in one Settle (one commit on sqlite), leases then resolutions,
// and each worker is offered its next job after it.
func TestAnswersHeardTogetherAreStoredInOneSettle(t *testing.T) {
	p, err := memory.Open(store.MemoryOptions{Name: "mem"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	q, err := p.Queue("jobs", store.QueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc := &settleCounter{Queue: q, entered: make(chan struct{}), release: make(chan struct{})}
	r := startRig(t, sc, opts())
	ws := []*fakeClient{r.worker("a"), r.worker("b"), r.worker("c"), r.worker("d")}
	for i := 0; i < 8; i++ {
		r.publish("work/7/inspect", strconv.Itoa(i))
	}
	r.tick()
	first := ws[0].last(t)
	r.e.Ack(sess("a"), first.d.Ref, engine.AckFinished, 0) // the goroutine stores it, and is held there
	<-sc.entered
	for _, w := range ws[1:] {
		o := w.last(t)
		r.e.Ack(sess(w.id), o.d.Ref, engine.AckFinished, 0)
		p := &codec.Publish{QoS: 1, Topic: []byte(r.e.ResponseTopic()), Payload: []byte("ack")}
		p.Properties.CorrelationData = o.m.Props.CorrelationData
		p.Properties.Present.Set(codec.PropCorrelationData)
		r.e.Publish(w.id, p)
	}
	close(sc.release)
	r.e.sync()
	sc.mu.Lock()
	sizes := append([][2]int(nil), sc.sizes...)
	sc.mu.Unlock()
	if len(sizes) != 2 || sizes[0] != [2]int{1, 0} || sizes[1] != [2]int{3, 3} {
		t.Fatalf("Settles %v, want [[1 0] [3 3]]: a's lease, then the three others' leases and acks together", sizes)
	}
	for _, w := range ws[1:] {
		if n := len(w.offers()); n != 2 {
			t.Errorf("%s was offered %d, want its next job after the Settle", w.id, n)
		}
	}
}

func TestWorkerChosenRoundRobin(t *testing.T) {
	r := newRig(t, opts())
	a, b := r.worker("a"), r.worker("b")
	for i := 0; i < 2; i++ {
		r.publish("work/7/inspect", "x")
	}
	r.tick()
	if len(a.offers()) != 1 || len(b.offers()) != 1 {
		t.Fatalf("two jobs went a:%d b:%d", len(a.offers()), len(b.offers()))
	}
}

func TestFullWindowPassedOverLikeAHeldJob(t *testing.T) {
	r := newRig(t, opts())
	a := r.worker("a")
	a.window = 1
	a.unacked = 1 // something of broadcast's fills its one slot
	b := r.worker("b")
	r.publish("work/7/inspect", "x")
	r.tick()
	if len(a.offers()) != 0 || len(b.offers()) != 1 {
		t.Fatalf("a full window was offered: a:%d b:%d", len(a.offers()), len(b.offers()))
	}
}

// settleOther is a PUBACK of another engine's delivery to c: a place back
// in its window, told to the engine as netloop's settle tells the broker.
func (r *rig) settleOther(c *fakeClient) {
	c.mu.Lock()
	c.unacked--
	c.mu.Unlock()
	r.e.Room(c.id)
	r.e.sync()
}

// TestPubackReopeningAFullWindowOffersAtOnce (checklist C4.5): a worker
// passed over for a window full of another engine's delivery is offered
// its job by the PUBACK that reopens it, the clock standing still.
func TestPubackReopeningAFullWindowOffersAtOnce(t *testing.T) {
	r := newRig(t, opts())
	w := r.worker("w1")
	w.window = 1
	w.unacked = 1 // a broadcast delivery fills its one slot
	r.publish("work/7/inspect", "x")
	r.tick()
	if n := len(w.offers()); n != 0 {
		t.Fatalf("a full window was offered %d", n)
	}
	r.settleOther(w) // no tick
	if n := len(w.offers()); n != 1 {
		t.Fatalf("after the PUBACK reopening its window the worker was offered %d, want its job at once", n)
	}
}

func TestNoTimerWhileDelivering(t *testing.T) {
	r := newRig(t, opts())
	w := r.worker("w1")
	r.publish("work/7/inspect", "x")
	r.tick()
	r.advance(10 * time.Minute) // no PUBACK: a job in progress, never timed out
	if n := len(w.offers()); n != 1 {
		t.Fatalf("a delivering job was offered %d times", n)
	}
	if st, _, _ := r.q.State(w.last(t).d.Ref.N); st != store.JobDelivering {
		t.Fatalf("state %v, want delivering", st)
	}
}

func TestVisibilityTimeoutStartsAtThePuback(t *testing.T) {
	r := newRig(t, opts())
	w := r.worker("w1")
	r.publish("work/7/inspect", "x")
	r.tick()
	r.advance(20 * time.Second)
	r.puback(w, w.last(t))
	r.advance(29 * time.Second) // 49 s after the send, 29 after the PUBACK
	if n := len(w.offers()); n != 1 {
		t.Fatalf("timed out before the visibility timeout from the PUBACK: %d offers", n)
	}
	r.advance(time.Second + Tick)
	if n := len(w.offers()); n != 2 || attempt(t, w.last(t)) != 2 {
		t.Fatalf("after the timeout: %d offers", n)
	}
}

func TestAttemptSpentOnceAtThePubackOrTheAnswerWhicheverFirst(t *testing.T) {
	r := newRig(t, opts())
	w := r.worker("w1")
	r.publish("work/7/inspect", "x")
	r.tick()
	o := w.last(t)
	r.answer("w1", o, "return") // before its PUBACK
	r.puback(w, o)              // the late PUBACK names a dead delivery
	r.tick()
	if got := attempt(t, w.last(t)); got != 2 {
		t.Fatalf("attempt %d, want 2: the answer spent one, the PUBACK after it none", got)
	}
}

func TestDisconnectBeforePubackGivesTheJobBackUnspent(t *testing.T) {
	r := newRig(t, opts())
	a := r.worker("a")
	r.publish("work/7/inspect", "x")
	r.tick()
	r.gone("a")
	b := r.worker("b")
	r.tick()
	if attempt(t, b.last(t)) != 1 {
		t.Fatal("a job never received spent an attempt")
	}
	if r.e.C.Delivered.Load() != 0 {
		t.Fatal("a job never received was counted delivered")
	}
	_ = a
}

func TestWorkerGoneReturnsItsLeasedJobAtOnce(t *testing.T) {
	r := newRig(t, opts())
	a := r.worker("a")
	r.leased(a)
	r.gone("a")
	if st, _, _ := r.q.State(a.last(t).d.Ref.N); st != store.JobAvailable {
		t.Fatalf("state %v after the worker left, want available", st)
	}
	b := r.worker("b")
	r.tick()
	if attempt(t, b.last(t)) != 2 || r.e.C.Redelivered.Load() != 1 {
		t.Fatalf("attempt %d redelivered %d", attempt(t, b.last(t)), r.e.C.Redelivered.Load())
	}
}

func TestStaleDeliveryIDResolvesNothing(t *testing.T) {
	r := newRig(t, opts())
	w := r.worker("w1")
	old := r.leased(w)
	r.advance(30*time.Second + Tick) // timed out and offered again
	r.answer("w1", old, "ack")
	if r.q.Depth() != 1 || r.e.C.Acknowledged.Load() != 0 || r.e.C.Ignored.Load() != 1 {
		t.Fatalf("a superseded ack applied: depth %d acked %d", r.q.Depth(), r.e.C.Acknowledged.Load())
	}
	cur := w.last(t)
	r.answer("w1", cur, "ack")
	if r.q.Depth() != 0 {
		t.Fatal("the current ack did not resolve the job")
	}
}

func TestAnswerFromAnotherSessionIgnored(t *testing.T) {
	r := newRig(t, opts())
	w := r.worker("w1")
	o := r.leased(w)
	r.answer("mosquitto_pub", o, "ack")
	if r.q.Depth() != 1 || r.e.C.Ignored.Load() != 1 {
		t.Fatal("an ack from another session resolved the job")
	}
}

func TestAnswerWithAnotherPayloadIgnored(t *testing.T) {
	r := newRig(t, opts())
	w := r.worker("w1")
	o := r.leased(w)
	r.answer("w1", o, "ACK")
	if r.q.Depth() != 1 || r.e.C.Ignored.Load() != 1 {
		t.Fatal("a payload other than ack resolved the job")
	}
}

func TestPubackNeverResolves(t *testing.T) {
	r := newRig(t, opts())
	w := r.worker("w1")
	r.leased(w)
	if r.q.Depth() != 1 {
		t.Fatal("a PUBACK resolved the job (invariant 6)")
	}
}

func returns(t *testing.T, r *rig, w *fakeClient, gaps []time.Duration) {
	t.Helper()
	for i, gap := range gaps {
		o := w.last(t)
		r.puback(w, o)
		n := len(w.offers())
		r.answer(w.id, o, "return")
		if gap > 0 {
			r.advance(gap - Tick)
			if len(w.offers()) != n {
				t.Fatalf("return %d: offered inside its gap of %v", i+1, gap)
			}
			r.advance(2 * Tick)
		} else {
			r.tick()
		}
		if len(w.offers()) != n+1 {
			t.Fatalf("return %d: not offered after its gap of %v", i+1, gap)
		}
	}
}

func TestBackoffNoneOffersAtTheNextTick(t *testing.T) {
	r := newRig(t, opts())
	w := r.worker("w1")
	r.publish("work/7/inspect", "x")
	r.tick()
	returns(t, r, w, []time.Duration{0, 0, 0})
}

func TestBackoffLinear(t *testing.T) {
	o := opts()
	o.Backoff, o.BackoffBase = BackoffLinear, 2*time.Second
	r := newRig(t, o)
	w := r.worker("w1")
	r.publish("work/7/inspect", "x")
	r.tick()
	returns(t, r, w, []time.Duration{2 * time.Second, 4 * time.Second, 6 * time.Second})
}

func TestBackoffExponential(t *testing.T) {
	o := opts()
	o.Backoff, o.BackoffBase = BackoffExponential, 2*time.Second
	r := newRig(t, o)
	w := r.worker("w1")
	r.publish("work/7/inspect", "x")
	r.tick()
	returns(t, r, w, []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second})
}

func TestBackoffGapAlreadyServedOnTimeout(t *testing.T) {
	o := opts()
	o.Backoff, o.BackoffBase = BackoffLinear, 5*time.Second
	r := newRig(t, o)
	w := r.worker("w1")
	r.leased(w)
	r.advance(30*time.Second + Tick) // held 30 s > the 5 s gap: served
	if len(w.offers()) != 2 {
		t.Fatal("a timed-out job waited a gap it had already served while held")
	}
}

func dlq(t *testing.T, r *rig) []store.Record {
	t.Helper()
	w, err := r.q.DeadLetters().ReadFrom(1, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	return w.Records
}

func header(rec store.Record, k string) string {
	for _, h := range rec.Headers {
		if h.Key == k {
			return h.Value
		}
	}
	return ""
}

func TestAttemptsExhaustedDeadLettersWithItsHeaders(t *testing.T) {
	o := opts()
	o.MaxAttempts = 2
	r := newRig(t, o)
	w := r.worker("w1")
	r.publish("work/7/inspect", "x", func(p *codec.Publish) {
		p.Properties.ResponseTopic = []byte("publisher/reply")
		p.Properties.Present.Set(codec.PropResponseTopic)
	})
	r.tick()
	for i := 0; i < 2; i++ {
		o := w.last(t)
		r.puback(w, o)
		r.answer("w1", o, "return")
		r.tick()
	}
	d := dlq(t, r)
	if len(d) != 1 || r.q.Depth() != 0 {
		t.Fatalf("dead letters %d, depth %d", len(d), r.q.Depth())
	}
	rec := d[0]
	if rec.Topic != "work/7/inspect/__dlq" {
		t.Fatalf("dead letter topic %q", rec.Topic)
	}
	want := map[string]string{"saguin-dlq-channel": "jobs", "saguin-dlq-offset": "1", "saguin-dlq-attempts": "2", "saguin-dlq-reason": "attempts_exhausted"}
	for k, v := range want {
		if got := header(rec, k); got != v {
			t.Fatalf("%s = %q, want %q", k, got, v)
		}
	}
	for _, k := range []string{"saguin-dlq-first", "saguin-dlq-last", "saguin-dlq-at"} {
		if header(rec, k) == "" {
			t.Fatalf("dead letter lacks %s", k)
		}
	}
	if len(rec.Props) == 0 {
		t.Fatal("the publisher's Response Topic was not carried into the dead letter")
	}
	if r.e.C.DeadLettered.Load() != 1 || r.e.C.Returned.Load() != 1 {
		t.Fatalf("a return spending the last attempt counts dead_lettered: returned %d dead %d", r.e.C.Returned.Load(), r.e.C.DeadLettered.Load())
	}
	if len(w.offers()) != 2 {
		t.Fatal("a dead-lettered job was offered again")
	}
}

func TestDeadLetterLevelInsertedBeforeHash(t *testing.T) {
	o := opts()
	o.Filters, o.MaxAttempts = []string{"jobs/#"}, 1
	r := newRig(t, o)
	w := r.worker("w1")
	r.publish("jobs/a/b", "x")
	r.tick()
	r.answer("w1", w.last(t), "return")
	if d := dlq(t, r); len(d) != 1 || d[0].Topic != "jobs/__dlq/a/b" {
		t.Fatalf("dead letters %+v", d)
	}
}

func TestExpiredJobDeadLetteredBySweepWithNoAttemptSpent(t *testing.T) {
	o := opts()
	o.JobExpiresAfter = time.Minute
	r := newRig(t, o)
	r.publish("work/7/inspect", "x")
	r.advance(time.Minute + Tick) // no worker: the sweep moves it
	d := dlq(t, r)
	if len(d) != 1 || header(d[0], "saguin-dlq-reason") != "expired" || header(d[0], "saguin-dlq-attempts") != "0" {
		t.Fatalf("dead letters %+v", d)
	}
	if r.e.C.Expired.Load() != 1 || r.e.C.DeadLettered.Load() != 1 {
		t.Fatal("the expiry was not counted")
	}
}

func TestExpiredJobOutWithAWorkerExpiresWhenHandedBack(t *testing.T) {
	o := opts()
	o.JobExpiresAfter, o.VisibilityTimeout = time.Minute, 50*time.Second
	r := newRig(t, o)
	w := r.worker("w1")
	r.leased(w)
	r.advance(45 * time.Second)
	if len(dlq(t, r)) != 0 {
		t.Fatal("the sweep touched a job out with a worker")
	}
	r.advance(30 * time.Second) // timed out at 50 s, before the expiry: offered again
	if len(dlq(t, r)) != 0 || len(w.offers()) != 2 {
		t.Fatal("a job handed back before its expiry was not offered again")
	}
	r.puback(w, w.last(t))
	r.advance(time.Minute) // this lease times out past the expiry
	if d := dlq(t, r); len(d) != 1 || header(d[0], "saguin-dlq-reason") != "expired" {
		t.Fatalf("dead letters %+v", d)
	}
}

func TestPublisherExpiryNeverRemovesAJob(t *testing.T) {
	r := newRig(t, opts())
	r.publish("work/7/inspect", "x", func(p *codec.Publish) {
		p.Properties.MessageExpiry = 1
		p.Properties.Present.Set(codec.PropMessageExpiry)
	})
	r.advance(time.Hour)
	if r.q.Depth() != 1 {
		t.Fatal("a publisher's Message Expiry removed a job")
	}
}

func TestRetainOnAQueuePublishDroppedAndCounted(t *testing.T) {
	r := newRig(t, opts())
	w := r.worker("w1")
	if code := r.publish("work/7/inspect", "x", func(p *codec.Publish) { p.Retain = true }); code != codec.Success {
		t.Fatalf("a retained queue publish was answered %v", code)
	}
	r.tick()
	if w.last(t).d.Retain || r.e.C.RetainIgnored.Load() != 1 {
		t.Fatal("RETAIN was not dropped and counted")
	}
}

func TestMaxBytesRefuses0x97AndRecoversAsJobsResolve(t *testing.T) {
	r := newRigBounded(t, opts(), 200)
	w := r.worker("w1")
	payload := string(make([]byte, 60))
	n := 0
	for r.publish("work/7/inspect", payload) == codec.Success {
		n++
		if n > 10 {
			t.Fatal("max_bytes never refused")
		}
	}
	if r.q.Depth() != n {
		t.Fatal("a refusal dropped something")
	}
	if r.publish("work/7/inspect", payload) != codec.QuotaExceeded {
		t.Fatal("not 0x97 at max_bytes")
	}
	r.tick()
	o1 := w.last(t)
	r.puback(w, o1)
	r.answer("w1", o1, "ack")
	if code := r.publish("work/7/inspect", payload); code != codec.Success {
		t.Fatalf("after a job resolved the queue still refused: %v", code)
	}
}

func TestJobTooLargeForTheWorkerKicks0x95AttemptUnspent(t *testing.T) {
	r := newRig(t, opts())
	a := r.worker("a")
	a.maxSize = 10
	r.publish("work/7/inspect", string(make([]byte, 100)))
	r.tick()
	if a.kicked != codec.PacketTooLarge || len(a.offers()) != 0 {
		t.Fatalf("kicked %v offers %d", a.kicked, len(a.offers()))
	}
	r.gone("a")
	b := r.worker("b")
	r.tick()
	if attempt(t, b.last(t)) != 1 {
		t.Fatal("the too-large offer spent an attempt")
	}
}

func TestQueueFormCodes(t *testing.T) {
	r := newRig(t, opts())
	f := r.e.Form()
	cases := []struct {
		name string
		f    engine.Filter
		want codec.ReasonCode
	}{
		{"QoS 1", engine.Filter{Filter: f, Inner: f, Options: delivery.SubscribeOptions{QoS: 1}}, codec.GrantedQoS1},
		{"QoS 2 granted 1", engine.Filter{Filter: f, Inner: f, Options: delivery.SubscribeOptions{QoS: 2}}, codec.GrantedQoS1},
		{"QoS 0", engine.Filter{Filter: f, Inner: f}, codec.ImplementationSpecificError},
		{"No Local", engine.Filter{Filter: f, Inner: f, Options: delivery.SubscribeOptions{QoS: 1, NoLocal: true}}, codec.TopicFilterInvalid},
		{"shared form", engine.Filter{Filter: "$share/g/" + f, Inner: f, Share: "g", Options: delivery.SubscribeOptions{QoS: 1}}, codec.NotAuthorized},
		{"inside the filter", engine.Filter{Filter: "work/+/inspect", Inner: "work/+/inspect", Inside: true}, codec.TopicFilterInvalid},
		{"crossing", engine.Filter{Filter: "#", Inner: "#"}, codec.Success},
		{"shared inside", engine.Filter{Filter: "$share/g/work/+/inspect", Inner: "work/+/inspect", Share: "g", Inside: true}, codec.Success},
	}
	for _, c := range cases {
		if got, _ := r.e.Subscribe(sess("x"), c.f); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestRestartOffersEveryUnresolvedJobAttemptsKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.db")
	open := func() (*sqlite.Provider, store.Queue) {
		p, err := sqlite.Open(store.SQLiteOptions{Name: "disk", FilePath: path})
		if err != nil {
			t.Fatal(err)
		}
		q, err := p.Queue("jobs", store.QueueOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p, q
	}
	p, q := open()
	r := startRig(t, q, opts())
	w := r.worker("w1")
	for i := 0; i < 3; i++ {
		r.publish("work/7/inspect", strconv.Itoa(i))
	}
	r.tick()
	first := w.last(t)
	r.puback(w, first) // leased: attempt 1 stored
	r.answer("w1", first, "ack")
	r.puback(w, w.last(t)) // the second leased, the third available
	_ = r.e.Close()
	_ = p.Close()

	p2, q2 := open()
	defer p2.Close()
	r2 := startRig(t, q2, opts())
	a, b := r2.worker("a"), r2.worker("b")
	r2.tick()
	got := map[string]int{}
	for _, c := range []*fakeClient{a, b} {
		o := c.last(t)
		got[string(o.m.Payload)] = attempt(t, o)
	}
	if len(got) != 2 || got["1"] != 2 || got["2"] != 1 {
		t.Fatalf("after the restart offered %v, want job 1 at attempt 2 and job 2 at attempt 1, job 0 never", got)
	}
	// An answer naming a delivery from before the restart names nothing.
	r2.answer("w1", first, "ack")
	if r2.q.Depth() != 2 {
		t.Fatal("a Delivery ID from before the restart resolved a job")
	}
}

func FuzzParseDeliveryID(f *testing.F) {
	id := makeID(1, 2, 3)
	f.Add(id[:])
	f.Add([]byte("ack"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, o, e, ok := parseID(b)
		if ok {
			if again := makeID(n, o, e); string(again[:]) != string(b) {
				t.Fatalf("%q parsed as (%d,%d,%d), which writes %q", b, n, o, e, again[:])
			}
		}
	})
}

func TestWorkerTheACLRefusesConsumeIsPassedOverAttemptUnspent(t *testing.T) {
	r := newRig(t, opts())
	a := r.worker("a")
	r.deny("a", true)
	r.publish("work/7/inspect", "x")
	r.tick()
	if len(a.offers()) != 0 {
		t.Fatal("a worker the acl_file refuses was offered a job")
	}
	b := r.worker("b")
	r.tick()
	if attempt(t, b.last(t)) != 1 {
		t.Fatal("the refused offer spent an attempt")
	}
}

// A worker whose consume is narrowed to some topics is offered the oldest job
// it may take, past the older ones it may not; those stay for another worker
// with their attempt unspent.
func TestNarrowedWorkerIsOfferedALaterJobItMayTake(t *testing.T) {
	r := newRig(t, opts())
	a := r.worker("a")
	r.host.mu.Lock()
	r.host.only["a"] = "work/1/"
	r.host.mu.Unlock()
	r.publish("work/2/inspect", "not for a")
	r.publish("work/1/inspect", "for a")
	r.tick()
	got := a.offers()
	if len(got) != 1 || string(got[0].m.Topic) != "work/1/inspect" {
		t.Fatalf("a was offered %d jobs, want the one on work/1/inspect", len(got))
	}
	b := r.worker("b")
	r.tick()
	o := b.last(t)
	if string(o.m.Topic) != "work/2/inspect" || attempt(t, o) != 1 {
		t.Fatalf("b got %s at attempt %d, want work/2/inspect at 1", o.m.Topic, attempt(t, o))
	}
}

// A re-read granting a refused worker the job it was refused has it offered at
// once: the engine is told (OnGrantsChanged), not left to its next tick.
func TestReReadGrantingConsumeOffersAtOnce(t *testing.T) {
	r := newRig(t, opts())
	a := r.worker("a")
	r.deny("a", true)
	r.publish("work/7/inspect", "x")
	r.tick()
	if len(a.offers()) != 0 {
		t.Fatal("a worker the acl_file refuses was offered a job")
	}
	r.deny("a", false)
	r.host.reread()
	r.e.sync() // the clock not moved: no tick has run
	if attempt(t, a.last(t)) != 1 {
		t.Fatal("the job offered after the re-read spent an attempt before it")
	}
}

// Checklist C1.3: a job whose PUBLISH never went on the wire - Deliver
// failed - returns to the queue with no attempt spent, and its next offer
// is attempt 1.
func TestC1_3AJobWhosePublishNeverWentOnTheWireReturnsAttemptUnspent(t *testing.T) {
	r := newRig(t, opts())
	a := r.worker("a")
	a.mu.Lock()
	a.fail = 1
	a.mu.Unlock()
	r.publish("work/7/inspect", "x")
	for i := 0; i < 5 && len(a.offers()) == 0; i++ {
		r.tick()
	}
	a.mu.Lock()
	failed := a.fail == 0
	a.mu.Unlock()
	if !failed {
		t.Fatal("the job was never handed to Deliver")
	}
	if got := attempt(t, a.last(t)); got != 1 {
		t.Fatalf("after a Deliver that failed, the job was offered at attempt %d, want 1", got)
	}
}
