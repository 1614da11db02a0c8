// Package stats holds the arithmetic of the harness: the median and range of
// repeated runs, the ratio of two brokers taken pair by pair, and a latency
// histogram cheap enough to record every message into.
package stats

import (
	"encoding/json"
	"math"
	"slices"
)

// Summary is what repeated runs of one measurement came to.
type Summary struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// Summarize takes the median and the range of xs, ignoring NaNs (a run that
// produced no value). With nothing left it returns a Summary with N = 0 and
// NaN figures, which the report prints as a dash.
func Summarize(xs []float64) Summary {
	vals := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			vals = append(vals, x)
		}
	}
	if len(vals) == 0 {
		return Summary{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	slices.Sort(vals)
	n := len(vals)
	median := vals[n/2]
	if n%2 == 0 {
		median = (vals[n/2-1] + vals[n/2]) / 2
	}
	return Summary{Median: median, Min: vals[0], Max: vals[n-1], N: n}
}

// PairRatios divides a[i] by b[i] for each repetition both completed. Runs
// alternate brokers (A B A B), so pair i ran under the same conditions as
// nearly as the machine allows, and its ratio cancels what drifted between
// repetitions - which a ratio of the two medians would not.
func PairRatios(a, b []float64) []float64 {
	n := min(len(a), len(b))
	out := make([]float64, 0, n)
	for i := range n {
		if math.IsNaN(a[i]) || math.IsNaN(b[i]) || b[i] == 0 {
			continue
		}
		out = append(out, a[i]/b[i])
	}
	return out
}

// summaryJSON is Summary with room for null: JSON has no NaN.
type summaryJSON struct {
	Median *float64 `json:"median"`
	Min    *float64 `json:"min"`
	Max    *float64 `json:"max"`
	N      int      `json:"n"`
}

func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

func orNaN(x *float64) float64 {
	if x == nil {
		return math.NaN()
	}
	return *x
}

// MarshalJSON writes a figure no run produced (NaN) as null.
func (s Summary) MarshalJSON() ([]byte, error) {
	return json.Marshal(summaryJSON{Median: finite(s.Median), Min: finite(s.Min), Max: finite(s.Max), N: s.N})
}

// UnmarshalJSON reads null back as NaN.
func (s *Summary) UnmarshalJSON(b []byte) error {
	var j summaryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = Summary{Median: orNaN(j.Median), Min: orNaN(j.Min), Max: orNaN(j.Max), N: j.N}
	return nil
}
