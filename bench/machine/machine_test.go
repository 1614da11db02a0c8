package machine

import (
	"os"
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
