package memory

import (
	"fmt"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// qjob is one unresolved job with its volatile delivery state. Only job
// (record, attempts, first/last delivery) is ever written to a snapshot.
type qjob struct {
	job         store.Job
	state       store.JobState
	epoch       uint64 // per-record counter; 0 until first offered
	holder      string
	deadline    time.Time
	availableAt time.Time // end of the backoff gap
	gone        bool
}

// queueStore is a queue channel and its dead-letter channel. jobs is in
// offset order; resolved jobs are cleared in place and compacted away when
// they are half the slice. The dead-letter move holds the queue's lock and
// takes the log's inside it (queue -> log, never the reverse).
type queueStore struct {
	chanCore
	dlq *logStore

	maxBytes int64
	backoff  func(uint32) time.Duration
	jobs     []*qjob
	head     int // jobs[:head] are all gone
	gone     int
	byOffset map[uint64]*qjob
	depth    int
}

func newQueueStore(p *Provider, name string, maxBytes int64, dlq *logStore) *queueStore {
	return &queueStore{chanCore: newChanCore(p, name, "queue "+name), dlq: dlq, maxBytes: maxBytes, byOffset: map[uint64]*qjob{}}
}

// restore loads jobs: every one comes back available, with no epoch, holder
// or deadline whatever was stored (invariant 15), its attempts kept.
func (q *queueStore) restore(d *channelData) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.next, q.floor = d.next, d.floor
	for i, r := range d.records {
		j := &qjob{job: store.Job{Record: r, Attempts: d.jobs[i].attempts, FirstDelivery: d.jobs[i].first, LastDelivery: d.jobs[i].last}}
		q.jobs = append(q.jobs, j)
		q.byOffset[r.Offset] = j
		q.bytes += store.RecordSize(&r)
		q.depth++
	}
	q.p.chargeRelief(q.bytes)
	q.restoreHolds(d.holds)
	return nil
}

// Name implements store.Counters.
func (q *queueStore) Name() string { return q.name }

// Len implements store.Counters.
func (q *queueStore) Len() int { q.mu.Lock(); defer q.mu.Unlock(); return q.depth }

// Depth implements store.Queue.
func (q *queueStore) Depth() int { return q.Len() }

// SetMaxBytes implements store.Queue.
func (q *queueStore) SetMaxBytes(n int64) { q.mu.Lock(); q.maxBytes = n; q.mu.Unlock() }

// SetBackoff implements store.Queue.
func (q *queueStore) SetBackoff(gap func(uint32) time.Duration) {
	q.mu.Lock()
	q.backoff = gap
	q.mu.Unlock()
}

// DeadLetters implements store.Queue.
func (q *queueStore) DeadLetters() store.AppendLog { return q.dlq }

// Enqueue implements store.Queue.
func (q *queueStore) Enqueue(r store.Record) (store.Record, error) {
	size := store.RecordSize(&r)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.maxBytes > 0 && q.bytes+size > q.maxBytes {
		return store.Record{}, fmt.Errorf("queue %s: %d bytes unresolved, a %d-byte job passes max_bytes %d: %w", q.name, q.bytes, size, q.maxBytes, store.ErrChannelFull)
	}
	if err := q.p.charge(size); err != nil {
		return store.Record{}, fmt.Errorf("queue %s: %w", q.name, err)
	}
	q.enqueueLocked(&r, size)
	return r, nil
}

func (q *queueStore) enqueueLocked(r *store.Record, size int64) {
	r.Offset = q.next
	q.next++
	if q.depth == 0 {
		q.floor = r.Offset
	}
	j := &qjob{job: store.Job{Record: *r}}
	q.jobs = append(q.jobs, j)
	q.byOffset[r.Offset] = j
	q.bytes += size
	q.depth++
}

// Jobs implements store.Queue: one pass over the jobs under the lock.
func (q *queueStore) Jobs(max int) ([]store.ListedJob, error) {
	l := store.NewJobList(max)
	q.mu.Lock()
	for _, j := range q.jobs[q.head:] {
		if j.gone || !l.Wants(j.job.Attempts, j.job.Offset) {
			continue
		}
		row := store.ListedJob{Offset: j.job.Offset, Topic: j.job.Topic, Attempts: j.job.Attempts, State: j.state,
			FirstDelivery: j.job.FirstDelivery, LastDelivery: j.job.LastDelivery}
		if j.state != store.JobAvailable {
			row.Holder = j.holder
		}
		if j.state == store.JobLeased {
			row.LeaseUntil = j.deadline
		}
		l.Offer(row)
	}
	q.mu.Unlock()
	return l.Sorted(), nil
}

// Offer implements store.Queue.
func (q *queueStore) Offer(holder string, now time.Time) (store.Job, store.Delivery, bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i := q.head; i < len(q.jobs); i++ {
		j := q.jobs[i]
		if j.gone || j.state != store.JobAvailable || now.Before(j.availableAt) {
			continue
		}
		j.state = store.JobDelivering
		j.epoch++
		j.holder = holder
		return j.job, store.Delivery{Offset: j.job.Offset, Epoch: j.epoch}, true, nil
	}
	return store.Job{}, store.Delivery{}, false, nil
}

// current finds the job d names, fenced on its epoch.
func (q *queueStore) current(d store.Delivery) (*qjob, error) {
	j, ok := q.byOffset[d.Offset]
	if !ok {
		return nil, fmt.Errorf("queue %s: job %d: %w", q.name, d.Offset, store.ErrNotFound)
	}
	if d.Epoch == 0 {
		if j.state != store.JobAvailable {
			return nil, fmt.Errorf("queue %s: job %d is out with a worker: %w", q.name, d.Offset, store.ErrStaleDelivery)
		}
		return j, nil
	}
	if j.epoch != d.Epoch || j.state == store.JobAvailable {
		return nil, fmt.Errorf("queue %s: job %d delivery %d is not current: %w", q.name, d.Offset, d.Epoch, store.ErrStaleDelivery)
	}
	return j, nil
}

// delivered is current for the calls that need the job out with a worker
// (Lease, Resolve, Release): a delivery with epoch 0 names no delivery.
func (q *queueStore) delivered(d store.Delivery) (*qjob, error) {
	j, err := q.current(d)
	if err != nil {
		return nil, err
	}
	if d.Epoch == 0 {
		return nil, fmt.Errorf("queue %s: job %d is not out with a worker: %w", q.name, d.Offset, store.ErrStaleDelivery)
	}
	return j, nil
}

// Unsend implements store.Queue.
func (q *queueStore) Unsend(d store.Delivery) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	j, err := q.current(d)
	if err != nil {
		return err
	}
	if j.state != store.JobDelivering || d.Epoch == 0 {
		return fmt.Errorf("queue %s: job %d was received, it cannot be unsent: %w", q.name, d.Offset, store.ErrStaleDelivery)
	}
	j.state = store.JobAvailable
	j.epoch++
	j.holder = ""
	return nil
}

// Lease implements store.Queue.
func (q *queueStore) Lease(d store.Delivery, now, deadline time.Time) (store.Job, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	j, err := q.delivered(d)
	if err != nil {
		return store.Job{}, err
	}
	if j.state == store.JobLeased {
		return j.job, nil
	}
	j.job.Attempts++
	if j.job.FirstDelivery.IsZero() {
		j.job.FirstDelivery = now
	}
	j.job.LastDelivery = now
	j.state = store.JobLeased
	j.deadline = deadline
	return j.job, nil
}

// Resolve implements store.Queue.
func (q *queueStore) Resolve(d store.Delivery) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	j, err := q.delivered(d)
	if err != nil {
		return err
	}
	q.removeLocked(j)
	return nil
}

// Settle implements store.Queue: nothing waits on a disk, so it is each
// call in turn.
func (q *queueStore) Settle(leases []store.LeaseOf, resolves []store.Delivery) ([]store.Job, []error) {
	jobs := make([]store.Job, len(leases))
	errs := make([]error, len(leases)+len(resolves))
	for i, l := range leases {
		jobs[i], errs[i] = q.Lease(l.D, l.Now, l.Deadline)
	}
	for k, d := range resolves {
		errs[len(leases)+k] = q.Resolve(d)
	}
	return jobs, errs
}

// removeLocked takes a job out of the queue and returns its bytes.
func (q *queueStore) removeLocked(j *qjob) {
	size := store.RecordSize(&j.job.Record)
	delete(q.byOffset, j.job.Offset)
	j.gone = true
	j.job = store.Job{}
	q.bytes -= size
	q.depth--
	q.gone++
	q.p.refund(size)
	for q.head < len(q.jobs) && q.jobs[q.head].gone {
		q.head++
	}
	if q.head < len(q.jobs) {
		q.floor = q.jobs[q.head].job.Offset
	} else {
		q.floor = q.next
	}
	if q.gone >= len(q.jobs)/2 {
		live := make([]*qjob, 0, 2*q.depth+16)
		for _, x := range q.jobs {
			if !x.gone {
				live = append(live, x)
			}
		}
		q.jobs, q.head, q.gone = live, 0, 0
	}
}

// Release implements store.Queue.
func (q *queueStore) Release(d store.Delivery, gapFrom time.Time) (store.Job, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	j, err := q.delivered(d)
	if err != nil {
		return store.Job{}, err
	}
	j.state = store.JobAvailable
	j.epoch++
	j.holder = ""
	j.deadline = time.Time{}
	j.availableAt = time.Time{}
	if q.backoff != nil {
		if gap := q.backoff(j.job.Attempts); gap > 0 {
			j.availableAt = gapFrom.Add(gap)
		}
	}
	return j.job, nil
}

// ExpiredLeases implements store.Queue.
func (q *queueStore) ExpiredLeases(now time.Time) []store.Delivery {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []store.Delivery
	for i := q.head; i < len(q.jobs); i++ {
		j := q.jobs[i]
		if !j.gone && j.state == store.JobLeased && j.deadline.Before(now) {
			out = append(out, store.Delivery{Offset: j.job.Offset, Epoch: j.epoch})
		}
	}
	return out
}

// ExpireOlderThan implements store.Queue.
func (q *queueStore) ExpireOlderThan(t time.Time, max int) ([]store.Job, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []store.Job
	for i := q.head; i < len(q.jobs) && len(out) < max; i++ {
		j := q.jobs[i]
		if j.gone || j.state != store.JobAvailable || j.job.Time.IsZero() || !j.job.Time.Before(t) {
			continue
		}
		out = append(out, j.job)
	}
	return out, nil
}

// State implements store.Queue.
func (q *queueStore) State(offset uint64) (store.JobState, uint64, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	j, ok := q.byOffset[offset]
	if !ok {
		return 0, 0, false
	}
	return j.state, j.epoch, true
}

// DeadLetter implements store.Queue: under the queue's lock the record is
// appended to the dead-letter channel (taking its lock inside) and the job
// removed. On memory neither half can fail once the job is found, so the move
// is whole or, when the delivery is stale, not begun.
func (q *queueStore) DeadLetter(d store.Delivery, topic, reason string, now time.Time) (store.Record, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	j, err := q.current(d)
	if err != nil {
		return store.Record{}, err
	}
	rec := store.DeadLetterRecord(q.name, &j.job, topic, reason, now)
	rec = q.dlq.appendRelief(rec)
	q.removeLocked(j)
	return rec, nil
}

// ReleaseHeld implements store.Holder: the held record is enqueued under the
// same lock that forgets the hold.
func (q *queueStore) ReleaseHeld(clientID string, packetID uint16) (store.Record, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	r, size, err := q.takeHeld(clientID, packetID, q.maxBytes)
	if err != nil {
		return store.Record{}, err
	}
	q.enqueueLocked(&r, size)
	return r, nil
}

// copyOut copies the queue for a snapshot: records with their attempts and
// delivery times, nothing of who holds them.
func (q *queueStore) copyOut() channelData {
	q.mu.Lock()
	defer q.mu.Unlock()
	d := channelData{next: q.next, floor: q.floor, holds: q.holds.list()}
	for i := q.head; i < len(q.jobs); i++ {
		if j := q.jobs[i]; !j.gone {
			d.records = append(d.records, j.job.Record)
			d.jobs = append(d.jobs, jobMeta{attempts: j.job.Attempts, first: j.job.FirstDelivery, last: j.job.LastDelivery})
		}
	}
	return d
}

var _ store.Queue = (*queueStore)(nil)
