package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/saguin-edge/saguin/config"
)

func init() {
	registerMode("--check-config", modeDoc{
		usage:   "--check-config FILE [--output]",
		summary: "validate a configuration and every file it names, touching no storage; --output prints it resolved",
		flags:   []string{"--output"},
	}, runCheckConfig)
}

// runCheckConfig is --check-config FILE [--output]: validate the whole
// configuration, open every file it names, and create, write or bind nothing
// (RFC 0002 "Validation"). On success the summary goes to standard output; with
// --output the resolved document goes there instead and the summary to
// standard error. Findings always go to standard error, with exit status 1.
func runCheckConfig(args []string, stdout, stderr io.Writer) int {
	path, output, err := checkConfigArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "saguin: %v\n", err)
		return 2
	}
	cfg, err := config.Load(path)
	if output && cfg != nil {
		// The document is printed even when the files it names are missing
		// here: somebody validating a configuration from elsewhere wanted it.
		stdout.Write(cfg.YAML())
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	summary := stdout
	if output {
		summary = stderr
	}
	io.WriteString(summary, cfg.Summary(path))
	// The file is valid as RFC 0002 says; what this build does not serve
	// yet is said beside it, one line per part, and --config refuses it.
	for _, p := range notServed(cfg) {
		fmt.Fprintf(summary, "  not served yet: %s\n", p)
	}
	return 0
}

// checkConfigArgs reads --check-config FILE (or --check-config=FILE) and
// --output, and refuses anything else by name.
func checkConfigArgs(args []string) (path string, output bool, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		switch name {
		case "--check-config":
			if !hasValue {
				if i+1 >= len(args) || strings.HasPrefix(args[i+1], "--") {
					return "", false, errors.New("--check-config takes the configuration file: saguin --check-config FILE [--output]")
				}
				i++
				value = args[i]
			}
			if path != "" {
				return "", false, errors.New("--check-config is given twice")
			}
			path = value
		case "--output":
			if hasValue {
				return "", false, errors.New("--output takes no value: it prints the resolved configuration to standard output")
			}
			output = true
		case "--json":
			return "", false, errors.New("--json is for --route and --acl; --check-config --output prints the resolved configuration as YAML")
		default:
			return "", false, fmt.Errorf("%s is not an argument of --check-config%s: saguin --check-config FILE [--output]", a, didYouMean(name, []string{"--check-config", "--output"}))
		}
	}
	if path == "" {
		return "", false, errors.New("--check-config takes the configuration file: saguin --check-config FILE [--output]")
	}
	return path, output, nil
}
