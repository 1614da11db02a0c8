// Command benchrun is the benchmark harness: it builds Sagüin from the tree
// and the mochi peer from its module, finds Mosquitto, runs every scenario
// on each of them in turn, and writes the results as JSON, a Markdown table
// and an SVG chart.
//
//	go run ./bench/cmd/benchrun -profile short
//	go run ./bench/cmd/benchrun -list                                  # the cases and what each measures
//	go run ./bench/cmd/benchrun -profile smoke -strict                 # CI
//	go run ./bench/cmd/benchrun -brokers saguin,mosquitto -scenarios pub-q1,latency-q1
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/saguin-edge/saguin/bench/machine"
	"github.com/saguin-edge/saguin/bench/peer"
	"github.com/saguin-edge/saguin/bench/report"
	"github.com/saguin-edge/saguin/bench/scenario"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("benchrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	profileName := fs.String("profile", "short", "smoke, short or full")
	brokerList := fs.String("brokers", "saguin,mosquitto,mochi", "brokers to compare, the first Sagüin one is the base of every ratio ("+strings.Join(peer.Names, ", ")+")")
	scenarioList := fs.String("scenarios", "", "scenarios or cases to run, comma-separated (default: every one)")
	outDir := fs.String("out", "bench/results", "directory for <profile>.json, .md and .svg")
	reps := fs.Int("reps", 0, "repetitions, overriding the profile's")
	window := fs.Duration("window", 0, "the measured window, overriding the profile's (10s is the full profile's, for a few cases of it)")
	warmup := fs.Duration("warmup", 0, "the warm-up before each window, overriding the profile's")
	calm := fs.Float64("calm", 0, "make a run again (up to 3 times, keeping the calmest) when other processes took more than this many cores during its window; 0 never does")
	strict := fs.Bool("strict", false, "exit 1 if a broker could not be prepared or any of Sagüin's runs failed (for CI); a peer's failed run is one of its results")
	list := fs.Bool("list", false, "print the profile's cases and what each measures, and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	prof, ok := scenario.Profiles[*profileName]
	if !ok {
		fmt.Fprintf(stderr, "benchrun: no profile %q (smoke, short, full)\n", *profileName)
		return 2
	}
	if *reps > 0 {
		prof.Repetitions = *reps
	}
	if *window < 0 || *warmup < 0 {
		fmt.Fprintln(stderr, "benchrun: -window and -warmup take a positive duration (0 keeps the profile's)")
		return 2
	}
	if *calm < 0 {
		fmt.Fprintln(stderr, "benchrun: -calm takes a number of cores, 0 or more")
		return 2
	}
	prof.Calm = *calm
	if *window > 0 {
		prof.Window = *window
	}
	if *warmup > 0 {
		prof.Warmup = *warmup
	}
	cases, err := scenario.Select(scenario.Cases(prof), split(*scenarioList))
	if err != nil {
		fmt.Fprintln(stderr, "benchrun:", err)
		return 2
	}
	if *list {
		for _, c := range cases {
			fmt.Fprintf(stdout, "%-16s %s\n", c.Name, c.Measures)
		}
		return 0
	}
	repo, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(stderr, "benchrun:", err)
		return 2
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	// Each idle connection is a descriptor on both sides, generator and broker.
	need := uint64(mostConns(cases)) + 256
	limit, err := peer.RaiseFileLimit(need)
	if err != nil {
		fmt.Fprintln(stderr, "benchrun: warning:", err)
	} else if limit < need {
		// A case that cannot hold its connections would fail every run and
		// say nothing about the brokers: it is left out, and said so.
		var kept []scenario.Case
		for _, c := range cases {
			if c.Connections > 0 && uint64(c.Connections)+256 > limit {
				fmt.Fprintf(stderr, "benchrun: warning: %s skipped: it holds %d connections and the open-file limit is %d (raise `ulimit -Hn`, or run as a user who may)\n", c.Name, c.Connections, limit)
				continue
			}
			kept = append(kept, c)
		}
		cases = kept
		if len(cases) == 0 {
			fmt.Fprintln(stderr, "benchrun: no case left to run")
			return 1
		}
	}
	// Scratch lives under bench/results/tmp (ignored by git) rather than in
	// TMPDIR: a tmpfs there would make a sqlite provider's fsync free.
	scratch := filepath.Join(repo, "bench", "results", "tmp")
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		fmt.Fprintln(stderr, "benchrun:", err)
		return 1
	}
	binDir, err := os.MkdirTemp(scratch, "bin-")
	if err != nil {
		fmt.Fprintln(stderr, "benchrun:", err)
		return 1
	}
	defer os.RemoveAll(binDir)

	started := time.Now()
	names := split(*brokerList)
	fmt.Fprintf(stderr, "benchrun: preparing %s\n", strings.Join(names, ", "))
	ready, failed := peer.Prepare(ctx, peer.Options{RepoRoot: repo, BinDir: binDir}, names)
	var brokers []*peer.Broker
	var infos []report.Broker
	unavailable := map[string]string{}
	for _, n := range names {
		if b, ok := ready[n]; ok {
			brokers = append(brokers, b)
			infos = append(infos, report.Broker{Name: b.Name, Version: b.Version})
			continue
		}
		unavailable[n] = oneLine(failed[n].Error())
		fmt.Fprintf(stderr, "benchrun: %s will not run: %v\n", n, failed[n])
	}
	if len(brokers) == 0 {
		fmt.Fprintln(stderr, "benchrun: no broker could be prepared")
		return 1
	}
	base := brokers[0].Name
	for _, b := range brokers {
		if strings.HasPrefix(b.Name, peer.Saguin) {
			base = b.Name
			break
		}
	}

	total := len(cases) * prof.Repetitions * len(brokers)
	done := 0
	// A peer's failed run is what that peer did (mochi dropping deliveries a
	// Receive Maximum has no room for, say): reported and left out of the
	// figures, never -strict's failure. A run of Sagüin's failing is.
	failures, peerFailures := 0, 0
	runs := scenario.Execute(ctx, prof, cases, brokers, scratch, func(r scenario.Run) {
		done++
		status := "ok"
		if r.Err != "" {
			status = "FAILED: " + oneLine(r.Err)
			if strings.HasPrefix(r.Broker, peer.Saguin) {
				failures++
			} else {
				peerFailures++
			}
		}
		fmt.Fprintf(stderr, "benchrun: [%d/%d] %s on %s, rep %d, %.1fs: %s\n", done, total, r.Case, r.Broker, r.Rep, r.Seconds, status)
	})

	rep := &report.Report{
		Profile:  prof.Name,
		Command:  "go run ./bench/cmd/benchrun " + strings.Join(args, " "),
		Started:  started,
		Finished: time.Now(),
		Machine:  machine.Describe(scratch),
		Method: report.Method{Warmup: prof.Warmup.String(), Window: prof.Window.String(), Repetitions: prof.Repetitions,
			Order: "brokers alternated within each repetition (A B C, A B C, ...), a fresh broker process for every run"},
		Brokers:     infos,
		Unavailable: unavailable,
		Base:        base,
		Cases:       report.Build(cases, infos, base, runs),
		Runs:        runs,
	}
	if err := write(rep, *outDir); err != nil {
		fmt.Fprintln(stderr, "benchrun:", err)
		return 1
	}
	if err := rep.WriteMarkdown(stdout); err != nil {
		fmt.Fprintln(stderr, "benchrun:", err)
		return 1
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "benchrun: interrupted; the results hold the runs that finished")
		return 1
	}
	if failures+peerFailures > 0 || len(unavailable) > 0 {
		fmt.Fprintf(stderr, "benchrun: %d run(s) of Sagüin's failed, %d of the peers', %d broker(s) unavailable\n", failures, peerFailures, len(unavailable))
	}
	if *strict && (failures > 0 || len(unavailable) > 0) {
		return 1
	}
	return 0
}

// write puts <profile>.json, .md and .svg in dir.
func write(rep *report.Report, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("making %s: %w", dir, err)
	}
	stem := filepath.Join(dir, rep.Profile)
	if err := rep.WriteJSON(stem + ".json"); err != nil {
		return err
	}
	var md bytes.Buffer
	fmt.Fprintf(&md, "# Benchmark results: %s profile\n\n", rep.Profile)
	if err := rep.WriteMarkdown(&md); err != nil {
		return err
	}
	fmt.Fprintf(&md, "\n![chart](%s.svg)\n\nWhat each case measures:\n\n", rep.Profile)
	if err := rep.WriteScenarios(&md); err != nil {
		return err
	}
	if err := os.WriteFile(stem+".md", md.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing %s.md: %w", stem, err)
	}
	var svg bytes.Buffer
	if err := rep.WriteSVG(&svg); err != nil {
		return err
	}
	if err := os.WriteFile(stem+".svg", svg.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing %s.svg: %w", stem, err)
	}
	return nil
}

// moduleRoot walks up from the working directory to the go.mod of module
// saguin, so the harness runs from anywhere inside the tree.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the working directory: %w", err)
	}
	for {
		raw, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(raw), []byte("module github.com/saguin-edge/saguin\n")) {
			return dir, nil
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("reading %s/go.mod: %w", dir, err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the saguin module: run from the repository")
		}
		dir = parent
	}
}

// mostConns is the most connections any of the cases holds open at once.
func mostConns(cases []scenario.Case) int {
	most := 0
	for _, c := range cases {
		most = max(most, c.Connections)
	}
	return most
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 240 {
		s = s[:240] + "..."
	}
	return s
}
