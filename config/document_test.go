package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// withoutComments drops the provenance, which names the file it came from and
// so differs between a file and its round trip.
func withoutComments(b []byte) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func roundTrip(t *testing.T, cfg *Config) {
	t.Helper()
	doc := cfg.YAML()
	path := filepath.Join(t.TempDir(), "resolved.yaml")
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := Parse(path)
	if err != nil {
		t.Fatalf("--output does not load again:\n%v\n%s", err, doc)
	}
	if a, b := withoutComments(doc), withoutComments(again.YAML()); a != b {
		t.Errorf("the round trip changed the configuration:\n%s\n---\n%s", a, b)
	}
	j1, _ := cfg.JSON("channels", "providers", "limits", "listeners", "bridges", "operations")
	j2, _ := again.JSON("channels", "providers", "limits", "listeners", "bridges", "operations")
	if strip(j1) != strip(j2) {
		t.Errorf("the round trip changed what the broker runs:\n%s\n%s", j1, j2)
	}
}

// strip removes configured_in values, which name the file.
func strip(j []byte) string {
	var v any
	_ = json.Unmarshal(j, &v)
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			delete(x, "configured_in")
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	walk(v)
	b, _ := json.Marshal(v)
	return string(b)
}

func TestOutputLoadsAgainForEveryExample(t *testing.T) {
	paths, _ := filepath.Glob("../examples/*.yaml")
	paths = append(paths, "testdata/rfc-example.yaml")
	n := 0
	for _, p := range paths {
		cfg, err := Parse(p)
		if err != nil {
			if strings.HasSuffix(p, "acl.yaml") {
				continue // an acl_file, not a broker configuration
			}
			t.Fatalf("%s: %v", p, err)
		}
		t.Run(filepath.Base(p), func(t *testing.T) { roundTrip(t, cfg) })
		n++
	}
	if n < 2 {
		t.Fatalf("only %d configurations tried", n)
	}
}

func TestOutputExpandsIncludesAndNamesWhereEachChannelCameFrom(t *testing.T) {
	cfg, err := loadDir(t, map[string]string{
		"saguin.yaml": with(`  mqtt:
    password_file: /etc/p
    listen:
      tcp:
        - name: local
          address: 127.0.0.1:1883
          allow_anonymous: true
        - name: fleet
          address: 0.0.0.0:8883
      unix:
        path: /run/s.sock
        password_file: /etc/own
        proxy_protocol: true
`, `channels:
  - !include ch.yaml
  - jobs:
      type: queue
      filter: iot/+/work/+
      retry:
        max_attempts: 3
        backoff: linear
        backoff_base: 5s
bridges:
  b:
    peer: tls://hub:8883
    client_id: c
    topics:
      - filter: fleet/+/x/#
        topic: in/$1/$#
        direction: in
`),
		"ch.yaml": "events:\n  type: append\n  filter: iot/+/{events,alarms}/+\n  retention_bytes: none\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	doc := string(cfg.YAML())
	for _, want := range []string{"# from ", "ch.yaml:1", `filter: "iot/+/{events,alarms}/+"`, "retention_bytes: none", "storage: mem"} {
		if !strings.Contains(doc, want) {
			t.Errorf("output lacks %q:\n%s", want, doc)
		}
	}
	if strings.Contains(doc, "jobs__dlq") || strings.Contains(doc, "!include") {
		t.Errorf("output carries a derived channel or an include:\n%s", doc)
	}
	// A retention key nobody wrote is not printed: it takes the broker-wide
	// default when the document is loaded again.
	events := doc[strings.Index(doc, "  events:"):]
	if strings.Contains(events[:strings.Index(events, "start:")], "retention_period") {
		t.Errorf("an unwritten retention_period was printed:\n%s", events)
	}
	roundTrip(t, cfg)
}

func TestJSONSectionsCompose(t *testing.T) {
	cfg := accepted(t, topicSpaceConfig)
	b, err := cfg.JSON("providers", "channels")
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v) != 2 || v["providers"]["mem"] == nil || v["channels"]["water-location"] == nil {
		t.Errorf("%s", b)
	}
	if !strings.HasPrefix(string(b), `{"providers":`) {
		t.Errorf("sections are not in the order asked: %s", b)
	}
}

func TestJSONUnknownSectionListsTheNames(t *testing.T) {
	_, err := accepted(t, minimal).JSON("provider")
	if err == nil || !strings.Contains(err.Error(), "bridges, channels, limits, listeners, operations, providers, storage") {
		t.Errorf("%v", err)
	}
}

func TestJSONUnusedSectionIsAnEmptyObject(t *testing.T) {
	b, err := accepted(t, minimal).JSON("bridges", "operations")
	if err != nil || string(b) != `{"bridges":{},"operations":{}}` {
		t.Errorf("%s %v", b, err)
	}
}

func TestJSONCarriesResolvedValuesAndConfiguredIn(t *testing.T) {
	cfg := accepted(t, minimal+"channels:\n  events:\n    type: append\n  jobs:\n    type: queue\n")
	b, _ := cfg.JSON()
	var v struct {
		Channels map[string]map[string]any `json:"channels"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	ev := v.Channels["events"]
	if ev["filter"] != "events/#" || ev["storage"] != "mem" || ev["retention_period"] != "1d" || !strings.HasSuffix(ev["configured_in"].(string), "saguin.yaml") {
		t.Errorf("events %v", ev)
	}
	if v.Channels["jobs__dlq"]["derived_from"] != "jobs" || v.Channels["jobs__dlq"]["filter"] != "jobs/__dlq/#" {
		t.Errorf("dead letters %v", v.Channels["jobs__dlq"])
	}
}

func TestJSONHoldsNoSecretOnlyPaths(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "p")
	if err := os.WriteFile(pw, []byte(passwdLine), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := accepted(t, with("  mqtt:\n    password_file: "+pw+"\n", ""))
	b, _ := cfg.JSON()
	if strings.Contains(string(b), "$7$") || !strings.Contains(string(b), pw) {
		t.Errorf("%s", b)
	}
}
