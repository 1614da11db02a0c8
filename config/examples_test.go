package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saguin-edge/saguin/codec/topic"
)

// TestEveryExampleLoads loads each file in examples/: the broker
// configurations with Load, files and all, as make demo starts them; the
// acl_file examples (acl.yaml, paho-acl.yaml) as the YAML documents they
// are, holding roles and users.
func TestEveryExampleLoads(t *testing.T) {
	paths, err := filepath.Glob("../examples/*")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			continue // examples/monitoring: conformance/monitoring_test.go checks it
		}
		t.Run(filepath.Base(p), func(t *testing.T) {
			if filepath.Ext(p) == ".txt" {
				// A list for saguin --route: every line a comment or a
				// topic or filter it can answer.
				src, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				for _, line := range strings.Split(strings.TrimSpace(string(src)), "\n") {
					if !strings.HasPrefix(line, "# ") && topic.ValidateFilter(line) != nil {
						t.Errorf("%q is neither a topic nor a filter", line)
					}
				}
				return
			}
			if strings.HasSuffix(filepath.Base(p), "acl.yaml") {
				src, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				n, err := parseDocument(p, src)
				if err != nil {
					t.Fatal(err)
				}
				o := (&collector{}).object(n, "")
				if o.get("roles") == nil || o.get("users") == nil {
					t.Error("an acl_file holds roles: and users:")
				}
				return
			}
			if _, err := Load(p); err != nil {
				t.Fatal(err)
			}
		})
	}
}
