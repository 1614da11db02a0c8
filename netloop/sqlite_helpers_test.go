package netloop_test

import (
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/saguin-edge/saguin/broker"
	"github.com/saguin-edge/saguin/netloop"
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

// serveSQLite starts, for a benchmark, a broker on a fresh sqlite provider
// behind one TCP door: opts is the broker's options, to which it adds the
// provider's stores and a quiet logger. It returns the provider (for its
// commit counters) and the door's address; cleanup shuts the server down,
// then closes the broker and the provider.
func serveSQLite(b *testing.B, opts broker.Options) (*sqlite.Provider, string) {
	b.Helper()
	quiet := slog.New(slog.DiscardHandler)
	p, sessions, retained := openSQLite(b)
	opts.Sessions, opts.Retained, opts.Logger = sessions, retained, quiet
	br, err := broker.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	s, err := netloop.New(netloop.Options{Handler: br, Logger: quiet, EventLoops: *loopsFlag, SessionQueueBytes: 64 << 20,
		Doors: []netloop.Door{{Name: "tcp", Kind: netloop.KindTCP, Address: "127.0.0.1:0"}}})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		s.Shutdown(b.Context())
		br.Close()
		p.Close()
	})
	return p, s.Addr("tcp").String()
}
