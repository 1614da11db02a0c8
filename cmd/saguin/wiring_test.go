package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/saguin-edge/saguin/broker"
	"github.com/saguin-edge/saguin/config"
)

func TestWritesLeaveTheLoopOnlyForASqliteProvider(t *testing.T) {
	for _, tc := range []struct {
		name, sessions, retained string
		wantSessions, wantRet    bool
	}{
		{"memory", "mem", "mem", false, false},
		{"sqlite", "db", "db", true, true},
		{"sessions on sqlite, retained in memory", "db", "mem", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			yaml := `broker:
  id: wiring
  session:
    storage: ` + tc.sessions + `
  retained:
    storage: ` + tc.retained + `
  storage:
    default: mem
    default_retention_period: none
    default_retention_bytes: none
    providers:
      mem:
        type: memory
        snapshot_dir: none
      db:
        type: sqlite
        file_path: ` + filepath.Join(dir, "saguin.db") + `
`
			path := filepath.Join(dir, "saguin.yaml")
			if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			log := slog.New(slog.DiscardHandler)
			st, err := openStorage(cfg, broker.StoreHooks(new(broker.Counters)), log)
			if err != nil {
				t.Fatal(err)
			}
			defer st.close()
			o := brokerOptions(cfg, st, log)
			if o.SessionsWaitOnDisk != tc.wantSessions || o.RetainedWaitOnDisk != tc.wantRet {
				t.Fatalf("sessions off the loop %v, retained %v; want %v, %v", o.SessionsWaitOnDisk, o.RetainedWaitOnDisk, tc.wantSessions, tc.wantRet)
			}
			if (o.AwaitClient != nil) != tc.wantSessions {
				t.Fatalf("a CONNECT puts its id's queued writes first: %v, want %v", o.AwaitClient != nil, tc.wantSessions)
			}
		})
	}
}
