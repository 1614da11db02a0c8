// Package report turns the runs of a benchmark into what people read: the
// medians and ranges per broker, the Sagüin/peer ratios taken pair by pair,
// a JSON document with every run in it, a Markdown table, and an SVG chart.
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/saguin-edge/saguin/bench/machine"
	"github.com/saguin-edge/saguin/bench/scenario"
	"github.com/saguin-edge/saguin/bench/stats"
)

// Broker names a peer as it ran.
type Broker struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Method is how the figures were taken.
type Method struct {
	Warmup      string `json:"warmup"`
	Window      string `json:"window"`
	Repetitions int    `json:"repetitions"`
	Order       string `json:"order"`
}

// Report is one invocation of the harness.
type Report struct {
	Profile     string              `json:"profile"`
	Command     string              `json:"command"`
	Started     time.Time           `json:"started"`
	Finished    time.Time           `json:"finished"`
	Machine     machine.Description `json:"machine"`
	Method      Method              `json:"method"`
	Brokers     []Broker            `json:"brokers"`
	Unavailable map[string]string   `json:"unavailable,omitempty"` // broker -> why it did not run
	Base        string              `json:"base"`                  // the broker every ratio divides
	Cases       []Case              `json:"cases"`
	Runs        []scenario.Run      `json:"runs"`
}

// Case is one case's figures across brokers.
type Case struct {
	Name     string            `json:"name"`
	Scenario string            `json:"scenario"`
	Measures string            `json:"measures"`
	Metrics  []scenario.Metric `json:"metrics"`
	// Figures[metric][broker] summarizes that broker's repetitions.
	Figures map[string]map[string]stats.Summary `json:"figures"`
	// Ratios[metric][peer] summarizes base/peer, repetition by repetition.
	Ratios map[string]map[string]stats.Summary `json:"ratios"`
	Errors []string                            `json:"errors,omitempty"`
}

// Build summarizes runs. base is the broker ratios are taken for (Sagüin);
// every other broker in brokers is a peer it is divided by.
func Build(cases []scenario.Case, brokers []Broker, base string, runs []scenario.Run) []Case {
	var out []Case
	for _, c := range cases {
		rc := Case{Name: c.Name, Scenario: c.Scenario, Measures: c.Measures, Metrics: c.AllMetrics(),
			Figures: map[string]map[string]stats.Summary{}, Ratios: map[string]map[string]stats.Summary{}}
		series := map[string]map[string][]float64{} // metric -> broker -> value by repetition
		for _, r := range runs {
			if r.Case != c.Name {
				continue
			}
			if r.Err != "" {
				rc.Errors = append(rc.Errors, fmt.Sprintf("%s rep %d: %s", r.Broker, r.Rep, r.Err))
			}
			for _, m := range rc.Metrics {
				if series[m.Key] == nil {
					series[m.Key] = map[string][]float64{}
				}
				x, ok := r.Values[m.Key]
				if !ok {
					x = nan
				}
				s := series[m.Key][r.Broker]
				for len(s) < r.Rep-1 {
					s = append(s, nan)
				}
				series[m.Key][r.Broker] = append(s, x)
			}
		}
		for _, m := range rc.Metrics {
			rc.Figures[m.Key] = map[string]stats.Summary{}
			rc.Ratios[m.Key] = map[string]stats.Summary{}
			for _, b := range brokers {
				rc.Figures[m.Key][b.Name] = stats.Summarize(series[m.Key][b.Name])
				if b.Name != base {
					rc.Ratios[m.Key][b.Name] = stats.Summarize(stats.PairRatios(series[m.Key][base], series[m.Key][b.Name]))
				}
			}
		}
		out = append(out, rc)
	}
	return out
}

// WriteJSON writes the whole report, every run included.
func (r *Report) WriteJSON(path string) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the report: %w", err)
	}
	if err := os.WriteFile(path, append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// Peers are the brokers other than the base, in report order.
func (r *Report) Peers() []string {
	var out []string
	for _, b := range r.Brokers {
		if b.Name != r.Base {
			out = append(out, b.Name)
		}
	}
	return out
}

func (r *Report) brokerNames() []string {
	out := make([]string, len(r.Brokers))
	for i, b := range r.Brokers {
		out[i] = b.Name
	}
	return out
}

// nan stands for a figure a run did not produce.
var nan = func() float64 { var z float64; return z / z }()
