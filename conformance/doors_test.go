package conformance

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// RFC 0002 "Several listeners of a kind" and the Validation rules for Unix
// doors.

func TestUnixDoorServesMQTTWithMode0660(t *testing.T) {
	b := startBroker(t, brokerConfig{Listen: "unix:\n  path: $DIR/mqtt.sock"})
	path := filepath.Join(b.dir, "mqtt.sock")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o660 {
		t.Fatalf("%s: mode %s, want a socket with 0660", path, fi.Mode())
	}
	dialRawUnix(t, path, codec.Version5).mustConnect("over-unix", nil)
	if _, err := os.Stat(path + ".lock"); err != nil {
		t.Fatalf("no lock beside the socket: %v", err)
	}
}

func TestUnixDoorTakesItsConfiguredMode(t *testing.T) {
	b := startBroker(t, brokerConfig{Listen: "unix:\n  path: $DIR/mqtt.sock\n  mode: \"0600\""})
	fi, err := os.Stat(filepath.Join(b.dir, "mqtt.sock"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %s, want 0600", fi.Mode().Perm())
	}
}

func TestLeftoverSocketIsReplaced(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mqtt.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // a socket file nobody serves, as a killed broker leaves it
	b := startBrokerIn(t, dir, brokerConfig{Listen: "unix:\n  path: $DIR/mqtt.sock"})
	dialRawUnix(t, path, codec.Version5).mustConnect("after-crash", nil)
	_ = b
}

func TestSocketServedByAnotherBrokerRefusesTheStart(t *testing.T) {
	first := startBroker(t, brokerConfig{Listen: "unix:\n  path: $DIR/mqtt.sock"})
	code, out := startFailing(t, brokerConfig{Listen: "unix:\n  path: " + filepath.Join(first.dir, "mqtt.sock")}, t.TempDir())
	if code == 0 || !strings.Contains(out, "mqtt.sock.lock") {
		t.Fatalf("exit %d, output %q: want a refusal naming the lock", code, out)
	}
	dialRawUnix(t, filepath.Join(first.dir, "mqtt.sock"), codec.Version5).mustConnect("still-served", nil)
}

func TestNonSocketAtTheUnixPathRefusesTheStartAndIsLeftAlone(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mqtt.sock")
	if err := os.WriteFile(path, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := startFailing(t, brokerConfig{Listen: "unix:\n  path: $DIR/mqtt.sock"}, dir)
	if code == 0 || !strings.Contains(out, "not a socket") {
		t.Fatalf("exit %d, output %q: want a refusal saying it is not a socket", code, out)
	}
	if b, _ := os.ReadFile(path); string(b) != "mine" {
		t.Fatalf("the file at the path was changed: %q", b)
	}
}

func TestShutdownRemovesTheSocketAndKeepsTheLock(t *testing.T) {
	b := startBroker(t, brokerConfig{Listen: "unix:\n  path: $DIR/mqtt.sock"})
	b.signal(sigterm)
	if code := b.waitExit(waitLong); code != 0 {
		t.Fatalf("exit %d", code)
	}
	path := filepath.Join(b.dir, "mqtt.sock")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("socket left behind after a clean stop: %v", err)
	}
	if _, err := os.Stat(path + ".lock"); err != nil {
		t.Fatalf("lock file removed: %v", err)
	}
}

func TestSeveralDoorsOfAKindEachServeByName(t *testing.T) {
	b := startBroker(t, brokerConfig{Listen: "tcp:\n  - name: local\n    address: 127.0.0.1:0\n  - name: fleet\n    address: 127.0.0.1:0"})
	for _, name := range []string{"local", "fleet"} {
		line := b.log.wait(regexp.MustCompile(`msg=listening .*listener=`+name+` address=(\S+)`), waitLong)
		m := regexp.MustCompile(`address=(\S+)`).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("no listening line for door %s", name)
		}
		dialRaw(t, m[1], codec.Version5).mustConnect("via-"+name, nil)
	}
}
