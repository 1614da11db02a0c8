package sqlite

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/storetest"
)

func openForScript(t *testing.T, cfg storetest.Config) (store.Provider, error) {
	return openVariant(t, cfg, func(*store.SQLiteOptions) {})
}

func openVariant(t *testing.T, cfg storetest.Config, set func(*store.SQLiteOptions)) (store.Provider, error) {
	o := store.SQLiteOptions{
		Name:             "disk",
		FilePath:         filepath.Join(cfg.Dir, "saguin.db"),
		MaxBytes:         cfg.MaxBytes,
		Reserve:          cfg.Reserve,
		ReadConnections:  2,
		MaxSessionExpiry: cfg.MaxSessionExpiry,
		Hooks:            cfg.Hooks,
		Now:              cfg.Now,
		Writer:           "test",
		Logger:           quiet,
	}
	set(&o)
	return Open(o)
}

func TestSQLiteProviderPassesTheConformanceScript(t *testing.T) {
	storetest.Run(t, openForScript)
}

// The script again with every read on the write connection, and under the
// two other ways of committing: none of them may change an answer.
func TestSQLiteProviderPassesTheConformanceScriptInEveryMode(t *testing.T) {
	variants := map[string]func(*store.SQLiteOptions){
		"read_connections=0": func(o *store.SQLiteOptions) { o.ReadConnections = 0 },
		"commit=none":        func(o *store.SQLiteOptions) { o.CommitMode = store.CommitEach },
		"commit=interval": func(o *store.SQLiteOptions) {
			o.CommitMode, o.PublishCommitInterval, o.PublishCommitMaxRecords = store.CommitInterval, time.Millisecond, 4
		},
	}
	for name, set := range variants {
		t.Run(name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T, cfg storetest.Config) (store.Provider, error) { return openVariant(t, cfg, set) })
		})
	}
}

// quiet keeps the provider's start-up lines out of test output.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
