package machine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDescribeNamesTheProcessorAndCores(t *testing.T) {
	d := Describe(os.TempDir())
	if d.Cores < 1 || d.CPU == "" || d.Kernel == "" || d.MemoryMiB == 0 {
		t.Fatalf("incomplete description: %+v", d)
	}
	if !strings.Contains(d.String(), d.Kernel) {
		t.Fatalf("%q does not name the kernel", d.String())
	}
}

func TestDiskNamesTheMountHoldingTheDirectory(t *testing.T) {
	if got := disk("/proc/self"); !strings.Contains(got, "proc") {
		t.Fatalf("disk of /proc/self = %q, want the proc mount", got)
	}
}

func TestAPartitionTakesItsDisksKind(t *testing.T) {
	entries, err := os.ReadDir("/sys/class/block")
	if err != nil {
		t.Skip("no /sys/class/block")
	}
	for _, e := range entries {
		real, err := filepath.EvalSymlinks(filepath.Join("/sys/class/block", e.Name()))
		if err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(real, "partition")); err != nil {
			continue // a whole disk
		}
		if rotational(e.Name()) == "" {
			t.Fatalf("partition %s has no kind, though its disk %s says one", e.Name(), filepath.Dir(real))
		}
		return
	}
	t.Skip("no partition on this machine")
}

func TestLoadAverageIsReadable(t *testing.T) {
	if l := Load1(); l < 0 {
		t.Fatalf("load average %v", l)
	}
}
