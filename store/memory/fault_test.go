package memory

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// childDirEnv makes the test binary act as a broker appending to a memory
// channel until it is killed.
const childDirEnv = "SAGUIN_MEMORY_FAULT_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childDirEnv); dir != "" {
		os.Exit(appendUntilKilled(dir))
	}
	os.Exit(m.Run())
}

// appendUntilKilled opens the provider (loading the snapshot), says so, then
// appends and reports each offset until the parent kills it.
func appendUntilKilled(dir string) int {
	p, err := Open(store.MemoryOptions{Name: "mem", SnapshotDir: dir, Writer: "child"})
	if err != nil {
		fmt.Println("open:", err)
		return 1
	}
	l, err := p.Append("events", store.ChannelOptions{})
	if err != nil {
		fmt.Println("channel:", err)
		return 1
	}
	fmt.Println("ready", l.Next())
	for {
		r, err := l.Append(record(1))
		if err != nil {
			fmt.Println("append:", err)
			return 1
		}
		fmt.Println(r.Offset)
	}
}

func soakBound(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("SAGUIN_SOAK")
	if v == "" {
		t.Skip("fault test: set SAGUIN_SOAK to a duration to run it")
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("SAGUIN_SOAK=%q is not a duration", v)
	}
	return d
}

// TestFaultMemoryKeepsExactlyItsLastSnapshotAcrossSIGKILL: a memory
// provider's durability is its last snapshot (invariant 14). A broker killed
// with SIGKILL after appending leaves the directory exactly as the last
// graceful stop wrote it, and while it runs it holds the lock against a second
// process.
func TestFaultMemoryKeepsExactlyItsLastSnapshotAcrossSIGKILL(t *testing.T) {
	bound := soakBound(t)
	dir := t.TempDir()
	p := open(t, dir)
	l, _ := p.Append("events", store.ChannelOptions{})
	for i := 1; i <= 100; i++ {
		l.Append(record(i))
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName("events"))
	snapshot := mustRead(t, path)

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDirEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready 101" {
		t.Fatalf("child did not load the snapshot: %q", lines.Text())
	}
	if _, err := tryOpen(dir); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("open while another process holds the directory: %v, want ErrLocked", err)
	}
	deadline := time.Now().Add(bound)
	var last uint64
	for lines.Scan() && last < 100_000 && time.Now().Before(deadline) {
		last, _ = strconv.ParseUint(lines.Text(), 10, 64)
	}
	if last <= 101 {
		t.Fatalf("child appended nothing (last line %q)", lines.Text())
	}
	cmd.Process.Kill()
	cmd.Wait()

	if now := mustRead(t, path); !bytes.Equal(now, snapshot) {
		t.Fatal("the snapshot file changed under a killed broker")
	}
	p = open(t, dir)
	defer p.Close()
	l, _ = p.Append("events", store.ChannelOptions{})
	if l.Next() != 101 || l.Len() != 100 {
		t.Fatalf("after SIGKILL at offset %d: next %d len %d, want exactly the last snapshot (101, 100)", last, l.Next(), l.Len())
	}
}
