package report

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/saguin-edge/saguin/bench/scenario"
	"github.com/saguin-edge/saguin/bench/stats"
)

// WriteMarkdown writes the tables: every case's own figures with the ratios,
// then what each broker spent doing it, then anything that failed.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	peers := r.Peers()
	names := r.brokerNames()

	fmt.Fprintf(&b, "Profile **%s**, %s to %s UTC. `%s`\n\n", r.Profile,
		r.Started.UTC().Format("2006-01-02 15:04"), r.Finished.UTC().Format("15:04"), r.Command)
	fmt.Fprintf(&b, "Machine: %s.", r.Machine)
	var loads []float64
	for _, run := range r.Runs {
		if run.Load1 >= 0 {
			loads = append(loads, run.Load1)
		}
	}
	if l := stats.Summarize(loads); l.N > 0 {
		fmt.Fprintf(&b, " One-minute load average as each run began: median %.1f, %.1f-%.1f, on %d cores", l.Median, l.Min, l.Max, r.Machine.Cores)
		if l.Max > float64(r.Machine.Cores) {
			b.WriteString(" - other work was competing for the machine, which the tails of latency figures show first")
		}
		b.WriteString(".")
	}
	var others []float64
	again := 0
	for _, run := range r.Runs {
		if run.OthersCores >= 0 {
			others = append(others, run.OthersCores)
		}
		again += max(0, run.Attempts-1)
	}
	if o := stats.Summarize(others); o.N > 0 {
		fmt.Fprintf(&b, " Other processes took median %.2f cores, %.2f-%.2f, during the measured windows", o.Median, o.Min, o.Max)
		if again > 0 {
			fmt.Fprintf(&b, "; %d run(s) were made again for a busy window, the calmest kept", again)
		}
		b.WriteString(".")
	}
	b.WriteString("\n\n")
	var bl []string
	for _, br := range r.Brokers {
		bl = append(bl, fmt.Sprintf("%s %s", br.Name, br.Version))
	}
	fmt.Fprintf(&b, "Brokers: %s.", strings.Join(bl, "; "))
	for _, name := range sortedNames(r.Unavailable) {
		fmt.Fprintf(&b, " Not run: %s (%s).", name, r.Unavailable[name])
	}
	fmt.Fprintf(&b, "\n\nMethod: warm-up %s, measured window %s, %d repetition(s), %s. Each cell is the median of the repetitions with the min-max range; a ratio is %s ÷ peer taken repetition by repetition (its median and range). ↑ higher is better, ↓ lower is better.\n\n",
		r.Method.Warmup, r.Method.Window, r.Method.Repetitions, r.Method.Order, r.Base)

	// The figures table.
	b.WriteString("| case | figure |")
	for _, n := range names {
		fmt.Fprintf(&b, " %s |", n)
	}
	for _, p := range peers {
		fmt.Fprintf(&b, " %s/%s |", r.Base, p)
	}
	b.WriteString("\n|---|---|")
	b.WriteString(strings.Repeat("---:|", len(names)+len(peers)))
	b.WriteString("\n")
	for _, c := range r.Cases {
		for i, m := range c.Metrics {
			if isCommon(m) {
				continue
			}
			name := ""
			if i == 0 {
				name = "**" + c.Name + "**"
			}
			fmt.Fprintf(&b, "| %s | %s |", name, metricLabel(m))
			for _, n := range names {
				fmt.Fprintf(&b, " %s |", cell(c.Figures[m.Key][n]))
			}
			for _, p := range peers {
				fmt.Fprintf(&b, " %s |", ratioCell(c.Ratios[m.Key][p]))
			}
			b.WriteString("\n")
		}
	}

	// What it cost.
	b.WriteString("\nWhat each run cost: the broker's CPU seconds over the measured window, its peak resident memory over the whole run (VmHWM), and the load generator's own CPU seconds over the window (the two share the machine; one cell for all brokers, the median of their medians with the range across brokers).\n\n")
	b.WriteString("| case |")
	for _, n := range names {
		fmt.Fprintf(&b, " %s CPU s | %s peak MiB |", n, n)
	}
	b.WriteString(" generator CPU s |\n|---|")
	b.WriteString(strings.Repeat("---:|---:|", len(names)))
	b.WriteString("---:|\n")
	for _, c := range r.Cases {
		fmt.Fprintf(&b, "| %s |", c.Name)
		var gen []float64
		for _, n := range names {
			fmt.Fprintf(&b, " %s | %s |", cell(c.Figures["broker_cpu_s"][n]), cell(c.Figures["peak_rss_mib"][n]))
			if s := c.Figures["gen_cpu_s"][n]; s.N > 0 {
				gen = append(gen, s.Median)
			}
		}
		fmt.Fprintf(&b, " %s |\n", cell(stats.Summarize(gen)))
	}

	var failures []string
	for _, c := range r.Cases {
		failures = append(failures, c.Errors...)
	}
	if len(failures) > 0 {
		b.WriteString("\nRuns that failed (their figures are left out, a dash where none remained):\n\n")
		for _, f := range failures {
			fmt.Fprintf(&b, "- %s\n", oneLine(f))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteScenarios writes what each case measures, one line each.
func (r *Report) WriteScenarios(w io.Writer) error {
	var b strings.Builder
	for _, c := range r.Cases {
		fmt.Fprintf(&b, "- **%s**: %s.\n", c.Name, c.Measures)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func isCommon(m scenario.Metric) bool {
	switch m.Key {
	case "broker_cpu_s", "peak_rss_mib", "gen_cpu_s":
		return true
	}
	return false
}

func metricLabel(m scenario.Metric) string {
	arrow := "↑"
	if m.Better == scenario.LowerIsBetter {
		arrow = "↓"
	}
	if m.Unit == "" {
		return m.Label + " " + arrow
	}
	return fmt.Sprintf("%s (%s) %s", m.Label, m.Unit, arrow)
}

// cell is "median (min-max)", or a dash with no runs; one run has no range.
func cell(s stats.Summary) string {
	if s.N == 0 {
		return "-"
	}
	if s.N == 1 || s.Min == s.Max {
		return Number(s.Median)
	}
	return fmt.Sprintf("%s (%s-%s)", Number(s.Median), Number(s.Min), Number(s.Max))
}

func ratioCell(s stats.Summary) string {
	if s.N == 0 {
		return "-"
	}
	if s.N == 1 || s.Min == s.Max {
		return fmt.Sprintf("%.2f", s.Median)
	}
	return fmt.Sprintf("%.2f (%.2f-%.2f)", s.Median, s.Min, s.Max)
}

// Number writes a figure with three significant digits and a k or M suffix
// above ten thousand: 123k, 45.6k, 7890, 1.23, 0.0456.
func Number(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	abs := math.Abs(x)
	switch {
	case abs >= 10e6:
		return trim(fmt.Sprintf("%.3g", x/1e6)) + "M"
	case abs >= 10e3:
		return trim(fmt.Sprintf("%.3g", x/1e3)) + "k"
	case abs >= 1000:
		return fmt.Sprintf("%.0f", x)
	case abs == 0:
		return "0"
	default:
		return trim(fmt.Sprintf("%.3g", x))
	}
}

// trim undoes %g's exponent form for the sizes Number hands it.
func trim(s string) string {
	if strings.ContainsAny(s, "e") {
		var f float64
		fmt.Sscanf(s, "%g", &f)
		return fmt.Sprintf("%.0f", f)
	}
	return s
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

func sortedNames(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
