package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// Session-write grouping (notes-0004 "Group commit").
const (
	maxSessionGroup = 8
	sessionYield    = 5 * time.Millisecond
	// Every fifth turn goes to writes nobody is waiting on; among those,
	// departed clients' writes get four turns for every one of connected
	// sessions' writes.
	backgroundTurn = 5
	departedTurns  = 4
)

// opClass is who waits on a write that is not a publish.
type opClass uint8

const (
	// classAnswering: a client's packet is waiting on it (CONNACK, SUBACK,
	// PUBREC, PUBCOMP...), and reads that must run on the write connection.
	classAnswering opClass = iota
	// classDeparted: a client that went away (disconnect recorded, session
	// ended).
	classDeparted
	// classConnected: connected sessions' background writes (positions,
	// acknowledgements, in-flight tables, cursors) and the provider's own
	// (retention, dead-letter moves, queue bookkeeping).
	classConnected
	numClasses
)

// pubKind is one of the publish paths that share group commits.
type pubKind uint8

const (
	notPublish pubKind = iota
	pubAppend
	pubLatestSet
	pubLatestDelete
	pubEnqueue
	pubBroadcast
)

// op is one request to the writer goroutine. A publish carries its record; any
// other write carries fn, run inside a transaction the writer owns.
type op struct {
	pub       pubKind
	ch        *channel
	rec       store.Record
	extra     broadcastExtra
	unbounded bool // the dead-letter move checks no channel bound

	class  opClass
	client string // the client id a session write is for, "" for others
	relief bool   // may use the reserve (notes-0004 "The reserve")
	solo   bool   // its own transaction, never grouped
	noTx   bool   // a read on the write connection: no transaction needed
	fn     func(t *wtx) error

	out store.Record
	ok  bool
	err error

	done chan struct{}
}

var opPool = sync.Pool{New: func() any { return &op{done: make(chan struct{}, 1)} }}

func getOp() *op { return opPool.Get().(*op) }

func putOp(o *op) {
	done := o.done
	*o = op{done: done}
	opPool.Put(o)
}

// writer is the one goroutine that owns the write connection. Every write
// goes through it, so transactions are serial, offsets are reserved by one
// writer at a time from a batch's first reservation to its last outcome, and
// every other writer of a channel's counter row (retention, the dead-letter
// move) is ordered with the batches by construction.
type writer struct {
	p *Provider

	mu        sync.Mutex
	pubs      []*op
	pubOpened time.Time // CommitInterval: when the collecting batch opened
	queues    [numClasses][]*op
	awaiting  map[string]int // client ids with a packet waiting on the store
	closing   bool
	wake      chan struct{}
	done      chan struct{}

	// writer goroutine only
	turn, bgTurn int
	lastPub      bool
	batch        []*op
	hbuf         []byte // headers encoding buffer, reused
	timer        *time.Timer
}

func newWriter(p *Provider) *writer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &writer{p: p, wake: make(chan struct{}, 1), done: make(chan struct{}), timer: t}
}

// submit hands o to the writer and waits for its answer.
func (w *writer) submit(o *op) error {
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		return fmt.Errorf("storage %s: %w", w.p.opts.Name, store.ErrClosed)
	}
	if o.pub != notPublish {
		if len(w.pubs) == 0 {
			w.pubOpened = time.Now()
		}
		w.pubs = append(w.pubs, o)
	} else {
		if o.client != "" && w.awaiting[o.client] > 0 {
			o.class = classAnswering
		}
		w.queues[o.class] = append(w.queues[o.class], o)
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	<-o.done
	return o.err
}

// submitRun hands a run of publishes to the writer in one step, in order,
// and waits for every answer: no other publish comes between them, so they
// take consecutive places in the collecting batch.
func (w *writer) submitRun(ops []*op) {
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		for _, o := range ops {
			o.err = fmt.Errorf("storage %s: %w", w.p.opts.Name, store.ErrClosed)
		}
		return
	}
	if len(w.pubs) == 0 {
		w.pubOpened = time.Now()
	}
	w.pubs = append(w.pubs, ops...)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	for _, o := range ops {
		<-o.done
	}
}

// do runs fn as a write of the given class and waits for it.
func (w *writer) do(class opClass, relief, solo bool, fn func(t *wtx) error) error {
	o := getOp()
	o.class, o.relief, o.solo, o.fn = class, relief, solo, fn
	err := w.submit(o)
	putOp(o)
	return err
}

// doFor is do for a write of one client's session: while that client has a
// packet waiting on the store (AwaitClient), it is an answering write.
func (w *writer) doFor(client string, class opClass, relief, solo bool, fn func(t *wtx) error) error {
	o := getOp()
	o.client, o.class, o.relief, o.solo, o.fn = client, class, relief, solo, fn
	err := w.submit(o)
	putOp(o)
	return err
}

// AwaitClient marks clientID as having a packet waiting on the store, from
// the moment it is read until it is answered (a CONNECT until its CONNACK;
// a SUBSCRIBE, UNSUBSCRIBE, QoS 1/2 PUBLISH, PUBREL or AUTH while handled).
// The session writes for that client already queued - a connection being
// taken over storing its disconnect and its ending - are promoted into the
// answering class, and every later one is answering until release is
// called: a reconnecting client's CONNACK waits only behind its own id's
// writes, never behind every disconnect a reconnect storm queued
// (notes-0004 "Group commit", takeover). The store interfaces carry no such
// mark, so the broker reaches this through the *Provider.
func (p *Provider) AwaitClient(clientID string) (release func()) {
	w := p.w
	w.mu.Lock()
	if w.awaiting == nil {
		w.awaiting = map[string]int{}
	}
	w.awaiting[clientID]++
	for _, class := range []opClass{classDeparted, classConnected} {
		q := w.queues[class]
		kept := q[:0]
		for _, o := range q {
			if o.client == clientID {
				o.class = classAnswering
				w.queues[classAnswering] = append(w.queues[classAnswering], o)
				continue
			}
			kept = append(kept, o)
		}
		clear(q[len(kept):])
		w.queues[class] = kept
	}
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		if w.awaiting[clientID]--; w.awaiting[clientID] <= 0 {
			delete(w.awaiting, clientID)
		}
		w.mu.Unlock()
	}
}

// read runs fn on the write connection outside any transaction: the writer
// is the connection's only user, so nothing commits between its statements.
func (w *writer) read(fn func(c *conn) error) error {
	o := getOp()
	o.class, o.solo, o.noTx = classAnswering, true, true
	o.fn = func(t *wtx) error { return fn(t.c) }
	err := w.submit(o)
	putOp(o)
	return err
}

func (w *writer) stop() {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	<-w.done
}

// pubReadyLocked says whether the collecting publishes may commit now, and
// if not, when they will be.
func (w *writer) pubReadyLocked(now time.Time) (ready bool, at time.Time) {
	if len(w.pubs) == 0 {
		return false, time.Time{}
	}
	o := &w.p.opts
	if o.CommitMode != store.CommitInterval || w.closing {
		return true, time.Time{}
	}
	if len(w.pubs) >= o.PublishCommitMaxRecords {
		return true, time.Time{}
	}
	deadline := w.pubOpened.Add(o.PublishCommitInterval)
	if !now.Before(deadline) {
		return true, time.Time{}
	}
	return false, deadline
}

// loop is the writer goroutine. Writes a client waits on go first -
// publishes and answering session writes, taking turns - and every fifth turn
// goes to the rest, departed clients' writes four times for each of
// connected sessions'. While an interval batch collects, the connection is
// free for everything else: the leader waits holding nothing.
func (w *writer) loop() {
	defer close(w.done)
	for {
		now := time.Now()
		w.mu.Lock()
		pubReady, pubAt := w.pubReadyLocked(now)
		answering := len(w.queues[classAnswering]) > 0
		background := len(w.queues[classDeparted])+len(w.queues[classConnected]) > 0
		if !pubReady && !answering && !background {
			closing := w.closing && len(w.pubs) == 0
			w.mu.Unlock()
			if closing {
				return
			}
			w.sleep(pubAt)
			continue
		}
		w.turn++
		switch {
		case background && (w.turn%backgroundTurn == 0 || (!pubReady && !answering)):
			w.bgTurn++
			class := classDeparted
			if len(w.queues[classConnected]) > 0 && (w.bgTurn%(departedTurns+1) == 0 || len(w.queues[classDeparted]) == 0) {
				class = classConnected
			}
			group := w.takeGroupLocked(class)
			w.mu.Unlock()
			w.runGroup(class, group)
		case pubReady && (!answering || !w.lastPub):
			closedBy := w.takePubsLocked(now)
			w.mu.Unlock()
			w.lastPub = true
			w.runPublishes(closedBy)
		default:
			group := w.takeGroupLocked(classAnswering)
			w.mu.Unlock()
			w.lastPub = false
			w.runGroup(classAnswering, group)
		}
	}
}

func (w *writer) sleep(until time.Time) {
	if until.IsZero() {
		<-w.wake
		return
	}
	w.timer.Reset(time.Until(until))
	select {
	case <-w.wake:
		if !w.timer.Stop() {
			select {
			case <-w.timer.C:
			default:
			}
		}
	case <-w.timer.C:
	}
}

// takePubsLocked moves the next batch into w.batch and says what closed it.
func (w *writer) takePubsLocked(now time.Time) *atomic.Uint64 {
	o := &w.p.opts
	max := store.MaxCollectBatch
	var closedBy *atomic.Uint64
	switch o.CommitMode {
	case store.CommitEach:
		max = 1
		closedBy = &w.p.commits.Unbatched
	case store.CommitInterval:
		max = o.PublishCommitMaxRecords
		if len(w.pubs) >= max {
			closedBy = &w.p.commits.Records
		} else {
			closedBy = &w.p.commits.Interval
		}
	default:
		closedBy = &w.p.commits.Commit
	}
	n := min(len(w.pubs), max)
	w.batch = append(w.batch[:0], w.pubs[:n]...)
	clear(w.pubs[:n])
	w.pubs = w.pubs[n:]
	if len(w.pubs) == 0 {
		w.pubs = w.pubs[:0:0]
	} else {
		// What is left opens the next transaction now.
		w.pubOpened = now
	}
	return closedBy
}

// takeGroupLocked takes up to maxSessionGroup writes of one class; a solo
// write is taken alone.
func (w *writer) takeGroupLocked(class opClass) []*op {
	q := w.queues[class]
	n := 0
	for n < len(q) && n < maxSessionGroup {
		if q[n].solo {
			if n == 0 {
				n = 1
			}
			break
		}
		n++
	}
	group := append([]*op(nil), q[:n]...)
	clear(q[:n])
	w.queues[class] = q[n:]
	return group
}

// requeueFront puts the unrun rest of a group that yielded back at the head
// of its class: a transaction that yielded keeps its place.
func (w *writer) requeueFront(class opClass, rest []*op) {
	w.mu.Lock()
	w.queues[class] = append(append([]*op(nil), rest...), w.queues[class]...)
	w.mu.Unlock()
}

func (w *writer) pubWaiting() bool {
	w.mu.Lock()
	ready, _ := w.pubReadyLocked(time.Now())
	w.mu.Unlock()
	return ready
}

func answer(o *op) { o.done <- struct{}{} }

// runPublishes stores one batch of publishes in one transaction. A record
// over its channel's max_bytes is refused alone; a transaction failure fails
// every member, each answered as the batch was.
func (w *writer) runPublishes(closedBy *atomic.Uint64) {
	t := w.begin(false)
	if t.err == nil {
		for _, o := range w.batch {
			w.execPublish(t, o)
			if t.err != nil {
				break
			}
		}
	}
	stored := 0
	for _, o := range w.batch {
		if o.err == nil && o.out.Offset != 0 {
			stored++
		}
	}
	if stored > 0 || t.err != nil {
		t.finish()
	} else {
		t.rollbackQuiet()
	}
	if t.err != nil {
		err := w.p.mapErr("storing publishes", t.err)
		for _, o := range w.batch {
			if o.err == nil {
				o.err = err
			}
		}
	} else if stored > 0 {
		closedBy.Add(1)
		w.p.commits.CommittedRecords.Add(uint64(stored))
	}
	for i, o := range w.batch {
		answer(o)
		w.batch[i] = nil
	}
	// Yield the processor to the publishers just answered before looking for
	// the next batch. It is not a wait - no timer, no count, and a lone
	// publisher's next record starts a transaction the moment it arrives -
	// but on a machine with few cores the writer would otherwise take the
	// next batch before any answered publisher had run, so "what arrived
	// during the commit" would stay one or two records however many publish.
	runtime.Gosched()
}

// runGroup runs a group of session writes (or one solo write) in one
// transaction. After each write it yields when a publish is waiting or the
// transaction has run 5ms, committing what it has and re-queueing the rest
// at the head of its class. A refusal is one write's answer; a failure while
// writing ends the shared transaction, and the group is run again without
// the failed write once, then each remaining write alone.
func (w *writer) runGroup(class opClass, group []*op) {
	if len(group) == 1 && group[0].noTx {
		o := group[0]
		t := &wtx{w: w, c: w.p.wc}
		o.err = o.fn(t)
		if o.err != nil {
			o.err = unwrapDB(o.err)
		}
		answer(o)
		return
	}
	ran, failed := w.attempt(class, group, true)
	if failed < 0 {
		for _, o := range group[:ran] {
			answer(o)
		}
		return
	}
	// The shared attempt failed at group[failed]: nothing of it committed.
	others := make([]*op, 0, len(group)-1)
	others = append(others, group[:failed]...)
	others = append(others, group[failed+1:]...)
	if len(others) > 0 {
		if _, f2 := w.attempt(class, others, false); f2 >= 0 {
			for _, o := range others {
				w.attempt(class, []*op{o}, false)
			}
		}
		for _, o := range others {
			answer(o)
		}
	}
	w.attempt(class, group[failed:failed+1], false)
	answer(group[failed])
}

// attempt runs ops in one transaction. It returns how many ran (fewer than
// len(ops) when it yielded; the rest are re-queued) and, when a write failed,
// that write's index with nothing committed (-1 otherwise). With
// mayYield false it runs them all.
func (w *writer) attempt(class opClass, ops []*op, mayYield bool) (ran, failed int) {
	start := time.Now()
	t := w.begin(false)
	if t.err != nil {
		err := w.p.mapErr("beginning a transaction", t.err)
		for _, o := range ops {
			o.err = err
		}
		return len(ops), -1
	}
	for i, o := range ops {
		t.mark()
		if o.relief {
			t.raise()
		}
		err := o.fn(t)
		if o.relief {
			t.lower()
		}
		var de *dbError
		if errors.As(err, &de) || t.err != nil {
			if t.err == nil {
				t.err = de.err
			}
			failErr := w.p.mapErr("storing", t.err)
			t.finish() // rolls back, restores the ceiling and the counters
			if len(ops) == 1 {
				o.err = failErr
				return 1, -1
			}
			o.err = failErr
			return i + 1, i
		}
		o.err = err
		if err != nil {
			t.undoMark() // a refusal wrote nothing; forget its after-commit work
		}
		ran = i + 1
		if mayYield && ran < len(ops) && (w.pubWaiting() || time.Since(start) > sessionYield) {
			w.requeueFront(class, ops[ran:])
			break
		}
	}
	t.finish()
	if t.err != nil {
		err := w.p.mapErr("committing", t.err)
		for _, o := range ops[:ran] {
			if o.err == nil {
				o.err = err
			}
		}
	}
	return ran, -1
}

// dbError marks an error the database returned inside a shared transaction:
// SQLite has aborted the transaction, so nothing further may be sent on it.
type dbError struct{ err error }

func (e *dbError) Error() string { return e.err.Error() }
func (e *dbError) Unwrap() error { return e.err }

func unwrapDB(err error) error {
	var de *dbError
	if errors.As(err, &de) {
		return de.err
	}
	return err
}

// wtx is one transaction on the write connection: the channels whose pending
// counters it moved (made committed on commit, reset on rollback) and the
// in-memory work to do once it has committed.
type wtx struct {
	w       *writer
	c       *conn
	err     error
	touched []*channel
	afters  []func()
	markAt  int
	raised  bool
	open    bool
}

func (w *writer) begin(relief bool) *wtx {
	t := &wtx{w: w, c: w.p.wc}
	if _, err := t.c.begin.ExecContext(context.Background()); err != nil {
		t.err = err
		return t
	}
	t.open = true
	if relief {
		t.raise()
	}
	return t
}

// exec runs a prepared statement, marking a failure as the database's.
func (t *wtx) exec(st *sql.Stmt, args ...any) (sql.Result, error) {
	res, err := st.ExecContext(context.Background(), args...)
	if err != nil {
		t.err = err
		return nil, &dbError{err}
	}
	return res, nil
}

// queryRow runs a prepared single-row query inside the transaction.
func (t *wtx) queryRow(st *sql.Stmt, args ...any) *sql.Row {
	return st.QueryRowContext(context.Background(), args...)
}

// dbFail wraps a read's failure inside a transaction as the database's.
func (t *wtx) dbFail(err error) error {
	t.err = err
	return &dbError{err}
}

func (t *wtx) touch(ch *channel) {
	if !ch.inTx {
		ch.inTx = true
		t.touched = append(t.touched, ch)
	}
}

// after registers work to do once the transaction has committed.
func (t *wtx) after(f func()) { t.afters = append(t.afters, f) }

func (t *wtx) mark()     { t.markAt = len(t.afters) }
func (t *wtx) undoMark() { t.afters = t.afters[:t.markAt] }

// raise lets this transaction use the reserve: max_page_count goes up to the
// relief ceiling inside the transaction, so no ordinary publish can take it.
func (t *wtx) raise() {
	p := t.w.p
	if p.reliefPages == 0 || t.raised || t.err != nil {
		return
	}
	if _, err := t.c.c.ExecContext(context.Background(), "PRAGMA max_page_count = "+strconv.FormatInt(p.reliefPages, 10)); err != nil {
		t.err = err
		return
	}
	t.raised = true
}

// lower restores the ordinary ceiling. max_page_count is connection state,
// not content, so a rollback would not undo a raise: it is restored on the
// commit and the rollback path alike.
func (t *wtx) lower() {
	if !t.raised {
		return
	}
	p := t.w.p
	if _, err := t.c.c.ExecContext(context.Background(), "PRAGMA max_page_count = "+strconv.FormatInt(p.publishPages, 10)); err != nil {
		p.log.Error("restoring the page ceiling failed", "provider", p.opts.Name, "error", err)
		if t.err == nil {
			t.err = err
		}
		return
	}
	t.raised = false
}

// finish commits when nothing failed, else rolls back; then the channels'
// counters follow what is actually stored.
func (t *wtx) finish() {
	if !t.open {
		return
	}
	t.open = false
	if t.err == nil {
		// Writing the channels' counter rows once per transaction, from the
		// highest offset each reached, is what lets several channels share
		// one transaction without one channel's totals landing in another's.
		for _, ch := range t.touched {
			if ch.countersDirty {
				if _, err := t.c.updateCounters.ExecContext(context.Background(), int64(ch.pNext), ch.pBytes, ch.id); err != nil {
					t.err = err
					break
				}
			}
		}
	}
	if t.err == nil {
		if _, err := t.c.commit.ExecContext(context.Background()); err != nil {
			t.err = err
		}
	}
	if t.err != nil {
		t.c.rollback.ExecContext(context.Background())
	}
	t.lower()
	p := t.w.p
	for _, ch := range t.touched {
		if t.err == nil {
			ch.commitPending()
		} else {
			ch.resetPending()
		}
		ch.inTx = false
		ch.countersDirty = false
	}
	if t.err == nil {
		for _, f := range t.afters {
			f()
		}
		p.dirty.Store(true)
	}
	t.touched, t.afters = nil, nil
}

// rollbackQuiet ends a transaction in which nothing was written.
func (t *wtx) rollbackQuiet() {
	if !t.open {
		return
	}
	t.open = false
	t.c.rollback.ExecContext(context.Background())
	for _, ch := range t.touched {
		ch.resetPending()
		ch.inTx = false
		ch.countersDirty = false
	}
	t.touched, t.afters = nil, nil
}
