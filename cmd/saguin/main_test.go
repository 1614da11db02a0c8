package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func withModes(t *testing.T, m map[string]modeFunc) {
	t.Helper()
	saved := modes
	modes = m
	t.Cleanup(func() { modes = saved })
}

func TestStartWithoutModeIsRefusedNamingConfig(t *testing.T) {
	withModes(t, map[string]modeFunc{})
	var out, errb bytes.Buffer
	if code := dispatch(nil, &out, &errb); code == 0 {
		t.Fatalf("exit status 0 without --config")
	}
	if !strings.Contains(errb.String(), "--config") {
		t.Fatalf("message does not name --config: %q", errb.String())
	}
}

func TestTwoModeFlagsAreRefused(t *testing.T) {
	run := func([]string, io.Writer, io.Writer) int { return 0 }
	withModes(t, map[string]modeFunc{"--config": run, "--check-config": run})
	var out, errb bytes.Buffer
	if code := dispatch([]string{"--config", "a", "--check-config=b"}, &out, &errb); code == 0 {
		t.Fatalf("two modes accepted")
	}
	if !strings.Contains(errb.String(), "--config and --check-config") {
		t.Fatalf("message does not name both flags: %q", errb.String())
	}
}

func TestModeReceivesAllArguments(t *testing.T) {
	var got []string
	withModes(t, map[string]modeFunc{"--route": func(a []string, _, _ io.Writer) int { got = a; return 3 }})
	if code := dispatch([]string{"--route", "c.yaml", "a/b"}, io.Discard, io.Discard); code != 3 {
		t.Fatalf("exit status %d, want the mode's 3", code)
	}
	if strings.Join(got, " ") != "--route c.yaml a/b" {
		t.Fatalf("mode got %q", got)
	}
}

func TestMisspeltModeIsAnsweredWithTheNearest(t *testing.T) {
	for given, want := range map[string]string{
		"--chek-config":  "--check-config",
		"--cehck-config": "--check-config",
		"--confg":        "--config",
		"--licences":     "--licenses",
		"--verison":      "--version",
		"--rout=x":       "--route",
	} {
		var errb bytes.Buffer
		if code := dispatch([]string{given, "x.yaml"}, io.Discard, &errb); code != 2 {
			t.Errorf("%s: exit status %d, want 2", given, code)
		}
		if !strings.Contains(errb.String(), "did you mean "+want+"?") {
			t.Errorf("%s: %q does not suggest %s", given, errb.String(), want)
		}
	}
}

func TestFarFromAnyFlagSuggestsNothing(t *testing.T) {
	var errb bytes.Buffer
	dispatch([]string{"--frobnicate"}, io.Discard, &errb)
	if strings.Contains(errb.String(), "did you mean") || !strings.Contains(errb.String(), "--help") {
		t.Fatalf("got %q: want no suggestion, a pointer to --help", errb.String())
	}
}

func TestHelpListsEveryModeAndWinsAnywhere(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"--route", "c.yaml", "-h"}} {
		var out bytes.Buffer
		if code := dispatch(args, &out, io.Discard); code != 0 {
			t.Fatalf("%q: exit status %d", args, code)
		}
		for flag, doc := range docs {
			if !strings.Contains(out.String(), "  "+doc.usage+" ") || doc.summary == "" {
				t.Errorf("%q: help has no line for %s", args, flag)
			}
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "abc", 3}, {"--json", "--json", 0}, {"--jsno", "--json", 1}, {"--outptu", "--output", 1}, {"--ouput", "--output", 1}, {"kitten", "sitting", 3}} {
		if got := editDistance(c.a, c.b); got != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}
