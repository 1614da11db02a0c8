package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckConfigNamesEveryPartNotServedYet: the fleet example is valid (exit
// 0, "ok") and --check-config says, one line each, which of its channels'
// types and which parts this build does not serve yet.
func TestCheckConfigNamesEveryPartNotServedYet(t *testing.T) {
	code, out, errs := run(t, "--check-config", exampleConfig)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "  not served yet: ") {
			lines = append(lines, l)
		}
	}
	for name, typ := range map[string]string{"events": "append", "presence": "latest", "state": "latest", "jobs": "queue"} {
		found := 0
		for _, l := range lines {
			if strings.Contains(l, "channel "+name+": type "+typ+" is not served yet") {
				found++
			}
		}
		if found != 1 && !servedChannelTypes[typ] {
			t.Errorf("%d lines for channel %s (%s):\n%s", found, name, typ, out)
		}
		if found != 0 && servedChannelTypes[typ] {
			t.Errorf("channel %s (%s) is served and still said not to be:\n%s", name, typ, out)
		}
	}
	if !serviceRegistered("operations") && !strings.Contains(out, "not served yet: broker.operations") {
		t.Errorf("no line for the operations listener:\n%s", out)
	}
}

// TestDemoConfigNamesOnlyWhatIsServed: make demo's file starts, so it has
// nothing not served, and --check-config says nothing about it.
func TestDemoConfigNamesOnlyWhatIsServed(t *testing.T) {
	code, out, errs := run(t, "--check-config", demoConfig)
	if code != 0 || errs != "" || strings.Contains(out, "not served yet") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestServeRefusesAChannelTypeNotServedNamingChannelAndType: --config on a
// file naming a channel whose type has no engine exits 1 before opening any
// storage or door, its log naming the channel and the type.
func TestServeRefusesAChannelTypeNotServedNamingChannelAndType(t *testing.T) {
	for _, typ := range []string{"append", "latest", "queue"} {
		if servedChannelTypes[typ] {
			continue
		}
		t.Run(typ, func(t *testing.T) {
			dir := t.TempDir()
			conf := "broker:\n  id: t\n  mqtt:\n    listen:\n      tcp:\n        address: 127.0.0.1:0\n" +
				"  storage:\n    default: m\n    default_retention_period: none\n    default_retention_bytes: none\n" +
				"    providers:\n      m:\n        type: memory\n        snapshot_dir: none\n" +
				"channels:\n  things:\n    type: " + typ + "\n    filter: things/#\n"
			p := filepath.Join(dir, "saguin.yaml")
			if err := os.WriteFile(p, []byte(conf), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, _ := run(t, "--config", p)
			if code != 1 || !strings.Contains(out, "channel things: type "+typ+" is not served yet") {
				t.Fatalf("exit %d, output %q", code, out)
			}
			if strings.Contains(out, "listening") {
				t.Fatalf("a door opened before the refusal: %q", out)
			}
		})
	}
}
