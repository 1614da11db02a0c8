package broker

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// A pair of counts is told once while both are declared, again once one of
// them went away and came back; a client declaring the same count, or
// changing its own, is no clash with itself.
func TestPartitionCountsTellsAPairOnceWhileItLasts(t *testing.T) {
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	var p partitionCounts
	lines := func() int { return strings.Count(out.String(), "partition counts") }
	p.declare(log, "f", "a", 3)
	p.declare(log, "f", "a", 2) // a's own change
	if n := lines(); n != 0 {
		t.Fatalf("%d lines for one client changing its count", n)
	}
	p.declare(log, "f", "b", 3)
	p.declare(log, "f", "c", 2)
	if n := lines(); n != 1 || !strings.Contains(out.String(), "client_id=b") || !strings.Contains(out.String(), "other_client_id=a") {
		t.Fatalf("%d lines, want one naming b and a:\n%s", n, out.String())
	}
	p.forget("f", "b")
	p.declare(log, "f", "d", 3)
	if n := lines(); n != 2 {
		t.Fatalf("%d lines after count 3 went away and came back, want 2", n)
	}
	p.forget("f", "a")
	p.forget("f", "c")
	p.forget("f", "d")
	if len(p.filters) != 0 {
		t.Fatalf("%d filters held with no declaration left", len(p.filters))
	}
}
