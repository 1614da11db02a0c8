package store

import (
	"container/heap"
	"slices"
	"time"
)

// ListedJob is one unresolved job as /v1/operations/queues/<channel> lists
// it (RFC 0005): never its payload, which the listing never reads.
type ListedJob struct {
	Offset   uint64
	Topic    string
	Attempts uint32
	State    JobState
	// Holder is the worker's client id while the job is DELIVERING or
	// LEASED; LeaseUntil the visibility deadline while LEASED.
	Holder        string
	LeaseUntil    time.Time
	FirstDelivery time.Time // zero: never delivered
	LastDelivery  time.Time
}

// ListedBefore is the listing's order (checklist AMB-18): most attempts
// first - the jobs that keep failing - then the oldest.
func ListedBefore(a, b *ListedJob) bool {
	if a.Attempts != b.Attempts {
		return a.Attempts > b.Attempts
	}
	return a.Offset < b.Offset
}

// JobList keeps the first max jobs in ListedBefore order of those offered,
// in O(max) memory however many are offered: a queue holds what its
// max_bytes allows, and a listing must not copy all of it.
type JobList struct {
	max  int
	kept jobHeap // the worst kept at the root
}

// NewJobList keeps at most max jobs (none when max <= 0).
func NewJobList(max int) *JobList { return &JobList{max: max} }

// Wants reports whether a job with these attempts and offset would be kept,
// so a provider builds the rest of the row only for one that is.
func (l *JobList) Wants(attempts uint32, offset uint64) bool {
	if l.max <= 0 {
		return false
	}
	if len(l.kept) < l.max {
		return true
	}
	return ListedBefore(&ListedJob{Attempts: attempts, Offset: offset}, &l.kept[0])
}

// Offer keeps j if it is among the first max so far.
func (l *JobList) Offer(j ListedJob) {
	if !l.Wants(j.Attempts, j.Offset) {
		return
	}
	if len(l.kept) == l.max {
		heap.Pop(&l.kept)
	}
	heap.Push(&l.kept, j)
}

// Sorted is what was kept, in ListedBefore order.
func (l *JobList) Sorted() []ListedJob {
	out := slices.Clone([]ListedJob(l.kept))
	slices.SortFunc(out, func(a, b ListedJob) int {
		if ListedBefore(&a, &b) {
			return -1
		}
		return 1
	})
	return out
}

// jobHeap is a heap whose root is the job listed last.
type jobHeap []ListedJob

func (h jobHeap) Len() int           { return len(h) }
func (h jobHeap) Less(i, j int) bool { return ListedBefore(&h[j], &h[i]) }
func (h jobHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *jobHeap) Push(x any)        { *h = append(*h, x.(ListedJob)) }
func (h *jobHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
