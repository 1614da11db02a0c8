package stats

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// subBits sets the histogram's precision: each power of two is split into
// 2^subBits buckets, so a recorded value is off by at most 1/64 (1.6%) - finer
// than the run-to-run spread of any latency worth reporting.
const subBits = 6

const (
	subCount = 1 << subBits
	// buckets covers every int64: values below subCount get a bucket each, and
	// each further power of two gets subCount.
	buckets = (64 - subBits + 1) * subCount
)

// Histogram counts durations in log-linear buckets. Record is one atomic add,
// safe from any number of goroutines, and allocates nothing, so a thousand
// subscriber readers can record every delivery into one histogram.
type Histogram struct {
	counts [buckets]atomic.Uint64
	total  atomic.Uint64
}

func bucketOf(v int64) int {
	if v < subCount {
		if v < 0 {
			return 0
		}
		return int(v)
	}
	exp := bits.Len64(uint64(v)) - 1 - subBits // how far v is shifted to keep subBits+1 bits
	return (exp+1)*subCount + int(uint64(v)>>uint(exp)) - subCount
}

// lowerBound is the smallest value bucket i holds.
func lowerBound(i int) int64 {
	if i < subCount {
		return int64(i)
	}
	exp := i/subCount - 1
	return int64(i%subCount+subCount) << uint(exp)
}

// Record counts one duration.
func (h *Histogram) Record(d time.Duration) {
	h.counts[bucketOf(int64(d))].Add(1)
	h.total.Add(1)
}

// Count is how many durations were recorded.
func (h *Histogram) Count() uint64 { return h.total.Load() }

// Reset forgets everything recorded; the measured window starts from here.
// Records racing with it land on one side or the other.
func (h *Histogram) Reset() {
	for i := range h.counts {
		h.counts[i].Store(0)
	}
	h.total.Store(0)
}

// Quantile returns the duration below which a fraction q of the recorded
// values fall, as the midpoint of the bucket that holds it; NaN-like -1 when
// nothing was recorded.
func (h *Histogram) Quantile(q float64) time.Duration {
	var snapshot [buckets]uint64
	var total uint64
	for i := range h.counts {
		snapshot[i] = h.counts[i].Load()
		total += snapshot[i]
	}
	if total == 0 {
		return -1
	}
	rank := uint64(math.Ceil(q * float64(total)))
	if rank == 0 {
		rank = 1
	}
	var seen uint64
	for i, c := range snapshot {
		seen += c
		if seen >= rank {
			lo := lowerBound(i)
			hi := lo
			if i+1 < buckets {
				hi = lowerBound(i+1) - 1
			}
			return time.Duration(lo + (hi-lo)/2)
		}
	}
	return time.Duration(lowerBound(buckets - 1))
}
