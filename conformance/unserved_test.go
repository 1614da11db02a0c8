package conformance

import (
	"os"
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
