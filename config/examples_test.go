package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestEveryExampleLoads loads each file in examples/: the broker
// configurations with Load, files and all, as make demo starts them; the
// acl_file example as the YAML document it is, holding roles and users.
func TestEveryExampleLoads(t *testing.T) {
	paths, err := filepath.Glob("../examples/*")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			if filepath.Base(p) == "acl.yaml" {
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
