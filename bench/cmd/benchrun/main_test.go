package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAnUnknownProfileIsRefusedBeforeAnythingRuns(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"-profile", "medium"}, &out, &errs); code != 2 || !strings.Contains(errs.String(), `no profile "medium"`) {
		t.Fatalf("exit %d, stderr %q", code, errs.String())
	}
}

func TestAnUnknownScenarioIsRefusedBeforeAnythingRuns(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"-scenarios", "fanin-q2"}, &out, &errs); code != 2 || !strings.Contains(errs.String(), `"fanin-q2"`) {
		t.Fatalf("exit %d, stderr %q", code, errs.String())
	}
}

func TestANegativeWindowIsRefusedBeforeAnythingRuns(t *testing.T) {
	for _, flag := range []string{"-window", "-warmup"} {
		var out, errs bytes.Buffer
		if code := run([]string{flag, "-1s", "-scenarios", "pub-q1/1"}, &out, &errs); code != 2 || !strings.Contains(errs.String(), "positive duration") {
			t.Fatalf("%s -1s: exit %d, stderr %q", flag, code, errs.String())
		}
	}
	var out, errs bytes.Buffer
	if code := run([]string{"-calm", "-0.5", "-scenarios", "pub-q1/1"}, &out, &errs); code != 2 || !strings.Contains(errs.String(), "-calm") {
		t.Fatalf("-calm -0.5: exit %d, stderr %q", code, errs.String())
	}
}

func TestModuleRootIsFoundFromInsideTheTree(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "bench", "cmd", "benchrun", "main.go")); err != nil {
		t.Fatalf("module root %q does not hold this command: %v", root, err)
	}
}

func TestListNamesEveryCaseWithWhatItMeasures(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"-list", "-scenarios", "pub-q1"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "pub-q1/1 ") || !strings.Contains(lines[3], "PUBACK") {
		t.Fatalf("list printed:\n%s", out.String())
	}
}
