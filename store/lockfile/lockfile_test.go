package lockfile

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"saguin/store"
)

func TestSecondHolderOfALockIsRefusedNamingIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "saguin.lock")
	l, err := Acquire(path, "local", 0)
	if err != nil {
		t.Fatalf("first acquire: %v", err)
	}
	_, err = Acquire(path, "other", 0)
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("second acquire: got %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "other") {
		t.Fatalf("refusal %q does not name the lock and the provider", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l2, err := Acquire(path, "other", 0)
	if err != nil {
		t.Fatalf("acquire after release (stale lock file): %v", err)
	}
	l2.Release()
}
