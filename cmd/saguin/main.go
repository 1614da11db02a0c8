// Command saguin is the Sagüin MQTT broker and its offline tools.
//
// The binary does one thing per invocation, chosen by a mode flag: --config runs
// the broker, --check-config explains a configuration, --route answers where a
// topic lands, and so on. Each mode lives in its own file and registers itself
// here, so main only picks one and hands it the whole argument list; each mode
// reads its own flags wherever they stand, before or after its operands.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// modeFunc runs one mode with the full argument list and returns the exit status.
type modeFunc func(args []string, stdout, stderr io.Writer) int

// modeDoc is what --help says about a mode, and the flags a misspelling of
// one of its arguments is measured against.
type modeDoc struct {
	usage   string   // the mode's synopsis after "saguin ", e.g. "--route CONFIG [TOPIC-OR-FILTER] [--json]"
	summary string   // one line: what it does
	flags   []string // the other flags the mode takes ("--output")
	about   bool     // says something about the binary rather than working on a configuration
}

// modes maps a mode flag ("--config") to what runs it; files register in init.
var modes = map[string]modeFunc{}

// docs holds each registered mode's help.
var docs = map[string]modeDoc{}

// registerMode adds a mode. Called from init functions only.
func registerMode(flag string, doc modeDoc, run modeFunc) {
	if _, dup := modes[flag]; dup {
		panic("saguin: mode " + flag + " registered twice")
	}
	modes[flag] = run
	docs[flag] = doc
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// dispatch finds the one mode flag in args and runs it. Two mode flags are
// refused rather than one silently winning: "--config a --check-config b" is
// a typo an operator wants to hear about. --help anywhere wins over
// everything else, because whoever typed it wants to read before running.
func dispatch(args []string, stdout, stderr io.Writer) int {
	for _, a := range args {
		if a == "-h" || a == "--help" {
			writeHelp(stdout)
			return 0
		}
	}
	var found []string
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if _, ok := modes[name]; ok && !contains(found, name) {
			found = append(found, name)
		}
	}
	switch len(found) {
	case 0:
		for _, a := range args {
			if strings.HasPrefix(a, "-") {
				name, _, _ := strings.Cut(a, "=")
				fmt.Fprintf(stderr, "saguin: %s is not a flag saguin knows%s; saguin --help lists every mode\n", name, didYouMean(name, allFlags()))
				return 2
			}
		}
		fmt.Fprintf(stderr, "saguin: --config <file> is required to run the broker (other modes: %s; saguin --help says what each does)\n", modeList())
		return 2
	case 1:
		return modes[found[0]](args, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "saguin: %s cannot be used together; give one of them\n", strings.Join(found, " and "))
		return 2
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func modeList() string {
	names := make([]string, 0, len(modes))
	for k := range modes {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// allFlags is every flag any mode takes, for the nearest-flag answer.
func allFlags() []string {
	var all []string
	for flag := range modes {
		all = append(all, flag)
		for _, f := range docs[flag].flags {
			if !contains(all, f) {
				all = append(all, f)
			}
		}
	}
	sort.Strings(all)
	return all
}

// didYouMean names the valid flag nearest to a misspelt one, as
// " (did you mean --check-config?)", or says nothing when none is near enough
// to be a plausible slip (more edits than a third of the flag's length).
func didYouMean(given string, valid []string) string {
	best, bestDist := "", -1
	for _, v := range valid {
		if d := editDistance(given, v); bestDist < 0 || d < bestDist {
			best, bestDist = v, d
		}
	}
	if best == "" || bestDist > max(2, len(given)/3) {
		return ""
	}
	return " (did you mean " + best + "?)"
}

// editDistance is the Damerau-Levenshtein distance (optimal string
// alignment): a transposition such as --cehck-config counts as one slip.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
