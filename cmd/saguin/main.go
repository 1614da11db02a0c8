// Command saguin is the Sagüin MQTT broker and its offline tools.
//
// The binary does one thing per invocation, chosen by a mode flag: --config runs
// the broker, --check-config explains a configuration, --route answers where a
// topic lands, and so on. Each mode lives in its own file and registers itself
// here, so main only picks one and hands it the whole argument list.
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

// modes maps a mode flag ("--config") to what runs it; files register in init.
var modes = map[string]modeFunc{}

// registerMode adds a mode. Called from init functions only.
func registerMode(flag string, run modeFunc) {
	if _, dup := modes[flag]; dup {
		panic("saguin: mode " + flag + " registered twice")
	}
	modes[flag] = run
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// dispatch finds the one mode flag in args and runs it. Two mode flags are
// refused rather than one silently winning: "--config a --check-config b" is
// a typo an operator wants to hear about.
func dispatch(args []string, stdout, stderr io.Writer) int {
	var found []string
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if _, ok := modes[name]; ok && !contains(found, name) {
			found = append(found, name)
		}
	}
	switch len(found) {
	case 0:
		fmt.Fprintf(stderr, "saguin: --config <file> is required to run the broker (other modes: %s)\n", modeList())
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
