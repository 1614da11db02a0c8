package main

import (
	_ "embed"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/saguin-edge/saguin/ops/buildinfo"
)

// The modes that say something about the binary itself. None reads a
// configuration: somebody asking what they are running, or whose code it is,
// should not need one (RFC 0002 "Validation").
func init() {
	registerMode("--help", modeDoc{usage: "--help, -h", summary: "print this summary and exit", about: true},
		func(_ []string, stdout, _ io.Writer) int { writeHelp(stdout); return 0 })
	registerMode("--version", modeDoc{usage: "--version", summary: "print the version and VCS revision the build carries, and exit", about: true},
		aboutMode("--version", func(w io.Writer) { fmt.Fprintln(w, buildinfo.Read()) }))
	registerMode("--licenses", modeDoc{usage: "--licenses", summary: "print the licences of all the code inside this binary, and exit", about: true},
		aboutMode("--licenses", func(w io.Writer) { io.WriteString(w, licenses) }))
}

// licenses is the text scripts/genlicenses generated from the packages that
// reach this command (`make licenses`; TestLicensesDoNotDrift keeps it true).
//
//go:embed licenses.txt
var licenses string

// aboutMode runs print when the flag stands alone; anything beside it is
// refused, so a script passing a configuration to --version learns it was
// not looked at.
func aboutMode(flag string, print func(io.Writer)) modeFunc {
	return func(args []string, stdout, stderr io.Writer) int {
		for _, a := range args {
			if a != flag {
				fmt.Fprintf(stderr, "saguin: %s takes nothing else (given %s)\n", flag, a)
				return 2
			}
		}
		print(stdout)
		return 0
	}
}

// writeHelp lists every mode, one line each: --config first, the ones
// working on configurations and data next, then those about the binary.
func writeHelp(w io.Writer) {
	flags := make([]string, 0, len(docs))
	for f := range docs {
		flags = append(flags, f)
	}
	sort.Slice(flags, func(i, j int) bool {
		a, b := flags[i], flags[j]
		if (a == "--config") != (b == "--config") {
			return a == "--config"
		}
		if docs[a].about != docs[b].about {
			return !docs[a].about
		}
		return a < b
	})
	width := 0
	for _, f := range flags {
		width = max(width, len(docs[f].usage))
	}
	var b strings.Builder
	b.WriteString("Usage: saguin MODE [ARGUMENT]...\n")
	b.WriteString("Sagüin, an MQTT 3.1.1 and 5 broker for edge gateways, and its offline tools.\n")
	b.WriteString("Each run does one thing, chosen by exactly one of the modes below; flags may come\n")
	b.WriteString("before or after the operands.\n\n")
	b.WriteString("Modes:\n")
	for _, f := range flags {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, docs[f].usage, docs[f].summary)
	}
	b.WriteString("\nExit status: 0 on success, 1 when the work failed (a finding, an unreadable file),\n")
	b.WriteString("2 when the command line was wrong.\n")
	b.WriteString("\nA packaged install reads /etc/saguin/saguin.yaml; see /usr/share/doc/saguin.\n")
	io.WriteString(w, b.String())
}
