package lockfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saguin-edge/saguin/store"
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

func TestLockPathWithSpacesAndPercentIsTheFileNamed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a dir %20 with?odd#chars")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "saguin.lock")
	l, err := Acquire(path, "local", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if st, err := os.Stat(path); err != nil || st.Size() == 0 {
		t.Fatalf("the lock is not in the file named: %v", err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("lock file mode %v, want 0600", st.Mode().Perm())
	}
	if _, err := Acquire(path, "other", 0); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("second acquire: %v", err)
	}
}
