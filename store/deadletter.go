package store

import (
	"strconv"
	"time"
)

// Dead-letter header names (notes-0003 "Dead-lettering").
const (
	HeaderDLQChannel  = "saguin-dlq-channel"
	HeaderDLQOffset   = "saguin-dlq-offset"
	HeaderDLQAttempts = "saguin-dlq-attempts"
	HeaderDLQFirst    = "saguin-dlq-first"
	HeaderDLQLast     = "saguin-dlq-last"
	HeaderDLQAt       = "saguin-dlq-at"
	HeaderDLQReason   = "saguin-dlq-reason"
)

// DeadLetterRecord is the record a dead-letter move writes: the job's record
// (Message ID, payload, properties kept) on the rewritten topic, its own
// headers followed by the saguin-dlq-* headers. Times are Unix milliseconds
// in decimal, as saguin-timestamp is; first and last delivery are omitted for
// a job that was never delivered (an expired job dead-lettered at its first
// offer), as saguin-timestamp is for a record with no time. Both providers
// build the moved record with this one function so they cannot disagree.
func DeadLetterRecord(queue string, j *Job, topic, reason string, at time.Time) Record {
	r := j.Record
	r.Offset = 0
	r.Topic = topic
	h := make([]Header, 0, len(j.Headers)+7)
	h = append(h, j.Headers...)
	h = append(h,
		Header{HeaderDLQChannel, queue},
		Header{HeaderDLQOffset, strconv.FormatUint(j.Offset, 10)},
		Header{HeaderDLQAttempts, strconv.FormatUint(uint64(j.Attempts), 10)},
	)
	if !j.FirstDelivery.IsZero() {
		h = append(h, Header{HeaderDLQFirst, strconv.FormatInt(j.FirstDelivery.UnixMilli(), 10)})
	}
	if !j.LastDelivery.IsZero() {
		h = append(h, Header{HeaderDLQLast, strconv.FormatInt(j.LastDelivery.UnixMilli(), 10)})
	}
	h = append(h,
		Header{HeaderDLQAt, strconv.FormatInt(at.UnixMilli(), 10)},
		Header{HeaderDLQReason, reason},
	)
	r.Headers = h
	return r
}
