package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestLicensesDoNotDrift regenerates the embedded licence text and fails when
// it differs from the committed one: a dependency added, removed or moved to
// another version without `make licenses`.
func TestLicensesDoNotDrift(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list for three platforms")
	}
	out := filepath.Join(t.TempDir(), "licenses.txt")
	gen := exec.Command("go", "run", "github.com/saguin-edge/saguin/scripts/genlicenses", "-o", out)
	gen.Dir = "../.."
	if b, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("genlicenses: %v\n%s", err, b)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal([]byte(licenses), want) {
		t.Fatalf("cmd/saguin/licenses.txt is not what scripts/genlicenses writes today: run `make licenses` and commit it")
	}
}
