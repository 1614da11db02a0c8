package sqlite

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"saguin/store"
	"saguin/store/storetest"
)

func openForScript(t *testing.T, cfg storetest.Config) (store.Provider, error) {
	return Open(store.SQLiteOptions{
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
	})
}

func TestSQLiteProviderPassesTheConformanceScript(t *testing.T) {
	storetest.Run(t, openForScript)
}

// quiet keeps the provider's start-up lines out of test output.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
