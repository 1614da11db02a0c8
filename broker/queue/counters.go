package queue

import "sync/atomic"

// Counters are the queue series of RFC 0005 "The catalogue" / Queues, kept
// as plain atomics an ops package reads with no lock of the engine's held.
// Every ended delivery lands in exactly one of Acknowledged, Returned,
// Redelivered and DeadLettered, so over ended deliveries
// Delivered = Acknowledged + Returned + Redelivered + DeadLettered, and the
// difference is Inflight (checklist C15; reading E23: DeadLettered counts
// every move, including an expired job no worker ever held, for which the
// identity does not hold).
type Counters struct {
	// Published: work stored - a publish enqueued, or a QoS 2 one
	// released into the queue (saguin_published_total{channel}).
	Published atomic.Uint64
	// Delivered: a worker is known to have received a job (its PUBACK or
	// its answer); a job handed back before that is not counted (C15.3).
	Delivered atomic.Uint64
	// Acknowledged: an ack resolved the job.
	Acknowledged atomic.Uint64
	// Returned: a return made the job available again.
	Returned atomic.Uint64
	// Redelivered: a visibility timeout, or the worker's connection or
	// session ending, made a leased job available again.
	Redelivered atomic.Uint64
	// DeadLettered: a job moved to the dead-letter channel, for either
	// reason.
	DeadLettered atomic.Uint64
	// Expired: a job dead-lettered for job_expires_after, counted beside
	// whichever release it was.
	Expired atomic.Uint64
	// RetainIgnored: a queue publish with RETAIN set, taken as ordinary
	// work with the flag dropped.
	RetainIgnored atomic.Uint64
	// Inflight: jobs delivered (leased) whose delivery has not ended:
	// Delivered less the four endings.
	Inflight atomic.Int64
	// Refused: publishes refused 0x97 at max_bytes.
	Refused atomic.Uint64
	// Ignored: answers (ack/return) that named no current delivery of the
	// answering session, or carried another payload.
	Ignored atomic.Uint64
}
