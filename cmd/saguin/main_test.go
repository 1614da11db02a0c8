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
