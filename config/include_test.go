package config

import (
	"path/filepath"
	"strings"
	"testing"
)

func loadDir(t *testing.T, files map[string]string) (*Config, error) {
	t.Helper()
	dir := writeFiles(t, files)
	return Parse(filepath.Join(dir, "saguin.yaml"))
}

func hasFinding(t *testing.T, err error, key, file string, line int, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want a finding on %s", key)
	}
	for _, f := range findings(t, err) {
		if f.Key != key || !strings.HasSuffix(f.File, file) || line != 0 && f.Line != line {
			continue
		}
		for _, w := range words {
			if !strings.Contains(f.String(), w) {
				t.Errorf("finding %q does not say %q", f.String(), w)
			}
		}
		return
	}
	t.Fatalf("no finding on %s in %s line %d; got:\n%v", key, file, line, err)
}

func TestChannelsSplitAcrossFilesLoadAsOne(t *testing.T) {
	cfg, err := loadDir(t, map[string]string{
		"saguin.yaml": minimal + `channels:
  - !include channels/telemetry.yaml
  - !include channels/vessel-07/jobs.yaml
  - events:
      type: append
`,
		"channels/telemetry.yaml":      "readings:\n  type: append\n  retention_period: 7d\n",
		"channels/vessel-07/jobs.yaml": "jobs:\n  type: queue\n  filter: vessel-07/jobs/+\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ch := range cfg.Channels {
		names = append(names, ch.Name)
		if ch.Name == "readings" && !strings.HasSuffix(ch.ConfiguredIn, filepath.Join("channels", "telemetry.yaml")) {
			t.Errorf("readings configured in %s", ch.ConfiguredIn)
		}
	}
	if strings.Join(names, ",") != "events,jobs,readings" {
		t.Errorf("channels %v", names)
	}
}

func TestIncludePathsResolveAgainstTheIncludingFile(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"etc/saguin.yaml": minimal + "channels:\n  - !include ch/a.yaml\n",
		"etc/ch/a.yaml":   "a:\n  type: append\n",
		"ch/a.yaml":       "wrong:\n  type: append\n",
	})
	cfg, err := Parse(filepath.Join(dir, "etc", "saguin.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Channels) != 1 || cfg.Channels[0].Name != "a" {
		t.Errorf("channels %+v", cfg.Channels)
	}
}

func TestIncludedFileNamingAnotherIsRefused(t *testing.T) {
	_, err := loadDir(t, map[string]string{
		"saguin.yaml": minimal + "channels:\n  - !include a.yaml\n",
		"a.yaml":      "a:\n  type: append\nb: !include b.yaml\n",
		"b.yaml":      "type: append\n",
	})
	hasFinding(t, err, "channels.b", "a.yaml", 3, "name none")
}

func TestIncludeOutsideTheTwoListsIsRefused(t *testing.T) {
	_, err := loadDir(t, map[string]string{
		"saguin.yaml": strings.Replace(minimal, "  id: test\n", "  id: test\n  limits: !include limits.yaml\n", 1),
		"limits.yaml": "max_connections: 5\n",
	})
	hasFinding(t, err, "broker.limits", "saguin.yaml", 3, "not a general preprocessor")
}

func TestIncludeGlobIsRefused(t *testing.T) {
	_, err := loadDir(t, map[string]string{
		"saguin.yaml": minimal + "channels:\n  - !include channels/*.yaml\n",
	})
	hasFinding(t, err, "channels", "saguin.yaml", 12, "globs")
}

func TestChannelDefinedInTwoFilesIsRefusedNamingBoth(t *testing.T) {
	_, err := loadDir(t, map[string]string{
		"saguin.yaml": minimal + "channels:\n  - !include a.yaml\n  - !include b.yaml\n",
		"a.yaml":      "events:\n  type: append\n",
		"b.yaml":      "other:\n  type: latest\nevents:\n  type: append\n",
	})
	hasFinding(t, err, "channels.events", "b.yaml", 3, "a.yaml", "twice")
}

func TestSameFilterInTwoFilesIsRefusedNamingBoth(t *testing.T) {
	_, err := loadDir(t, map[string]string{
		"saguin.yaml": minimal + "channels:\n  - !include a.yaml\n  - !include b.yaml\n",
		"a.yaml":      "a:\n  type: append\n  filter: x/#\n",
		"b.yaml":      "b:\n  type: latest\n  filter: x/#\n",
	})
	hasFinding(t, err, "channels.b.filter", "b.yaml", 1, "channel a", "a.yaml")
}

func TestUnknownKeyInAnIncludedFileNamesThatFile(t *testing.T) {
	_, err := loadDir(t, map[string]string{
		"saguin.yaml": minimal + "channels:\n  - !include a.yaml\n",
		"a.yaml":      "a:\n  type: append\n  retention: 7d\n",
	})
	hasFinding(t, err, "channels.a.retention", "a.yaml", 3, "not a key")
}

func TestMissingIncludedFileIsRefused(t *testing.T) {
	_, err := loadDir(t, map[string]string{
		"saguin.yaml": minimal + "channels:\n  - !include gone.yaml\n",
	})
	hasFinding(t, err, "channels", "saguin.yaml", 12, "gone.yaml")
}

func TestProvidersSplitAcrossFiles(t *testing.T) {
	cfg, err := loadDir(t, map[string]string{
		"saguin.yaml": strings.Replace(minimal, "    providers:\n      mem:\n        type: memory\n        snapshot_dir: none\n",
			"    providers:\n      - !include storage/mem.yaml\n      - !include storage/disk.yaml\n", 1) +
			"channels:\n  events:\n    type: append\n    storage: disk\n",
		"storage/mem.yaml":  "mem:\n  type: memory\n  snapshot_dir: none\n",
		"storage/disk.yaml": "disk:\n  type: sqlite\n  file_path: /var/lib/saguin/d.db\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Broker.Storage.Providers) != 2 || cfg.Channels[0].Storage != "disk" {
		t.Errorf("providers %+v", cfg.Broker.Storage.Providers)
	}
}

func TestTwoProviderFilesOnOneStoreAreRefusedNamingBoth(t *testing.T) {
	_, err := loadDir(t, map[string]string{
		"saguin.yaml": strings.Replace(minimal, "    providers:\n      mem:\n        type: memory\n        snapshot_dir: none\n",
			"    providers:\n      - !include a.yaml\n      - !include b.yaml\n", 1),
		"a.yaml": "mem:\n  type: sqlite\n  file_path: /var/lib/x.db\n",
		"b.yaml": "other:\n  type: sqlite\n  file_path: /var/lib/./x.db\n",
	})
	hasFinding(t, err, "broker.storage.providers.other", "b.yaml", 1, "mem", "a.yaml")
}

// The shape guide-latest-append-queue.txt opens with: a channels list whose
// groups are written in place, one of them holding two channels.
func TestChannelGroupsWrittenInPlace(t *testing.T) {
	cfg := accepted(t, strings.Replace(minimal, "      mem:\n", "      durable:\n        type: sqlite\n        file_path: /var/lib/saguin/d.db\n      local:\n        type: memory\n        snapshot_dir: none\n      mem:\n", 1)+`channels:
  - events:
      type: append
      filter: iot/+/events/+
      storage: durable
    state:
      type: latest
      filter: iot/+/state/+
      storage: local
  - jobs:
      type: queue
      filter: iot/+/work/+
      storage: durable
`)
	if len(cfg.Channels) != 3 || cfg.Channels[2].Storage != "local" || cfg.DeadLetters[0].Storage != "durable" {
		t.Errorf("%+v", cfg.Channels)
	}
}
