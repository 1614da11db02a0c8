package config

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to the loader as a configuration file: it
// never panics, and it either returns a configuration or findings, never both
// nil. Whatever it accepts renders a document that loads again.
func FuzzLoad(f *testing.F) {
	for _, p := range []string{"../examples/saguin.yaml", "../examples/channels.yaml", "testdata/rfc-example.yaml"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(minimal))
	f.Add([]byte(topicSpaceConfig))
	f.Add([]byte("broker: [1, 2\n"))
	f.Add([]byte("a: &x {b: *x}\n"))
	f.Add([]byte("channels:\n  - !include nowhere.yaml\n  - x: {type: append}\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, src []byte) {
		path := filepath.Join(dir, "saguin.yaml")
		if err := os.WriteFile(path, src, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := Parse(path)
		if cfg == nil && err == nil {
			t.Fatal("neither a configuration nor a finding")
		}
		if cfg == nil {
			return
		}
		if err := os.WriteFile(path, cfg.YAML(), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(path); err != nil {
			t.Fatalf("accepted, but its --output does not load:\n%v\n%s", err, cfg.YAML())
		}
	})
}
