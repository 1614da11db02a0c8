package netloop_test

import (
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/sqlite"
)

// openSQLite opens a sqlite provider in a temporary directory, with its
// sessions and retained stores, for the tests and benchmarks that put a
// broker on a disk provider.
func openSQLite(tb testing.TB) (*sqlite.Provider, store.Sessions, store.Retained) {
	tb.Helper()
	quiet := slog.New(slog.DiscardHandler)
	p, err := sqlite.Open(store.SQLiteOptions{Name: "test", FilePath: filepath.Join(tb.TempDir(), "test.db"), Logger: quiet})
	if err != nil {
		tb.Fatal(err)
	}
	sessions, err := p.Sessions()
	if err != nil {
		tb.Fatal(err)
	}
	retained, err := p.Retained(0)
	if err != nil {
		tb.Fatal(err)
	}
	return p, sessions, retained
}
