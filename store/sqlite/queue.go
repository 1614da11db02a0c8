package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// queueStore is a queue: queue_items holds each unresolved record with its
// attempt count and first and last delivery times. Who holds a job, its
// epoch and its deadline live only here in memory and are never stored
// (invariant 15): a restart brings every job back available.
type queueStore struct {
	*channel
	holder
	dlq *logStore

	mu      sync.Mutex
	jobs    map[uint64]*jobState // every unresolved job
	epoch   uint64               // the epoch counter; restarts from 0
	avail   int                  // jobs AVAILABLE, in their backoff gap or not
	backoff func(attempts uint32) time.Duration
}

// jobState is a job's volatile half, plus its size and attempt count so
// that the counters and the backoff need no read.
type jobState struct {
	state       store.JobState
	epoch       uint64
	holder      string
	deadline    time.Time
	availableAt time.Time
	size        int64
	attempts    uint32
}

var _ store.Queue = (*queueStore)(nil)

// Queue opens the queue name with its dead-letter channel name+"__dlq" on
// this same provider, so the move between them is one commit.
func (p *Provider) Queue(name string, opts store.QueueOptions) (store.Queue, error) {
	q, err := openOnce(p, p.queues, name, func() (*queueStore, error) { return p.openQueue(name, opts) })
	if err != nil {
		return nil, err
	}
	return q, nil
}

func (p *Provider) openQueue(name string, opts store.QueueOptions) (*queueStore, error) {
	ch, err := p.openChannel(name, kindQueue)
	if err != nil {
		return nil, err
	}
	q := &queueStore{channel: ch, holder: holder{ch, pubEnqueue}, jobs: map[uint64]*jobState{}}
	// A queue's table is unresolved work bounded by its max_bytes, so it is
	// summed at open rather than kept in a column the hot resolution path
	// would have to write.
	var bytes int64
	err = p.w.read(func(c *conn) error {
		rows, err := c.queueSums.Query(ch.id)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var off, size, attempts int64
			if err := rows.Scan(&off, &size, &attempts); err != nil {
				return err
			}
			q.jobs[uint64(off)] = &jobState{size: size, attempts: uint32(attempts)}
			bytes += size
		}
		return rows.Err()
	})
	if err != nil {
		return nil, p.mapErr("counting "+name, err)
	}
	q.avail = len(q.jobs)
	ch.count.Store(int64(len(q.jobs)))
	ch.bytes.Store(bytes)
	ch.resetPending()
	ch.maxBytes.Store(opts.MaxBytes)
	ch.queue = q
	if q.dlq, err = p.appendLog(name+store.DLQSuffix, opts.DLQ); err != nil {
		return nil, err
	}
	return q, nil
}

// added registers a committed enqueue (writer goroutine, after commit).
func (q *queueStore) added(off uint64, size int64) {
	q.mu.Lock()
	q.jobs[off] = &jobState{size: size}
	q.avail++
	q.mu.Unlock()
}

// Enqueue implements store.Queue: one of the publish paths that share a
// group commit.
func (q *queueStore) Enqueue(r store.Record) (store.Record, error) {
	return q.publish(pubEnqueue, r)
}

// Depth implements store.Queue.
func (q *queueStore) Depth() int { return q.Len() }

// SetBackoff implements store.Queue.
func (q *queueStore) SetBackoff(gap func(uint32) time.Duration) {
	q.mu.Lock()
	q.backoff = gap
	q.mu.Unlock()
}

// DeadLetters implements store.Queue.
func (q *queueStore) DeadLetters() store.AppendLog { return q.dlq }

func scanJob(scan func(...any) error) (store.Job, error) {
	var j store.Job
	var rs recordScan
	var off, attempts, first, last int64
	d := append([]any{&off}, rs.dest()...)
	d = append(d, &attempts, &first, &last)
	if err := scan(d...); err != nil {
		return j, err
	}
	var err error
	j.Record, err = rs.record(uint64(off))
	j.Attempts, j.FirstDelivery, j.LastDelivery = uint32(attempts), store.FromUnixNanos(first), store.FromUnixNanos(last)
	return j, err
}

// queryJobs reads every job a queue_items query (queueRead, queueExpired)
// returns, in its order.
func queryJobs(st *sql.Stmt, args ...any) ([]store.Job, error) {
	rows, err := st.Query(args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var jobs []store.Job
	for rows.Next() {
		j, err := scanJob(rows.Scan)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, rows.Err()
}

func (q *queueStore) readJob(off uint64) (store.Job, error) {
	var j store.Job
	err := q.p.readConn(func(c *conn) error {
		var err error
		j, err = scanJob(c.queueGet.QueryRow(q.id, int64(off)).Scan)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return j, fmt.Errorf("queue %s: job %d: %w", q.name, off, store.ErrNotFound)
	}
	return j, q.p.mapErr(fmt.Sprintf("reading job %d on %s", off, q.name), err)
}

// eligible says whether a job may be offered at now.
func (js *jobState) eligible(now time.Time) bool {
	return js.state == store.JobAvailable && !now.Before(js.availableAt)
}

// Offer implements store.Queue: a bounded read and no write. The query
// cannot exclude jobs out with a worker, so it reads pages past them and
// skips them in memory. The read runs under no lock; the choice is made under
// the queue's lock from the in-memory state, which every resolution and move
// updates only after its commit and which a job being moved or resolved is
// never AVAILABLE in - so a row a stale read still shows is either absent
// from the map or not eligible.
func (q *queueStore) Offer(holderName string, now time.Time) (store.Job, store.Delivery, bool, error) {
	// The first page is small and each next one four times larger: the
	// oldest available job is most often right after the few out with
	// workers, and every row read is a record decoded through cgo (a page
	// of 64 was most of a job's CPU with a backlog).
	page := 4
	q.mu.Lock()
	avail := q.avail
	q.mu.Unlock()
	if avail == 0 {
		// Every job is out with a worker: nothing to read.
		return store.Job{}, store.Delivery{}, false, nil
	}
	var from uint64
	for {
		var jobs []store.Job
		err := q.p.readConn(func(c *conn) error {
			var err error
			jobs, err = queryJobs(c.queueRead, q.id, int64(from), page)
			return err
		})
		if err != nil {
			return store.Job{}, store.Delivery{}, false, q.p.mapErr("offering from "+q.name, err)
		}
		q.mu.Lock()
		for i := range jobs {
			js := q.jobs[jobs[i].Offset]
			if js == nil || !js.eligible(now) {
				continue
			}
			q.epoch++
			q.avail--
			js.state, js.epoch, js.holder, js.deadline = store.JobDelivering, q.epoch, holderName, time.Time{}
			d := store.Delivery{Offset: jobs[i].Offset, Epoch: js.epoch}
			q.mu.Unlock()
			return jobs[i], d, true, nil
		}
		q.mu.Unlock()
		if len(jobs) < page {
			return store.Job{}, store.Delivery{}, false, nil
		}
		from = jobs[len(jobs)-1].Offset + 1
		page = min(page*4, 256)
	}
}

// Jobs implements store.Queue: the jobs chosen from the in-memory state
// (attempts, holder, deadline) under q.mu, then each chosen row's topic and
// delivery times read - never its payload. A job resolved between the two
// is left out.
func (q *queueStore) Jobs(max int) ([]store.ListedJob, error) {
	l := store.NewJobList(max)
	q.mu.Lock()
	for off, js := range q.jobs {
		if !l.Wants(js.attempts, off) {
			continue
		}
		row := store.ListedJob{Offset: off, Attempts: js.attempts, State: js.state}
		if js.state != store.JobAvailable {
			row.Holder = js.holder
		}
		if js.state == store.JobLeased {
			row.LeaseUntil = js.deadline
		}
		l.Offer(row)
	}
	q.mu.Unlock()
	rows := l.Sorted()
	out := rows[:0]
	err := q.p.readConn(func(c *conn) error {
		for _, r := range rows {
			var first, last int64
			err := c.queueListed.QueryRow(q.id, int64(r.Offset)).Scan(&r.Topic, &first, &last)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			r.FirstDelivery, r.LastDelivery = store.FromUnixNanos(first), store.FromUnixNanos(last)
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, q.p.mapErr("listing the jobs of "+q.name, err)
	}
	return out, nil
}

// current finds the job d names, if d is its current delivery. Caller holds q.mu.
func (q *queueStore) current(d store.Delivery) (*jobState, error) {
	js := q.jobs[d.Offset]
	if js == nil {
		return nil, fmt.Errorf("queue %s: job %d: %w", q.name, d.Offset, store.ErrNotFound)
	}
	if js.state == store.JobAvailable || js.epoch != d.Epoch {
		return nil, fmt.Errorf("queue %s: job %d epoch %d: %w", q.name, d.Offset, d.Epoch, store.ErrStaleDelivery)
	}
	return js, nil
}

// Unsend implements store.Queue: no write, the attempt unspent.
func (q *queueStore) Unsend(d store.Delivery) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	js, err := q.current(d)
	if err != nil {
		return err
	}
	if js.state != store.JobDelivering {
		return fmt.Errorf("queue %s: job %d is leased, not being sent: %w", q.name, d.Offset, store.ErrStaleDelivery)
	}
	q.epoch++
	q.avail++
	js.state, js.epoch, js.holder = store.JobAvailable, q.epoch, ""
	return nil
}

// Lease implements store.Queue: exactly one UPDATE, because the attempt
// count must survive a restart; relieving, so it may use the reserve.
func (q *queueStore) Lease(d store.Delivery, now, deadline time.Time) (store.Job, error) {
	q.mu.Lock()
	js, err := q.current(d)
	if err != nil {
		q.mu.Unlock()
		return store.Job{}, err
	}
	if js.state == store.JobLeased {
		q.mu.Unlock()
		return q.readJob(d.Offset)
	}
	q.mu.Unlock()
	var j store.Job
	err = q.p.w.do(classConnected, true, false, func(t *wtx) error {
		if _, err := t.exec(t.c.queueLease, store.UnixNanos(now), store.UnixNanos(now), q.id, int64(d.Offset)); err != nil {
			return err
		}
		var err error
		j, err = scanJob(t.c.queueGet.QueryRow(q.id, int64(d.Offset)).Scan)
		if err != nil {
			return t.dbFail(err)
		}
		return nil
	})
	if err != nil {
		return store.Job{}, q.p.mapErr(fmt.Sprintf("leasing job %d on %s", d.Offset, q.name), err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if js := q.jobs[d.Offset]; js != nil && js.epoch == d.Epoch {
		js.state, js.deadline, js.attempts = store.JobLeased, deadline, j.Attempts
	}
	return j, nil
}

// Resolve implements store.Queue: the job leaves for good (relieving).
func (q *queueStore) Resolve(d store.Delivery) error {
	q.mu.Lock()
	js, err := q.current(d)
	q.mu.Unlock()
	if err != nil {
		return err
	}
	size := js.size
	err = q.p.w.do(classConnected, true, false, func(t *wtx) error {
		res, err := t.exec(t.c.queueDelete, q.id, int64(d.Offset))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("queue %s: job %d: %w", q.name, d.Offset, store.ErrNotFound)
		}
		if err := q.removeJob(t, size); err != nil {
			return err
		}
		t.after(func() { q.removed(d.Offset) })
		return nil
	})
	return q.p.mapErr(fmt.Sprintf("resolving job %d on %s", d.Offset, q.name), err)
}

// Settle implements store.Queue: every lease's UPDATE and every
// resolution's DELETE in one transaction, so that the answers of several
// workers are one commit. The in-memory state moves only after it, as in
// Lease and Resolve. A transaction that fails as a whole is tried again one
// call at a time, so that each entry has its own outcome.
func (q *queueStore) Settle(leases []store.LeaseOf, resolves []store.Delivery) ([]store.Job, []error) {
	jobs := make([]store.Job, len(leases))
	errs := make([]error, len(leases)+len(resolves))
	if len(leases)+len(resolves) == 1 {
		if len(leases) == 1 {
			jobs[0], errs[0] = q.Lease(leases[0].D, leases[0].Now, leases[0].Deadline)
		} else {
			errs[0] = q.Resolve(resolves[0])
		}
		return jobs, errs
	}
	// What the transaction writes: the leases not yet leased (a second
	// Lease of a delivery changes nothing), the resolutions of current
	// deliveries with the size each frees.
	var lease, again []int
	sizes := make([]int64, len(resolves))
	var resolve []int
	q.mu.Lock()
	for i, l := range leases {
		js, err := q.current(l.D)
		switch {
		case err != nil:
			errs[i] = err
		case js.state == store.JobLeased:
			again = append(again, i)
		default:
			lease = append(lease, i)
		}
	}
	for k, d := range resolves {
		js, err := q.current(d)
		if err != nil {
			errs[len(leases)+k] = err
			continue
		}
		sizes[k] = js.size
		resolve = append(resolve, k)
	}
	q.mu.Unlock()
	err := q.p.w.do(classConnected, true, false, func(t *wtx) error {
		for _, i := range lease {
			l := leases[i]
			if _, err := t.exec(t.c.queueLease, store.UnixNanos(l.Now), store.UnixNanos(l.Now), q.id, int64(l.D.Offset)); err != nil {
				return err
			}
			var err error
			if jobs[i], err = scanJob(t.c.queueGet.QueryRow(q.id, int64(l.D.Offset)).Scan); err != nil {
				return t.dbFail(err)
			}
		}
		for _, k := range resolve {
			d := resolves[k]
			res, err := t.exec(t.c.queueDelete, q.id, int64(d.Offset))
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return fmt.Errorf("queue %s: job %d: %w", q.name, d.Offset, store.ErrNotFound)
			}
			if err := q.removeJob(t, sizes[k]); err != nil {
				return err
			}
			t.after(func() { q.removed(d.Offset) })
		}
		return nil
	})
	if err != nil {
		// One at a time, each with its own outcome.
		for _, i := range lease {
			jobs[i], errs[i] = q.Lease(leases[i].D, leases[i].Now, leases[i].Deadline)
		}
		for _, k := range resolve {
			errs[len(leases)+k] = q.Resolve(resolves[k])
		}
	} else {
		q.mu.Lock()
		for _, i := range lease {
			d := leases[i].D
			if js := q.jobs[d.Offset]; js != nil && js.epoch == d.Epoch {
				js.state, js.deadline, js.attempts = store.JobLeased, leases[i].Deadline, jobs[i].Attempts
			}
		}
		q.mu.Unlock()
	}
	for _, i := range again {
		jobs[i], errs[i] = q.readJob(leases[i].D.Offset)
	}
	return jobs, errs
}

// removeJob moves the queue's counters for a job its transaction deleted:
// the floor is the lowest unresolved offset (next when none is left), stored
// in the same transaction as the deletion.
func (q *queueStore) removeJob(t *wtx, size int64) error {
	return q.removedRows(t, t.c.queueMin, 1, size)
}

func (q *queueStore) removed(off uint64) {
	q.mu.Lock()
	if js := q.jobs[off]; js != nil && js.state == store.JobAvailable {
		q.avail--
	}
	delete(q.jobs, off)
	q.mu.Unlock()
}

// Release implements store.Queue: no write; the job is available again
// after its backoff gap and the old delivery is dead.
func (q *queueStore) Release(d store.Delivery, gapFrom time.Time) (store.Job, error) {
	q.mu.Lock()
	js, err := q.current(d)
	if err != nil {
		q.mu.Unlock()
		return store.Job{}, err
	}
	q.epoch++
	q.avail++
	js.state, js.epoch, js.holder, js.deadline = store.JobAvailable, q.epoch, "", time.Time{}
	js.availableAt = time.Time{}
	if q.backoff != nil {
		if gap := q.backoff(js.attempts); gap > 0 {
			js.availableAt = gapFrom.Add(gap)
		}
	}
	q.mu.Unlock()
	return q.readJob(d.Offset)
}

// ExpiredLeases implements store.Queue: no database access at all.
func (q *queueStore) ExpiredLeases(now time.Time) []store.Delivery {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []store.Delivery
	for off, js := range q.jobs {
		if js.state == store.JobLeased && js.deadline.Before(now) {
			out = append(out, store.Delivery{Offset: off, Epoch: js.epoch})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Offset < out[j].Offset })
	return out
}

// ExpireOlderThan implements store.Queue.
func (q *queueStore) ExpireOlderThan(t time.Time, max int) ([]store.Job, error) {
	if max <= 0 || t.IsZero() {
		return nil, nil
	}
	var out []store.Job
	var from uint64
	for len(out) < max {
		var jobs []store.Job
		err := q.p.readConn(func(c *conn) error {
			var err error
			jobs, err = queryJobs(c.queueExpired, q.id, int64(from), store.UnixNanos(t), max+16)
			return err
		})
		if err != nil {
			return nil, q.p.mapErr("listing expired jobs on "+q.name, err)
		}
		q.mu.Lock()
		for _, j := range jobs {
			if js := q.jobs[j.Offset]; js != nil && js.state == store.JobAvailable && len(out) < max {
				out = append(out, j)
			}
		}
		q.mu.Unlock()
		if len(jobs) < max+16 {
			break
		}
		from = jobs[len(jobs)-1].Offset + 1
	}
	return out, nil
}

// State implements store.Queue.
func (q *queueStore) State(off uint64) (store.JobState, uint64, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	js := q.jobs[off]
	if js == nil {
		return 0, 0, false
	}
	return js.state, js.epoch, true
}

// DeadLetter implements store.Queue: out of queue_items and into the
// dead-letter channel at its next offset in one transaction, using the
// reserve if it must and checking no channel bound. On failure neither half
// happened and the dead-letter channel's offset is handed back (its pending
// counters are reset with the rollback).
func (q *queueStore) DeadLetter(d store.Delivery, topic, reason string, now time.Time) (store.Record, error) {
	q.mu.Lock()
	js := q.jobs[d.Offset]
	var err error
	switch {
	case js == nil:
		err = fmt.Errorf("queue %s: job %d: %w", q.name, d.Offset, store.ErrNotFound)
	case d.Epoch == 0 && js.state != store.JobAvailable:
		err = fmt.Errorf("queue %s: job %d is out with a worker: %w", q.name, d.Offset, store.ErrStaleDelivery)
	case d.Epoch != 0 && (js.state == store.JobAvailable || js.epoch != d.Epoch):
		err = fmt.Errorf("queue %s: job %d epoch %d: %w", q.name, d.Offset, d.Epoch, store.ErrStaleDelivery)
	}
	var size int64
	var restore func()
	if err == nil {
		size = js.size
		if js.state == store.JobAvailable {
			// Not offered while it moves; back as it was if the move fails.
			prev := *js
			q.epoch++
			q.avail--
			js.state, js.epoch = store.JobDelivering, q.epoch
			restore = func() {
				q.mu.Lock()
				*js = prev
				q.avail++
				q.mu.Unlock()
			}
		}
	}
	q.mu.Unlock()
	if err != nil {
		return store.Record{}, err
	}
	var out store.Record
	err = q.p.w.do(classConnected, true, true, func(t *wtx) error {
		j, err := scanJob(t.c.queueGet.QueryRow(q.id, int64(d.Offset)).Scan)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("queue %s: job %d: %w", q.name, d.Offset, store.ErrNotFound)
		}
		if err != nil {
			return t.dbFail(err)
		}
		o := op{pub: pubAppend, ch: q.dlq.channel, rec: store.DeadLetterRecord(q.name, &j, topic, reason, now), unbounded: true}
		t.w.execPublish(t, &o)
		if t.err != nil {
			return &dbError{t.err}
		}
		if _, err := t.exec(t.c.queueDelete, q.id, int64(d.Offset)); err != nil {
			return err
		}
		if err := q.removeJob(t, size); err != nil {
			return err
		}
		out = o.out
		t.after(func() { q.removed(d.Offset) })
		return nil
	})
	if err != nil {
		if restore != nil {
			restore()
		}
		return store.Record{}, q.p.mapErr(fmt.Sprintf("dead-lettering job %d of %s", d.Offset, q.name), err)
	}
	return out, nil
}
