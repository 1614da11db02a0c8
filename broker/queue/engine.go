// Package queue is the queue channel engine (RFC 0002 "What each channel
// type admits" / queue; notes-0003 "queue"): work handed to one worker at a
// time, acknowledged with ack or handed back with return on the Response
// Topic, offered again after a visibility timeout that starts at the
// worker's PUBACK, retried with backoff, expired, and moved to the derived
// dead-letter channel in one store operation.
//
// One goroutine per queue makes every decision: the broker's calls (made on
// the connections' loops, under shard locks) post an event to its mailbox
// and return at once, so no event loop waits on a store write made for a
// queue decision. Every timer - the 200 ms offer tick, visibility timeouts,
// the expiry sweep - is on the Host's clock.
package queue

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/saguin-edge/saguin/broker/acl"
	"github.com/saguin-edge/saguin/broker/channel"
	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// Tick is the offer tick: new work and new workers are offered on it, a
// backoff gap is honoured to within it (notes-0003 "Delivery"; fixed, not
// configurable).
const Tick = 200 * time.Millisecond

// AttemptKey labels an offer with its attempt, counted from 1.
const AttemptKey = "saguin-attempt"

// Backoff shapes (retry.backoff).
const (
	BackoffNone        = "none"
	BackoffLinear      = "linear"
	BackoffExponential = "exponential"
)

// sweepMax bounds one expiry sweep's moves, so that a tick never runs long.
const sweepMax = 256

// Options configure one queue.
type Options struct {
	Name    string
	Filters []string // braces expanded
	Store   store.Queue
	Host    engine.Host
	// Disk: the provider commits to disk, so a publish into the queue waits
	// on it (engine.Waits).
	Disk              bool
	Limits            channel.Limits
	VisibilityTimeout time.Duration
	MaxAttempts       uint32
	Backoff           string
	BackoffBase       time.Duration
	// JobExpiresAfter ends a job that old, whatever its attempts; 0 never.
	JobExpiresAfter time.Duration
	// DeadLettered is told of each record the dead-letter move wrote, so
	// that the dead-letter channel's engine serves its connected readers
	// now, as it would a publish (the move writes its log directly); nil
	// for none.
	DeadLettered func(r *store.Record)
}

// Gap is the backoff gap after a job's nth attempt (notes-0003 "Backoff"):
// none, linear base x n, exponential base x 2^(n-1).
func Gap(shape string, base time.Duration, attempts uint32) time.Duration {
	if attempts == 0 || base <= 0 {
		return 0
	}
	switch shape {
	case BackoffLinear:
		return base * time.Duration(attempts)
	case BackoffExponential:
		if attempts > 40 {
			attempts = 40 // past any useful gap; keeps the shift in range
		}
		return base << (attempts - 1)
	}
	return 0
}

// Engine is one queue channel.
type Engine struct {
	opts     Options
	q        store.Queue
	host     engine.Host
	clk      clock.Clock
	log      *slog.Logger
	filters  topic.Table[string]
	form     string // $saguin/queue/<name>
	response string // $saguin/queue/<name>/response
	nonce    uint64

	// C are the queue's counters.
	C Counters

	mu  sync.Mutex
	box []event
	// roomWait are the workers passed over for a full in-flight window:
	// Room, on the connection's loop, wakes the goroutine for one of them.
	roomWait map[string]struct{}
	wake     chan struct{}
	quit     chan struct{}
	done     chan struct{}
	started  bool
	closed   bool

	// Owned by the run goroutine.
	workers []*worker
	byID    map[string]*worker
	next    int
	out     map[uint64]*lease
	build   channel.Out
	// What the events of one mailbox batch leave to store and to do: the
	// leases and resolutions go to the store together at the batch's end
	// (Settle: one commit on sqlite for every worker heard from), then one
	// dispatch offers each worker its next job. Any other store call
	// flushes them first, so the store sees every job's changes in order.
	pendLeases   []store.LeaseOf
	pendLeaseOf  []*lease
	pendResolves []store.Delivery
	pendAckedBy  []string // the holder of each of pendResolves, for its log line
	wantDispatch bool
}

type worker struct {
	id    string
	subID uint32
	job   uint64 // the offset it holds, 0 none
}

// lease is a job out with a worker: delivering until its PUBACK or answer,
// leased from then with the visibility timer running.
type lease struct {
	d        store.Delivery
	job      store.Job
	holder   string
	seq      uint32 // Ref.Attempt of the offer: its PUBACK names it
	leased   bool
	leasedAt time.Time
	timer    clock.Timer
}

type evKind uint8

const (
	evSubscribe evKind = iota + 1
	evUnsubscribe
	evResume
	evDetach
	evPuback
	evAnswer
	evTimeout
	evBarrier
	evRoom
	evGrants
)

type event struct {
	kind    evKind
	client  string
	subID   uint32
	ref     delivery.Ref
	corr    []byte
	payload []byte
	d       store.Delivery
	done    chan struct{}
}

// New builds the engine for one queue; Restore starts it.
func New(o Options) (*Engine, error) {
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 5
	}
	if o.VisibilityTimeout <= 0 {
		o.VisibilityTimeout = 30 * time.Second
	}
	e := &Engine{
		opts: o, q: o.Store, host: o.Host, clk: o.Host.Clock(), log: o.Host.Logger(),
		form: topic.QueuePrefix + o.Name, response: topic.QueuePrefix + o.Name + "/response",
		wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
		byID: map[string]*worker{}, out: map[uint64]*lease{}, roomWait: map[string]struct{}{},
	}
	for _, f := range o.Filters {
		if err := e.filters.Add(f, f); err != nil {
			return nil, fmt.Errorf("queue %q: %w", o.Name, err)
		}
	}
	// A re-read of the acl_file may grant a job to a worker it was
	// refused to: offered at once, not at the next tick.
	o.Host.OnGrantsChanged(func() { e.post(event{kind: evGrants}) })
	var b [8]byte
	_, _ = rand.Read(b[:])
	e.nonce = binary.BigEndian.Uint64(b[:])
	shape, base := o.Backoff, o.BackoffBase
	if shape == BackoffLinear || shape == BackoffExponential {
		e.q.SetBackoff(func(n uint32) time.Duration { return Gap(shape, base, n) })
	}
	return e, nil
}

func (e *Engine) Kind() delivery.Kind   { return delivery.KindQueue }
func (e *Engine) Name() string          { return e.opts.Name }
func (e *Engine) Filters() []string     { return e.opts.Filters }
func (e *Engine) Holder() store.Holder  { return e.q }
func (e *Engine) Store() store.Queue    { return e.q }
func (e *Engine) Form() string          { return e.form }
func (e *Engine) ResponseTopic() string { return e.response }

// Publish takes work (any topic a filter of the queue holds) or a worker's
// answer on the Response Topic. The answer's PUBACK is 0x00 whatever it
// said: the worker is never told whether it was applied (checklist C5.4).
func (e *Engine) Publish(publisher string, p *codec.Publish) (codec.ReasonCode, string) {
	if string(p.Topic) == e.response {
		e.post(event{kind: evAnswer, client: publisher,
			corr:    append([]byte(nil), p.Properties.CorrelationData...),
			payload: append([]byte(nil), p.Payload...)})
		return codec.Success, ""
	}
	if code, why := channel.CheckHeaders(&p.Properties, e.opts.Limits); code != codec.Success {
		return code, why
	}
	r := channel.RecordOf(p, publisher, e.clk.Now())
	if r.Retain {
		// Ordinary work: the flag is dropped, never acted on (RFC 0002
		// "Publishing"; checklist C3.2).
		r.Retain = false
		e.C.RetainIgnored.Add(1)
	}
	if _, err := e.q.Enqueue(r); err != nil {
		return e.refused(err)
	}
	e.C.Published.Add(1)
	return codec.Success, ""
}

func (e *Engine) refused(err error) (codec.ReasonCode, string) {
	if store.IsFull(err) {
		e.C.Refused.Add(1)
		return codec.QuotaExceeded, "queue " + e.opts.Name + " is at its max_bytes: it takes work again as workers resolve jobs"
	}
	e.log.Error("queue: storing a job", "error", err)
	return codec.ImplementationSpecificError, "the store could not keep the job"
}

// Waits: work waits on a disk provider's commit; an answer never waits (it
// is posted to the queue's goroutine).
func (e *Engine) Waits(_ string, p *codec.Publish) bool {
	return e.opts.Disk && string(p.Topic) != e.response
}

// Release enqueues a held QoS 2 publish and drops its hold in one operation.
func (e *Engine) Release(h store.Held) (engine.Released, codec.ReasonCode, string, error) {
	r, err := e.q.ReleaseHeld(h.ClientID, h.PacketID)
	if err != nil {
		if errors.Is(err, store.ErrChannelFull) {
			code, why := e.refused(err)
			return engine.Released{}, code, why, nil
		}
		return engine.Released{}, 0, "", err
	}
	e.C.Published.Add(1)
	return engine.Released{Publisher: h.ClientID, Record: r, Live: true}, codec.Success, "", nil
}

// Released: new work is offered on the next tick.
func (e *Engine) Released(engine.Released) {}

// Subscribe serves the queue's form (a worker) and judges every plain
// filter reaching the queue: one lying inside the queue's filter is refused
// 0x8F (RFC 0002: it would compete with the workers for nothing); one that
// merely crosses it, or a shared group's, is granted and sent no job
// (invariant 11).
func (e *Engine) Subscribe(s engine.Session, f engine.Filter) (codec.ReasonCode, string) {
	if f.Inner == e.form {
		switch {
		case f.Share != "":
			return codec.NotAuthorized, "a queue is consumed through $saguin/queue/<queue> alone: a shared group has no place there"
		case f.Options.QoS == 0:
			return codec.ImplementationSpecificError, "a queue's form is subscribed at QoS 1: QoS 0 has no acknowledgement to start the visibility timeout from"
		case f.Options.NoLocal:
			return codec.TopicFilterInvalid, "No Local on a queue's form would withhold a job from the one worker chosen for it"
		}
		e.post(event{kind: evSubscribe, client: s.ClientID(), subID: f.Options.SubscriptionID})
		return codec.GrantedQoS1, ""
	}
	if f.Share == "" && f.Inside {
		return codec.TopicFilterInvalid, "the filter lies inside queue " + e.opts.Name + "'s filter: its jobs go to the workers of $saguin/queue/" + e.opts.Name + " alone"
	}
	return codec.Success, ""
}

func (e *Engine) Unsubscribe(s engine.Session, filter string) {
	if filter == e.form {
		e.post(event{kind: evUnsubscribe, client: s.ClientID()})
	}
}

// Resume: the worker is offered again. Deliveries its last connection left
// unfinished are not sent again: a restart or reconnect resurrects no
// delivery (invariant 15); their jobs went back when the connection ended.
func (e *Engine) Resume(s engine.Session, _ delivery.Client, _ []delivery.Unfinished) {
	e.post(event{kind: evResume, client: s.ClientID()})
}

// Detach returns the worker's job at once (checklist C6.8).
func (e *Engine) Detach(s engine.Session) { e.post(event{kind: evDetach, client: s.ClientID()}) }

// End returns the worker's job and forgets it.
func (e *Engine) End(s engine.Session) { e.post(event{kind: evUnsubscribe, client: s.ClientID()}) }

// Ack is an offer's PUBACK: the attempt is spent and the visibility timeout
// starts (checklist C6.1, C6.4). It resolves nothing (invariant 6).
func (e *Engine) Ack(s engine.Session, ref delivery.Ref, stage engine.AckStage, _ uint16) bool {
	if stage == engine.AckFinished {
		e.post(event{kind: evPuback, client: s.ClientID(), ref: ref})
	}
	return true
}

// Room: a settle of any delivery reopened clientID's full window. A worker
// passed over for it is offered at once, not at the next tick (checklist
// C4.5); anyone else costs a map lookup.
func (e *Engine) Room(clientID string) {
	e.mu.Lock()
	_, waiting := e.roomWait[clientID]
	delete(e.roomWait, clientID)
	e.mu.Unlock()
	if waiting {
		e.post(event{kind: evRoom, client: clientID})
	}
}

// awaitRoom has Room wake the goroutine when w's window reopens. A settle
// between the refusal and this registration found nobody waiting, so the
// window is asked again after it, and a place already back is acted on
// now.
func (e *Engine) awaitRoom(id string, c delivery.Client, m *delivery.Message, dl delivery.Delivery) {
	e.mu.Lock()
	e.roomWait[id] = struct{}{}
	e.mu.Unlock()
	if c.CanTake(m, dl) {
		e.Room(id)
	}
}

// Restore starts the queue: every stored job is available (the store saw to
// it, invariant 15), offered at the first tick.
func (e *Engine) Restore() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started {
		return nil
	}
	e.started = true
	go e.run(e.clk.NewTicker(Tick))
	return nil
}

// Close stops the goroutine and waits for it; the goroutine stores the
// leases and resolutions it heard before it returns.
func (e *Engine) Close() error {
	e.mu.Lock()
	started, closed := e.started, e.closed
	e.closed = true
	e.mu.Unlock()
	if started && !closed {
		close(e.quit)
		<-e.done
	}
	return nil
}

// post hands the goroutine an event; it never blocks.
func (e *Engine) post(ev event) {
	e.mu.Lock()
	e.box = append(e.box, ev)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// sync waits until the goroutine handled everything posted before it (tests,
// and Close's callers).
func (e *Engine) sync() {
	done := make(chan struct{})
	e.post(event{kind: evBarrier, done: done})
	select {
	case <-done:
	case <-e.done:
	}
}

func (e *Engine) run(tick clock.Ticker) {
	defer close(e.done)
	defer tick.Stop()
	var box []event
	for {
		select {
		case <-e.quit:
			e.flush() // acknowledgements heard are stored before the stop
			e.mu.Lock()
			for _, ev := range e.box {
				if ev.done != nil {
					close(ev.done)
				}
			}
			e.mu.Unlock()
			for _, l := range e.out {
				if l.timer != nil {
					l.timer.Stop()
				}
			}
			return
		case <-tick.C():
			e.flush()
			e.sweep()
			e.dispatch()
		case <-e.wake:
			e.mu.Lock()
			box, e.box = e.box, box[:0]
			e.mu.Unlock()
			for i := range box {
				e.handle(&box[i])
				box[i] = event{}
			}
			e.settle()
		}
	}
}

func (e *Engine) handle(ev *event) {
	switch ev.kind {
	case evSubscribe:
		if w := e.byID[ev.client]; w != nil {
			w.subID = ev.subID
			return
		}
		w := &worker{id: ev.client, subID: ev.subID}
		e.byID[ev.client] = w
		e.workers = append(e.workers, w)
	case evResume:
		// Offered at the next tick, like any new worker.
	case evDetach:
		if w := e.byID[ev.client]; w != nil {
			e.handBackWorker(w)
		}
	case evUnsubscribe:
		w := e.byID[ev.client]
		if w == nil {
			return
		}
		e.handBackWorker(w)
		delete(e.byID, ev.client)
		e.mu.Lock()
		delete(e.roomWait, ev.client)
		e.mu.Unlock()
		for i, x := range e.workers {
			if x == w {
				e.workers = append(e.workers[:i], e.workers[i+1:]...)
				if e.next > i {
					e.next--
				}
				break
			}
		}
	case evPuback:
		l := e.out[ev.ref.N]
		if l == nil || l.seq != ev.ref.Attempt || l.holder != ev.client {
			return // a superseded delivery's PUBACK (invariant 3)
		}
		e.lease(l)
	case evAnswer:
		e.answer(ev)
	case evTimeout:
		l := e.out[ev.d.Offset]
		if l == nil || l.d != ev.d || !l.leased {
			return
		}
		e.log.Debug("queue: visibility timeout", "offset", l.d.Offset, "holder", l.holder)
		e.handBack(l, causeTimeout, l.leasedAt)
		e.wantDispatch = true
	case evRoom, evGrants:
		e.wantDispatch = true
	case evBarrier:
		e.settle() // what was posted before it is done, offers included
		close(ev.done)
	}
}

// settle ends a mailbox batch: its leases and resolutions stored in one
// Settle, then, if an answer, a timeout or a reopened window asked for it,
// one dispatch. The next job still goes out at once after an answer -
// after the batch it came in, not after each event of it.
func (e *Engine) settle() {
	e.flush()
	if e.wantDispatch {
		e.dispatch()
	}
}

// flush stores the batch's leases and resolutions so far. A lease the
// store could not keep is logged: the worker has the job all the same, its
// attempt is the one the store holds.
func (e *Engine) flush() {
	if len(e.pendLeases)+len(e.pendResolves) == 0 {
		return
	}
	jobs, errs := e.q.Settle(e.pendLeases, e.pendResolves)
	for i, l := range e.pendLeaseOf {
		if errs[i] != nil {
			e.log.Error("queue: storing a lease", "offset", l.d.Offset, "error", errs[i])
		} else {
			// Said once stored: the attempt survives a crash from here.
			e.log.Debug("queue: leased", "offset", l.d.Offset, "holder", l.holder, "attempt", jobs[i].Attempts)
			if e.out[l.d.Offset] == l {
				l.job = jobs[i] // as stored: attempts, first and last delivery
			}
		}
		e.pendLeaseOf[i] = nil
	}
	for k, d := range e.pendResolves {
		if err := errs[len(e.pendLeases)+k]; err != nil {
			e.log.Error("queue: resolving a job", "offset", d.Offset, "error", err)
		} else {
			// Said once stored, as a lease is: the job is gone and its
			// bytes are free from here.
			e.log.Debug("queue: acknowledged", "offset", d.Offset, "holder", e.pendAckedBy[k])
		}
	}
	e.pendLeases, e.pendLeaseOf, e.pendResolves = e.pendLeases[:0], e.pendLeaseOf[:0], e.pendResolves[:0]
	clear(e.pendAckedBy)
	e.pendAckedBy = e.pendAckedBy[:0]
}

// lease records that the worker has the job: the attempt is spent - stored
// with the batch's other writes (flush) - and the visibility timer armed.
func (e *Engine) lease(l *lease) {
	if l.leased {
		return
	}
	now := e.clk.Now()
	e.pendLeases = append(e.pendLeases, store.LeaseOf{D: l.d, Now: now, Deadline: now.Add(e.opts.VisibilityTimeout)})
	e.pendLeaseOf = append(e.pendLeaseOf, l)
	// What the store's lease writes; its answer replaces it at the flush.
	l.job.Attempts++
	if l.job.FirstDelivery.IsZero() {
		l.job.FirstDelivery = now
	}
	l.job.LastDelivery = now
	l.leased, l.leasedAt = true, now
	d := l.d
	l.timer = e.clk.AfterFunc(e.opts.VisibilityTimeout, func() { e.post(event{kind: evTimeout, d: d}) })
	e.C.Delivered.Add(1)
	e.C.Inflight.Add(1)
}

// answer applies an ack or a return, only for the current delivery from the
// session holding it (notes-0003 "Acknowledgement and return"); anything
// else is ignored and logged, a superseded delivery at warn.
func (e *Engine) answer(ev *event) {
	nonce, offset, epoch, ok := parseID(ev.corr)
	ignore := func(level slog.Level, why string) {
		e.C.Ignored.Add(1)
		e.log.Log(context.Background(), level, "queue: answer ignored", "client_id", ev.client, "why", why)
	}
	if !ok || nonce != e.nonce {
		ignore(slog.LevelInfo, "the Correlation Data names no delivery of this queue")
		return
	}
	l := e.out[offset]
	switch {
	case l == nil || l.d.Epoch != epoch:
		ignore(slog.LevelWarn, "the delivery it names is superseded (offset "+strconv.FormatUint(offset, 10)+")")
		return
	case l.holder != ev.client:
		ignore(slog.LevelInfo, "the delivery it names is held by another session")
		return
	}
	act := string(ev.payload)
	if act != "ack" && act != "return" {
		ignore(slog.LevelInfo, "the payload is neither ack nor return")
		return
	}
	e.lease(l)
	now := e.clk.Now()
	if act == "ack" {
		e.stop(l)
		e.pendResolves = append(e.pendResolves, l.d)
		e.pendAckedBy = append(e.pendAckedBy, l.holder)
		e.C.Acknowledged.Add(1)
	} else {
		e.log.Debug("queue: returned", "offset", offset, "holder", l.holder)
		e.handBack(l, causeReturn, now)
	}
	e.wantDispatch = true
}

type cause uint8

const (
	causeReturn  cause = iota + 1 // the worker's return
	causeTimeout                  // visibility timeout
	causeGone                     // the worker's connection or session ended
)

// stop takes l off its worker and the out set.
func (e *Engine) stop(l *lease) {
	if l.timer != nil {
		l.timer.Stop()
	}
	delete(e.out, l.d.Offset)
	if w := e.byID[l.holder]; w != nil && w.job == l.d.Offset {
		w.job = 0
	}
	if l.leased {
		e.C.Inflight.Add(-1)
	}
}

func (e *Engine) handBackWorker(w *worker) {
	if w.job == 0 {
		return
	}
	if l := e.out[w.job]; l != nil {
		last := l.leasedAt
		if last.IsZero() {
			last = e.clk.Now()
		}
		e.handBack(l, causeGone, last)
	}
	w.job = 0
}

// handBack ends a delivery that resolved nothing: a job never received goes
// back with its attempt unspent; a received one is dead-lettered when it
// has expired or spent its last attempt, and is otherwise available again
// after its gap from gapFrom (checklist C6, C7, C8).
func (e *Engine) handBack(l *lease, c cause, gapFrom time.Time) {
	e.flush() // the store sees the lease before the job comes back
	e.stop(l)
	if !l.leased {
		if err := e.q.Unsend(l.d); err != nil && !errors.Is(err, store.ErrStaleDelivery) {
			e.log.Error("queue: giving back an unsent job", "offset", l.d.Offset, "error", err)
		}
		return
	}
	now := e.clk.Now()
	switch {
	case e.expired(&l.job, now):
		e.deadLetter(l.d, &l.job, store.ReasonExpired, now)
	case l.job.Attempts >= e.opts.MaxAttempts:
		e.deadLetter(l.d, &l.job, store.ReasonAttemptsExhausted, now)
	default:
		if _, err := e.q.Release(l.d, gapFrom); err != nil {
			e.log.Error("queue: making a job available again", "offset", l.d.Offset, "error", err)
			return
		}
		if c == causeReturn {
			e.C.Returned.Add(1)
		} else {
			e.C.Redelivered.Add(1)
		}
	}
}

func (e *Engine) expired(j *store.Job, now time.Time) bool {
	return e.opts.JobExpiresAfter > 0 && !j.Time.IsZero() && now.Sub(j.Time) >= e.opts.JobExpiresAfter
}

// deadLetter moves the job to <queue>__dlq in one store operation
// (invariant 5). A failed move leaves the job as it was; one that was out
// is made available so that its next offer tries again.
func (e *Engine) deadLetter(d store.Delivery, j *store.Job, reason string, now time.Time) {
	t := j.Topic
	if f, _, ok := e.filters.Lookup(t); ok {
		t = topic.DeadLetterTopic(f, t)
	} else {
		t = topic.DeadLetterTopic(t, t)
	}
	r, err := e.q.DeadLetter(d, t, reason, now)
	if err != nil {
		e.log.Error("queue: moving a job to the dead-letter channel", "offset", d.Offset, "error", err)
		if d.Epoch != 0 {
			_, _ = e.q.Release(d, now)
		}
		return
	}
	e.C.DeadLettered.Add(1)
	if reason == store.ReasonExpired {
		e.C.Expired.Add(1)
	}
	if e.opts.DeadLettered != nil {
		e.opts.DeadLettered(&r)
	}
	e.log.Warn("queue: dead-lettered", "offset", d.Offset, "reason", reason, "attempts", j.Attempts, "dead_letter_offset", r.Offset, "topic", t)
}

// sweep dead-letters the waiting jobs past job_expires_after; a job out
// with a worker is judged when it comes back (checklist C8.3).
func (e *Engine) sweep() {
	if e.opts.JobExpiresAfter <= 0 {
		return
	}
	e.flush()
	now := e.clk.Now()
	jobs, err := e.q.ExpireOlderThan(now.Add(-e.opts.JobExpiresAfter), sweepMax)
	if err != nil {
		e.log.Error("queue: the expiry sweep", "error", err)
		return
	}
	for i := range jobs {
		e.deadLetter(store.Delivery{Offset: jobs[i].Offset}, &jobs[i], store.ReasonExpired, now)
	}
}

// dispatch offers jobs round-robin to the live workers holding none, until
// the workers or the available jobs run out (notes-0003 "Delivery").
func (e *Engine) dispatch() {
	e.flush() // Offer reads the store
	e.wantDispatch = false
	n := len(e.workers)
	if n == 0 {
		return
	}
	start := e.next
	for i := 0; i < n; i++ {
		k := (start + i) % n
		w := e.workers[k]
		if w.job != 0 {
			continue
		}
		c := e.host.Client(w.id)
		if c == nil || c.Version() != codec.Version5 {
			continue
		}
		offered, more := e.offer(w, c)
		if offered {
			e.next = (k + 1) % n
		}
		if !more {
			return
		}
	}
}

// passOver is how many available jobs one offer steps over because the
// acl_file lets the worker take none of them, before it gives up until the
// next tick: each is held out of the store's answer meanwhile (a sqlite Offer
// reads past them), so the walk is bounded rather than the queue's depth.
const passOver = 16

// offer hands w the oldest available job it can take. more is false when
// no job is available (for anyone).
func (e *Engine) offer(w *worker, c delivery.Client) (offered, more bool) {
	// The jobs the acl_file refuses w are held DELIVERING while the walk
	// goes on past them, then handed back with their attempt unspent for
	// the next worker (checklist C4.2).
	var passed [passOver]store.Delivery
	n := 0
	defer func() {
		for _, d := range passed[:n] {
			_ = e.q.Unsend(d)
		}
	}()
	for {
		now := e.clk.Now()
		j, d, ok, err := e.q.Offer(w.id, now)
		if err != nil {
			e.log.Error("queue: offering a job", "error", err)
			return false, false
		}
		if !ok {
			// The jobs passed over are there for the other workers.
			return false, n > 0
		}
		switch {
		case e.expired(&j, now):
			e.deadLetter(d, &j, store.ReasonExpired, now)
			continue
		case j.Attempts >= e.opts.MaxAttempts:
			// Stored at its last attempt before a restart: it would become
			// available with none left (checklist C6.7).
			e.deadLetter(d, &j, store.ReasonAttemptsExhausted, now)
			continue
		}
		if !e.host.Allows(w.id, j.Topic, acl.Consume) {
			// Asked where the worker is chosen, now: a worker whose grant
			// is narrowed by filter: may take a later job (RFC 0002 "The
			// verbs"), and this one goes back unspent for another.
			passed[n] = d
			if n++; n == passOver {
				return false, true
			}
			continue
		}
		seq := uint32(d.Epoch)
		m := e.message(&j, d, now)
		dl := delivery.Delivery{QoS: 1, Ref: delivery.Ref{Kind: delivery.KindQueue, Attempt: seq, N: d.Offset, Name: e.opts.Name}}
		if w.subID != 0 {
			dl.SubscriptionIDs = []uint32{w.subID}
		}
		if !c.CanTake(m, dl) {
			_ = e.q.Unsend(d)
			if !c.Fits(m, dl) {
				// Too large for the worker's Maximum Packet Size, not a full
				// window: it is disconnected and the job goes back unspent
				// (checklist C4.7).
				e.log.Warn("queue: a job is larger than the worker's Maximum Packet Size", "offset", d.Offset, "client_id", w.id)
				c.Kick(codec.PacketTooLarge)
				return false, true
			}
			// A full window is passed over like a held job (checklist
			// C4.3) until the settle that reopens it.
			e.log.Debug("queue: passed over a full window", "offset", d.Offset, "client_id", w.id)
			e.awaitRoom(w.id, c, m, dl)
			return false, true
		}
		l := &lease{d: d, job: j, holder: w.id, seq: seq}
		e.out[d.Offset] = l
		w.job = d.Offset
		if !c.Deliver(m, dl) {
			e.stop(l)
			_ = e.q.Unsend(d)
			return false, true
		}
		e.log.Debug("queue: offered", "offset", d.Offset, "holder", w.id, "attempt", j.Attempts+1)
		return true, true
	}
}

// message builds an offer (checklist C3.4, C3.5): QoS 1 on the job's own
// topic, payload and User Properties as published, the channel labels but
// saguin-channel, saguin-attempt, the Response Topic and the Delivery ID as
// Correlation Data in place of the publisher's.
func (e *Engine) message(j *store.Job, d store.Delivery, now time.Time) *delivery.Message {
	p := e.build.Build(&j.Record, channel.Label{Version: codec.Version5, QoS: 1}, now)
	pr := &p.Properties
	id := makeID(e.nonce, d.Offset, d.Epoch)
	pr.ResponseTopic = []byte(e.response)
	pr.CorrelationData = id[:]
	pr.Present.Set(codec.PropResponseTopic)
	pr.Present.Set(codec.PropCorrelationData)
	var num [10]byte
	pr.User = append(pr.User, codec.UserProperty{Key: []byte(AttemptKey), Value: strconv.AppendUint(num[:0], uint64(j.Attempts)+1, 10)})
	return delivery.NewLabelledMessage(p, e.clk.Now)
}
