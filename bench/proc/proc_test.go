package proc

import (
	"os"
	"testing"
	"time"
)

func TestStatCPUIsUtimePlusStimeInUserHZ(t *testing.T) {
	// A command name holding ") " must not shift the fields.
	raw := []byte("4242 (we ird) S) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 70 0 0 20 0 3 0 100 1000 200\n")
	got, err := parseStatCPU(raw)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3200 * time.Millisecond; got != want {
		t.Fatalf("cpu = %v, want %v (utime 250 + stime 70 ticks at 100 Hz)", got, want)
	}
}

func TestStatusMemoryIsVmRSSAndVmHWMInBytes(t *testing.T) {
	raw := []byte("Name:\tmosquitto\nVmPeak:\t  9000 kB\nVmHWM:\t    5120 kB\nVmRSS:\t    4096 kB\nThreads:\t1\n")
	rss, peak, err := parseStatusMemory(raw)
	if err != nil {
		t.Fatal(err)
	}
	if rss != 4096*1024 || peak != 5120*1024 {
		t.Fatalf("rss, peak = %d, %d; want %d, %d", rss, peak, 4096*1024, 5120*1024)
	}
}

func TestStatusWithoutMemoryIsAnError(t *testing.T) {
	if _, _, err := parseStatusMemory([]byte("Name:\tzombie\nState:\tZ (zombie)\n")); err == nil {
		t.Fatal("a status without VmRSS parsed")
	}
}

func TestReadOwnProcessSeesResidentMemory(t *testing.T) {
	u, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u.RSS == 0 || u.PeakRSS < u.RSS {
		t.Fatalf("rss %d, peak %d: a running process has resident memory and its peak is at least that", u.RSS, u.PeakRSS)
	}
}

func TestMachineBusyIsUserNiceSystemIrqSoftirqInUserHZ(t *testing.T) {
	raw := []byte("cpu  100 20 30 5000 400 6 7 800 0 0\ncpu0 50 10 15 2500 200 3 3 400 0 0\n")
	got, err := parseMachineBusy(raw)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1630 * time.Millisecond; got != want {
		t.Fatalf("busy = %v, want %v (100+20+30+6+7 ticks; idle, iowait and steal left out)", got, want)
	}
}

func TestMachineBusyRefusesAFirstLineThatIsNotTheTotal(t *testing.T) {
	if _, err := parseMachineBusy([]byte("intr 1 2 3\n")); err == nil {
		t.Fatal("a /proc/stat without the cpu total parsed")
	}
}
