// Package brokertest builds the stores a test starts a broker on. broker.New
// requires its stores and the broker imports no store implementation, so the
// tests of broker, netloop and the packages above them take memory ones from
// here rather than each opening its own.
//
// It imports store and store/memory only - never broker - so that broker's
// own tests can use it too.
package brokertest

import (
	"testing"

	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/memory"
)

// Stores returns a session store and a retained store, each on a memory
// provider of its own with no snapshot_dir, so nothing survives the process
// (what the broker built for itself when its stores were optional).
// retainedMaxBytes bounds the retained store's provider (0: none): past it a
// new retained value is refused 0x97.
func Stores(tb testing.TB, retainedMaxBytes int64) (store.Sessions, store.Retained) {
	tb.Helper()
	sp, err := memory.Open(store.MemoryOptions{Name: "broker sessions"})
	if err != nil {
		tb.Fatalf("opening a memory provider for the sessions: %v", err)
	}
	sessions, err := sp.Sessions()
	if err != nil {
		tb.Fatalf("opening the memory session store: %v", err)
	}
	rp, err := memory.Open(store.MemoryOptions{Name: "broker retained", MaxBytes: retainedMaxBytes})
	if err != nil {
		tb.Fatalf("opening a memory provider for retained values: %v", err)
	}
	retained, err := rp.Retained(0)
	if err != nil {
		tb.Fatalf("opening the memory retained store: %v", err)
	}
	return sessions, retained
}
