package sqlite

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// faultChildEnv names the database a child process appends to until killed.
const faultChildEnv = "SAGUIN_SQLITE_FAULT_CHILD"

// TestFaultHelperProcess is the child of TestFaultKillDuringAppends: it
// appends from several goroutines and prints "offset message-id" for each
// append that returned success, then waits to be killed.
func TestFaultHelperProcess(t *testing.T) {
	path := os.Getenv(faultChildEnv)
	if path == "" {
		t.Skip("runs only as the child of TestFaultKillDuringAppends")
	}
	o := store.SQLiteOptions{Name: "fault", FilePath: path, ReadConnections: 1, Logger: quiet}
	p, err := Open(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(3)
	}
	l, err := p.Append("events", store.ChannelOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "channel:", err)
		os.Exit(3)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				r := record(i, 128)
				r.MessageID = fmt.Sprintf("%s-%d-%d", run, g, i)
				got, err := l.Append(r)
				if err != nil {
					fmt.Fprintln(os.Stderr, "append:", err)
					os.Exit(4)
				}
				mu.Lock()
				fmt.Fprintf(out, "%d %s\n", got.Offset, got.MessageID)
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// TestFaultKillDuringAppendsLosesNoAcknowledgedRecord kills a child process
// appending under load with SIGKILL, reopens the database, and checks that
// every record whose append returned success is present at its offset, that
// the records are in offset order with no hole, and that next has not gone
// backwards - round after round until SAGUIN_SOAK runs out.
func TestFaultKillDuringAppendsLosesNoAcknowledgedRecord(t *testing.T) {
	soak := os.Getenv("SAGUIN_SOAK")
	if soak == "" {
		t.Skip("fault test: set SAGUIN_SOAK to a duration to run it")
	}
	budget, err := time.ParseDuration(soak)
	if err != nil {
		t.Fatalf("SAGUIN_SOAK %q: %v", soak, err)
	}
	dir := t.TempDir()
	path := dir + "/fault.db"
	end := time.Now().Add(budget)
	var lastNext uint64
	acked := map[uint64]string{}
	for round := 1; round == 1 || time.Now().Before(end); round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFaultHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), faultChildEnv+"="+path)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		seen := 0
		want := 2000 + round*137%1500 // vary the moment of the kill
		for seen < want && sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 2 {
				continue // a line cut by the kill is not an acknowledgement
			}
			off, err := strconv.ParseUint(f[0], 10, 64)
			if err != nil {
				continue
			}
			acked[off] = f[1]
			seen++
		}
		cmd.Process.Signal(syscall.SIGKILL)
		// Whatever was printed before the kill landed was acknowledged too.
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 2 {
				if off, err := strconv.ParseUint(f[0], 10, 64); err == nil {
					acked[off] = f[1]
				}
			}
		}
		cmd.Wait()
		if seen < want {
			t.Fatalf("round %d: child stopped after %d appends: %s", round, seen, stderr.String())
		}

		p, err := Open(store.SQLiteOptions{Name: "fault", FilePath: path, ReadConnections: 1, Logger: quiet})
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		l, err := p.Append("events", store.ChannelOptions{})
		if err != nil {
			t.Fatal(err)
		}
		next := l.Next()
		if next < lastNext {
			t.Fatalf("round %d: next went backwards from %d to %d", round, lastNext, next)
		}
		stored := map[uint64]string{}
		var prev uint64
		for from := l.Floor(); from < next; {
			w, err := l.ReadFrom(from, 1000, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(w.Records) == 0 {
				t.Fatalf("round %d: no record at %d below next %d", round, from, next)
			}
			for _, r := range w.Records {
				if r.Offset != prev+1 && prev != 0 {
					t.Fatalf("round %d: offset %d follows %d", round, r.Offset, prev)
				}
				prev = r.Offset
				stored[r.Offset] = r.MessageID
			}
			from = prev + 1
		}
		for off, id := range acked {
			if off >= next {
				t.Fatalf("round %d: acknowledged offset %d at or beyond next %d", round, off, next)
			}
			if stored[off] != id {
				t.Fatalf("round %d: acknowledged record %d (%s) reads back as %q", round, off, id, stored[off])
			}
		}
		t.Logf("round %d: %d acknowledged records all present, next %d", round, len(acked), next)
		lastNext = next
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
