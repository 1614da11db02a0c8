package config

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// schemaKeys loads testdata/every-key.yaml with the key hook set and returns
// every key path the loader asked for, named generically: a channel, provider
// or bridge name is <name>, a list index is dropped.
func schemaKeys(t *testing.T) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	names := regexp.MustCompile(`^(channels|broker\.storage\.providers|bridges)\.[^.]+`)
	index := regexp.MustCompile(`\[[^]]*\]`)
	keyRead = func(p string) {
		p = index.ReplaceAllString(p, "")
		p = names.ReplaceAllString(p, "$1.<name>")
		keys[p] = true
	}
	defer func() { keyRead = nil }()
	if _, err := Parse("testdata/every-key.yaml"); err != nil {
		t.Fatalf("the every-key configuration is refused:\n%v", err)
	}
	// Containers are documented through their keys.
	for k := range keys {
		for p := k; strings.Contains(p, "."); {
			p = p[:strings.LastIndexByte(p, '.')]
			delete(keys, p)
		}
	}
	for _, container := range []string{"broker", "broker.limits", "channels", "bridges", "channels.<name>", "bridges.<name>", "broker.storage.providers.<name>"} {
		delete(keys, container)
	}
	return keys
}

// documentedKeys reads the key column of every table row in
// docs/configuration.md: rows beginning "| `key`".
func documentedKeys(t *testing.T) map[string]bool {
	t.Helper()
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9_.<>]+)`")
	keys := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		keys[m[1]] = true
	}
	return keys
}

// TestConfigurationReferenceMatchesTheSchema fails when a key the loader reads
// is missing from docs/configuration.md, or the document describes a key the
// loader does not read.
func TestConfigurationReferenceMatchesTheSchema(t *testing.T) {
	schema, documented := schemaKeys(t), documentedKeys(t)
	var missing, extra []string
	for k := range schema {
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	for k := range documented {
		if !schema[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("keys the loader reads that docs/configuration.md does not document:\n  %s", strings.Join(missing, "\n  "))
	}
	if len(extra) > 0 {
		t.Errorf("keys docs/configuration.md documents that the loader does not read:\n  %s", strings.Join(extra, "\n  "))
	}
}
