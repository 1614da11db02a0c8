package stats

import (
	"encoding/json"
	"math"
	"sync"
	"testing"
	"time"
)

func TestSummaryIsMedianAndRange(t *testing.T) {
	s := Summarize([]float64{5, 1, 9})
	if s.Median != 5 || s.Min != 1 || s.Max != 9 || s.N != 3 {
		t.Fatalf("got %+v", s)
	}
}

func TestSummaryOfEvenCountAveragesTheMiddlePair(t *testing.T) {
	if s := Summarize([]float64{4, 1, 3, 2}); s.Median != 2.5 {
		t.Fatalf("median %v, want 2.5", s.Median)
	}
}

func TestSummaryLeavesOutFailedRuns(t *testing.T) {
	s := Summarize([]float64{math.NaN(), 7, math.NaN()})
	if s.N != 1 || s.Median != 7 {
		t.Fatalf("got %+v", s)
	}
	if s := Summarize([]float64{math.NaN()}); s.N != 0 || !math.IsNaN(s.Median) {
		t.Fatalf("no runs gave %+v", s)
	}
}

func TestRatiosArePairedByRepetition(t *testing.T) {
	// The medians' ratio would be 20/10 = 2; the pairs say 3, 1 and 2.
	got := PairRatios([]float64{30, 10, 20}, []float64{10, 10, 10})
	want := []float64{3, 1, 2}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestRatiosSkipAPairMissingEitherSide(t *testing.T) {
	got := PairRatios([]float64{1, math.NaN(), 4}, []float64{2, 2, 0})
	if len(got) != 1 || got[0] != 0.5 {
		t.Fatalf("got %v, want [0.5]", got)
	}
}

func TestHistogramQuantileIsWithinItsPrecision(t *testing.T) {
	var h Histogram
	for i := 1; i <= 100000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {0.999, 99900 * time.Microsecond}} {
		got := h.Quantile(c.q)
		if diff := math.Abs(float64(got-c.want)) / float64(c.want); diff > 1.0/subCount {
			t.Errorf("q%v = %v, want %v within %.1f%%", c.q, got, c.want, 100.0/subCount)
		}
	}
}

func TestHistogramBucketsCoverEveryValueInOrder(t *testing.T) {
	prev := -1
	for _, v := range []int64{0, 1, 63, 64, 65, 127, 128, 1 << 20, 1<<40 + 12345, math.MaxInt64} {
		b := bucketOf(v)
		if b <= prev && v > 0 {
			t.Fatalf("bucket of %d is %d, not above %d", v, b, prev)
		}
		if b >= buckets {
			t.Fatalf("bucket of %d is %d, past the last (%d)", v, b, buckets-1)
		}
		if lo := lowerBound(b); lo > v {
			t.Fatalf("value %d in bucket %d whose lower bound is %d", v, b, lo)
		}
		prev = b
	}
}

func TestEmptyHistogramHasNoQuantile(t *testing.T) {
	var h Histogram
	if h.Quantile(0.5) != -1 {
		t.Fatal("an empty histogram gave a quantile")
	}
}

func TestHistogramResetForgets(t *testing.T) {
	var h Histogram
	h.Record(time.Second)
	h.Reset()
	h.Record(time.Millisecond)
	if h.Count() != 1 || h.Quantile(1) > 2*time.Millisecond {
		t.Fatalf("count %d, max %v after reset", h.Count(), h.Quantile(1))
	}
}

func TestHistogramRecordsFromManyGoroutines(t *testing.T) {
	var h Histogram
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				h.Record(time.Millisecond)
			}
		})
	}
	wg.Wait()
	if h.Count() != 8000 {
		t.Fatalf("count %d, want 8000", h.Count())
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	var h Histogram
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h.Record(time.Duration(i))
	}
}

func TestSummaryWithoutRunsEncodesAsNullAndReadsBack(t *testing.T) {
	raw, err := json.Marshal(Summarize(nil))
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != `{"median":null,"min":null,"max":null,"n":0}` {
		t.Fatalf("encoded %s", raw)
	}
	var back Summary
	if err := json.Unmarshal(raw, &back); err != nil || !math.IsNaN(back.Median) {
		t.Fatalf("read back %+v, %v", back, err)
	}
}
