package conformance

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// A storage provider that cannot be opened refuses the start with an error
// naming the file (RFC 0003 "Storage"): never a panic, never a broker running
// on state it could not read.

// refusedStart runs saguin on the configuration at path, which must refuse to
// start: it returns the whole output after checking that the process exited
// non-zero and did not panic.
func refusedStart(t *testing.T, path string) string {
	t.Helper()
	cmd := exec.Command(binPath, "--config", path)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(waitLong):
		cmd.Process.Kill()
		<-done
		t.Fatalf("broker kept running; output:\n%s", out.String())
	}
	s := out.String()
	if strings.Contains(s, "panic:") || strings.Contains(s, "goroutine ") {
		t.Fatalf("the refused start panicked:\n%s", s)
	}
	if code := cmd.ProcessState.ExitCode(); code == 0 {
		t.Fatalf("exit code 0; output:\n%s", s)
	}
	if !strings.Contains(s, `msg="cannot open storage"`) {
		t.Fatalf("no 'cannot open storage' error in the output:\n%s", s)
	}
	return s
}

// writeStoredConfig writes storedConfig for kind into dir and returns its path.
func writeStoredConfig(t *testing.T, dir, kind string) string {
	t.Helper()
	path := filepath.Join(dir, "saguin.yaml")
	if err := os.WriteFile(path, []byte(storedConfig(t, dir, kind)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSnapshotWithAFlippedByteRefusesTheStartNamingTheFile(t *testing.T) {
	if *brokerFlag != "" {
		t.Skip("restarts a broker of its own; -broker is set")
	}
	dir := t.TempDir()
	b := startStored(t, dir, "snapshot")
	// A kept session with an owed message and a retained value, so that the
	// sessions, broadcast and retained files all hold something.
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.connect("away", persistent(codec.Version5))
	if codes := sub.subscribe(1, "kept/#", 1); codes[0] != 1 {
		t.Fatalf("SUBACK %v", codes)
	}
	sub.nc.Close()
	if b.log.wait(regexp.MustCompile(`msg="(disconnect stored|Will waiting out its delay)".*client_id=away`), waitLong) == "" {
		t.Fatal("the broker never saw the subscriber leave")
	}
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publish("kept/msg", []byte("owed"), 1, 7)
	pub.expectPuback(7)
	p := &codec.Publish{QoS: 1, Retain: true, Topic: []byte("kept/state"), Payload: []byte("on"), PacketID: 8}
	pub.send(p.Append(nil, codec.Version5))
	pub.expectPuback(8)
	pub.nc.Close()
	b.signal(sigterm)
	if code := b.waitExit(waitLong); code != 0 {
		t.Fatalf("SIGTERM exit code %d", code)
	}

	snap := filepath.Join(dir, "snap")
	retained, _ := filepath.Glob(filepath.Join(snap, "*retained*.snapshot"))
	if len(retained) != 1 {
		entries, _ := os.ReadDir(snap)
		t.Fatalf("want one retained snapshot file in %s, found %v (directory: %v)", snap, retained, entries)
	}
	path := writeStoredConfig(t, dir, "snapshot")
	for _, file := range []string{filepath.Join(snap, "saguin.sessions"), filepath.Join(snap, "saguin.broadcast"), retained[0]} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			good, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			bad := append([]byte(nil), good...)
			bad[len(bad)/2] ^= 0x40
			if err := os.WriteFile(file, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(file, good, 0o600)
			if out := refusedStart(t, path); !strings.Contains(out, file) {
				t.Fatalf("the refusal does not name %s:\n%s", file, out)
			}
			if now, _ := os.ReadFile(file); !bytes.Equal(now, bad) {
				t.Fatal("the refused start rewrote the damaged file")
			}
		})
	}
	// The same directory, undamaged, still starts and still holds the session.
	b = startStored(t, dir, "snapshot")
	c := dialRaw(t, b.addr, codec.Version5)
	if ack := c.mustConnect("away", persistent(codec.Version5)); !ack.SessionPresent {
		t.Fatal("Session Present 0 after the refused starts: the session was lost")
	}
}

func TestSQLiteFilePathHoldingNoDatabaseRefusesTheStartNamingTheFile(t *testing.T) {
	if *brokerFlag != "" {
		t.Skip("needs a configuration of its own; -broker is set")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "saguin.db")
	junk := bytes.Repeat([]byte("this is not a sqlite database\n"), 200)
	if err := os.WriteFile(db, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	if out := refusedStart(t, writeStoredConfig(t, dir, "sqlite")); !strings.Contains(out, db) {
		t.Fatalf("the refusal does not name %s:\n%s", db, out)
	}
	if now, _ := os.ReadFile(db); !bytes.Equal(now, junk) {
		t.Fatal("the refused start changed the file that is not a database")
	}
}

func TestSecondBrokerOnAHeldSnapshotDirRefusesTheStartNamingIt(t *testing.T) {
	dir := t.TempDir()
	first := startStored(t, dir, "snapshot")
	second := t.TempDir()
	// The second broker's configuration names the first one's snapshot_dir.
	y := storedConfig(t, dir, "snapshot")
	path := filepath.Join(second, "saguin.yaml")
	if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(dir, "snap")
	if out := refusedStart(t, path); !strings.Contains(out, snap) {
		t.Fatalf("the refusal does not name %s:\n%s", snap, out)
	}
	// The first broker still serves.
	c := dialRaw(t, first.addr, codec.Version5)
	c.mustConnect("still-there", nil)
}
