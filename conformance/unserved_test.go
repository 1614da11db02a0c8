package conformance

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNothingConfiguredIsSilentlyIgnored (issue 11 item 1): for each channel
// type, --check-config on a file naming one channel of it either says the
// type is not served yet - and then --config refuses to start, naming the
// channel and the type - or says nothing, and then --config starts and
// serves it. A broker never starts on a channel it would serve as broadcast.
func TestNothingConfiguredIsSilentlyIgnored(t *testing.T) {
	if *brokerFlag != "" {
		t.Skip("needs a broker started on its own configuration; -broker is set")
	}
	for _, typ := range []string{"append", "latest", "queue"} {
		t.Run(typ, func(t *testing.T) {
			dir := t.TempDir()
			cfg := brokerConfig{Channels: "things:\n  type: " + typ + "\n  filter: things/+/x"}
			path := filepath.Join(dir, "check.yaml")
			if err := os.WriteFile(path, []byte(cfg.yaml(dir)), 0o644); err != nil {
				t.Fatal(err)
			}
			out, errs, code := runCLI(t, "--check-config", path)
			if code != 0 {
				t.Fatalf("--check-config: exit %d, %s", code, errs)
			}
			line := "channel things: type " + typ + " is not served yet"
			if strings.Contains(out, "not served yet: "+line) {
				code, log := startFailing(t, cfg, t.TempDir())
				if code != 1 || !strings.Contains(log, line) {
					t.Fatalf("--check-config says %q, and --config exits %d:\n%s", line, code, log)
				}
				return
			}
			if strings.Contains(out, "not served yet") {
				t.Fatalf("--check-config names something else not served:\n%s", out)
			}
			b := startBroker(t, cfg)
			b.signal(sigterm)
			if code := b.waitExit(waitLong); code != 0 {
				t.Fatalf("a served %s channel: the broker exits %d", typ, code)
			}
		})
	}
}

// TestABridgeIsRefusedAtStartNamingItsKey: bridges are not served by this
// build, so a file naming one refuses to start, naming the bridge's key,
// rather than starting a broker that never dials its peer.
func TestABridgeIsRefusedAtStartNamingItsKey(t *testing.T) {
	if *brokerFlag != "" {
		t.Skip("needs a broker started on its own configuration; -broker is set")
	}
	dir := t.TempDir()
	yaml := brokerConfig{}.yaml(dir) + "bridges:\n  head-office:\n    peer: tcp://127.0.0.1:1\n    client_id: edge-1\n" +
		"    topics:\n      - filter: iot/#\n        direction: both\n"
	path := filepath.Join(dir, "saguin.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	out, err := exec.CommandContext(ctx, binPath, "--config", path).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "bridges.head-office: bridges are not served yet") {
		t.Fatalf("--config with a bridge: %v\n%s", err, out)
	}
}
