package conformance

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runCLI runs the binary to completion in an empty directory with an empty
// environment but PATH, so nothing it prints can come from a file beside it.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running saguin %q: %v", args, err)
	}
	return out.String(), errb.String(), code
}

func examplesConfig(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../examples/channels.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCLIHelpListsEveryModeAndExitsZero(t *testing.T) {
	for _, flag := range []string{"--help", "-h"} {
		out, errs, code := runCLI(t, flag)
		if code != 0 || errs != "" {
			t.Fatalf("%s: exit %d, stderr %q", flag, code, errs)
		}
		for _, mode := range []string{"--config", "--check-config", "--route", "--snapshots-to-sqlite", "--sqlite-to-snapshots", "--licenses", "--version", "--help"} {
			if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(mode) + `\b.*  \S`).MatchString(out) {
				t.Errorf("%s: no line for %s in\n%s", flag, mode, out)
			}
		}
	}
}

// TestCLIVersionIsTheBuildInfo: --version says what `go version -m` reads
// from the same file - the main module's version and its VCS revision, or
// devel and unknown for a build that stamped none - never a constant.
func TestCLIVersionIsTheBuildInfo(t *testing.T) {
	meta, err := exec.Command("go", "version", "-m", binPath).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	version, revision, modified := "devel", "unknown", false
	for _, line := range strings.Split(string(meta), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "mod" && f[2] != "(devel)":
			version = f[2]
		case len(f) == 2 && strings.HasPrefix(f[1], "vcs.revision="):
			revision = strings.TrimPrefix(f[1], "vcs.revision=")[:12]
		case len(f) == 2 && f[1] == "vcs.modified=true":
			modified = true
		}
	}
	if modified {
		revision += "+dirty"
	}
	out, errs, code := runCLI(t, "--version")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	want := "saguin " + version + " (revision " + revision + ", "
	if !strings.HasPrefix(out, want) || strings.Count(out, "\n") != 1 {
		t.Fatalf("--version printed %q, want one line starting %q", out, want)
	}
	if _, errs, code := runCLI(t, "--version", "extra"); code != 2 || !strings.Contains(errs, "extra") {
		t.Fatalf("--version extra: exit %d, %q; want 2 naming the extra argument", code, errs)
	}
}

// TestCLILicensesCoverEveryLinkedModule: every module the binary's own build
// info lists as linked has its licence in --licenses, which needs no
// configuration and no file beside the binary.
func TestCLILicensesCoverEveryLinkedModule(t *testing.T) {
	meta, err := exec.Command("go", "version", "-m", binPath).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	out, errs, code := runCLI(t, "--licenses")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	deps := 0
	for _, line := range strings.Split(string(meta), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == "dep" {
			deps++
			if !strings.Contains(out, "\n"+f[1]+" "+f[2]+"\n") {
				t.Errorf("module %s %s is linked into the binary and has no section in --licenses", f[1], f[2])
			}
		}
	}
	if deps == 0 {
		t.Fatalf("go version -m lists no dependency: %s", meta)
	}
	for _, want := range []string{"the Go standard library and runtime", "Copyright 2009 The Go Authors", "SQLite amalgamation"} {
		if !strings.Contains(out, want) {
			t.Errorf("--licenses has no %q", want)
		}
	}
}

func TestCLIFlagsAfterOperands(t *testing.T) {
	cfg := examplesConfig(t)
	out, errs, code := runCLI(t, "--route", cfg, "iot/depot/events/d1", "--json")
	if code != 0 || !strings.HasPrefix(out, `{"subject":"iot/depot/events/d1"`) {
		t.Fatalf("--route CONFIG TOPIC --json: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	out, errs, code = runCLI(t, "--check-config", cfg, "--output")
	if code != 0 || !strings.Contains(out, "broker:") || !strings.Contains(errs, "ok") {
		t.Fatalf("--check-config CONFIG --output: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestCLIMisspeltFlagIsAnsweredWithTheNearest(t *testing.T) {
	cfg := examplesConfig(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--chek-config", cfg}, "--check-config"},
		{[]string{"--confg", cfg}, "--config"},
		{[]string{"--licences"}, "--licenses"},
		{[]string{"--check-config", cfg, "--ouput"}, "--output"},
		{[]string{"--route", cfg, "a/b", "--jsno"}, "--json"},
	} {
		out, errs, code := runCLI(t, c.args...)
		if code != 2 || out != "" || !strings.Contains(errs, "did you mean "+c.want+"?") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and a suggestion of %s", c.args, code, out, errs, c.want)
		}
	}
}

// TestPackagedConfigurationIsValid: /etc/saguin/saguin.yaml as the .deb ships
// it parses and passes every rule that needs no file (--route reads the
// configuration without opening what it names; make deb-check runs the full
// --check-config on an installed system).
func TestPackagedConfigurationIsValid(t *testing.T) {
	cfg, err := filepath.Abs("../packaging/saguin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, errs, code := runCLI(t, "--route", cfg, "site/a/events/x")
	if code != 0 || !strings.Contains(out, "broadcast") {
		t.Fatalf("--route on packaging/saguin.yaml: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
