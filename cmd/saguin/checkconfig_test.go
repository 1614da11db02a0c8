package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// exampleConfig is the fleet example: every channel type, the operations
// listener. demoConfig is what make demo runs, naming only what is served.
const (
	exampleConfig = "../../examples/channels.yaml"
	demoConfig    = "../../examples/saguin.yaml"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = dispatch(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestCheckConfigPrintsOkAndTheChannels(t *testing.T) {
	code, out, errs := run(t, "--check-config", exampleConfig)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.HasPrefix(out, exampleConfig+": ok\n") {
		t.Errorf("summary does not start with FILE: ok:\n%s", out)
	}
	for _, want := range []string{"events", "append", "state", "latest", "jobs", "queue", "jobs__dlq"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

func TestCheckConfigRefusesAnInvalidFileNamingKeyFileAndLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "saguin.yaml")
	src, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(src), "log_level: info", "log_level: verbose", 1)
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	line := 1 + strings.Count(bad[:strings.Index(bad, "log_level: verbose")], "\n")
	code, out, errs := run(t, "--check-config", path)
	if code == 0 || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	for _, want := range []string{"configuration is invalid:", `broker.log_level "verbose"`, "debug, info, warn or error", path + ":" + strconv.Itoa(line)} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

func TestCheckConfigOutputPrintsADocumentThatLoadsAgain(t *testing.T) {
	code, doc, summary := run(t, "--check-config", exampleConfig, "--output")
	if code != 0 || !strings.Contains(summary, ": ok") {
		t.Fatalf("exit %d, stderr %s", code, summary)
	}
	path := filepath.Join(t.TempDir(), "resolved.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, "--check-config", path); code != 0 {
		t.Fatalf("the resolved document does not load: %s\n%s", errs, doc)
	}
}

func TestCheckConfigOutputStillPrintsWhenNamedFilesAreMissing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "saguin.yaml")
	src, _ := os.ReadFile(exampleConfig)
	withFile := strings.Replace(string(src), "    listen:\n      tcp:\n        address: 127.0.0.1:1883\n",
		"    password_file: /nonexistent/clients.passwd\n    listen:\n      tcp:\n        address: 127.0.0.1:1883\n", 1)
	if err := os.WriteFile(path, []byte(withFile), 0o600); err != nil {
		t.Fatal(err)
	}
	code, doc, errs := run(t, "--check-config", path, "--output")
	if code == 0 || !strings.Contains(doc, "password_file: /nonexistent/clients.passwd") || !strings.Contains(errs, "/nonexistent/clients.passwd cannot be read") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, doc, errs)
	}
}

func TestJSONWithCheckConfigIsRefused(t *testing.T) {
	if code, _, errs := run(t, "--check-config", exampleConfig, "--json"); code != 2 || !strings.Contains(errs, "--route and --acl") {
		t.Errorf("exit %d: %s", code, errs)
	}
}

func TestCheckConfigRefusesAStrayArgument(t *testing.T) {
	if code, _, errs := run(t, "--check-config", exampleConfig, "extra"); code != 2 || !strings.Contains(errs, "extra") {
		t.Errorf("exit %d: %s", code, errs)
	}
	if code, _, _ := run(t, "--check-config"); code != 2 {
		t.Errorf("--check-config with no file: exit %d", code)
	}
}

func TestCheckConfigAcceptsTheEqualsForm(t *testing.T) {
	if code, _, errs := run(t, "--check-config="+exampleConfig); code != 0 {
		t.Errorf("exit %d: %s", code, errs)
	}
}

// TestCheckConfigRefusalsExitNonZeroNamingKeyFileAndLine runs a refusal of
// each family through the command: exit status 1, the key, file:line.
func TestCheckConfigRefusalsExitNonZeroNamingKeyFileAndLine(t *testing.T) {
	src, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, from, to, key string }{
		{"UnknownKey", "  log_level: info", "  log_lvl: info", "broker.log_lvl"},
		{"KeepaliveOverMQTTCeiling", "  log_level: info", "  log_level: info\n  limits:\n    max_keepalive: 20h", "limits.max_keepalive"},
		{"RelativeSnapshotDir", "snapshot_dir: none", "snapshot_dir: snapshots", "broker.storage.providers.volatile.snapshot_dir"},
		{"QueueFilterWithBraces", "filter: iot/+/work/+", "filter: iot/+/{work,jobs}/+", "channels.jobs.filter"},
		{"DLQLevelInAFilter", "filter: iot/+/events/+", "filter: iot/+/__dlq/+", "channels.events.filter"},
		{"OperationsOnARoutableAddress", "address: 127.0.0.1:9090", "address: 0.0.0.0:9090", "broker.operations.listen.tcp.address"},
		{"PortClash", "address: 127.0.0.1:9090", "address: 127.0.0.1:1883", "broker.operations.listen.tcp"},
		{"RetentionBytesOnLatest", "    filter: iot/+/state/+", "    filter: iot/+/state/+\n    retention_bytes: 1GiB", "channels.state.retention_bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := strings.Replace(string(src), c.from, c.to, 1)
			path := filepath.Join(t.TempDir(), "saguin.yaml")
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errs := run(t, "--check-config", path)
			if code != 1 || out != "" {
				t.Fatalf("exit %d, stdout %q", code, out)
			}
			if !strings.Contains(errs, "- "+c.key) || !strings.Contains(errs, path+":") {
				t.Errorf("stderr does not name %s and %s:line:\n%s", c.key, path, errs)
			}
		})
	}
}

func TestOutputAndJSONAreRefusedWithTheBrokerMode(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent.yaml")
	for _, flag := range []string{"--output", "--json"} {
		if code, _, errs := run(t, "--config", missing, flag); code == 0 || !strings.Contains(errs, flag) {
			t.Errorf("--config with %s: exit %d: %s", flag, code, errs)
		}
	}
}
