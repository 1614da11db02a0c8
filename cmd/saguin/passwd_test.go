package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/saguin-edge/saguin/broker/auth"
	"github.com/saguin-edge/saguin/config"
)

// openPty returns a pseudo-terminal's two ends.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

func checkUsers(t *testing.T, path string) *auth.Users {
	t.Helper()
	pf, findings := config.ReadPasswordFile(path, false)
	if len(findings) > 0 {
		t.Fatalf("the file --passwd wrote is refused: %v", findings)
	}
	var entries []auth.Entry
	for _, e := range pf.Entries {
		entries = append(entries, auth.Entry{User: e.User, Hash: e.Hash, Line: e.Line})
	}
	u, err := auth.NewUsers(path, entries)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestPasswdAddPromptsTwiceWithEchoOff(t *testing.T) {
	master, slave := openPty(t)
	saved := passwdInput
	passwdInput = slave
	t.Cleanup(func() { passwdInput = saved })

	path := filepath.Join(t.TempDir(), "clients.passwd")
	// The password is typed once each prompt is shown - echo is turned off
	// before the first - and with echo off only the newlines come back.
	prompts := &promptWriter{shown: make(chan string, 4)}
	done := make(chan int)
	go func() { done <- dispatch([]string{"--passwd", "add", path, "device-7"}, &bytes.Buffer{}, prompts) }()
	for i := 0; i < 2; i++ {
		select {
		case p := <-prompts.shown:
			if !strings.HasSuffix(p, "assword: ") {
				t.Fatalf("prompt %q", p)
			}
		case code := <-done:
			t.Fatalf("exit %d before prompt %d", code, i+1)
		}
		master.Write([]byte("tr0ub4dor\n"))
	}
	if code := <-done; code != 0 {
		t.Fatalf("exit %d", code)
	}
	master.SetReadDeadline(time.Now().Add(2 * time.Second))
	echo := make([]byte, 256)
	n, _ := master.Read(echo)
	if bytes.Contains(echo[:n], []byte("tr0ub4dor")) {
		t.Errorf("the terminal echoed the password: %q", echo[:n])
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("new file mode %v, want 0600", st.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(data), "device-7:$7$1000$") {
		t.Errorf("file %q, want a $7$ hash with 1000 iterations", data)
	}
	if checkUsers(t, path).Check("device-7", []byte("tr0ub4dor")) != auth.OK {
		t.Errorf("the prompted password does not verify")
	}
}

// promptWriter is standard error, telling the test each prompt it shows.
type promptWriter struct{ shown chan string }

func (w *promptWriter) Write(p []byte) (int, error) {
	w.shown <- string(p)
	return len(p), nil
}

func TestPasswdAddRefusesTwoDifferentPasswords(t *testing.T) {
	master, slave := openPty(t)
	saved := passwdInput
	passwdInput = slave
	t.Cleanup(func() { passwdInput = saved })
	path := filepath.Join(t.TempDir(), "p")
	master.Write([]byte("one\ntwo\n"))
	var errb bytes.Buffer
	if code := dispatch([]string{"--passwd", "add", path, "u"}, &bytes.Buffer{}, &errb); code == 0 {
		t.Fatal("two different passwords accepted")
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("a file was written anyway")
	}
}

func TestPasswdAddWithoutTerminalOrPasswordIsRefused(t *testing.T) {
	saved := passwdInput
	r, w, _ := os.Pipe()
	defer w.Close()
	passwdInput = r
	t.Cleanup(func() { passwdInput = saved; r.Close() })
	var errb bytes.Buffer
	if code := dispatch([]string{"--passwd", "add", filepath.Join(t.TempDir(), "p"), "u"}, &bytes.Buffer{}, &errb); code == 0 || !strings.Contains(errb.String(), "no terminal") {
		t.Fatalf("exit %d %q, want a refusal saying there is no terminal", code, errb.String())
	}
}

func TestPasswdKeepsModeAndScopeAndOtherLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ops.passwd")
	os.WriteFile(path, []byte("# operators\nalice:$6$8K5rmLkazON0wx5U$WLCPviYw71YYESV0bPvY7gekjwCGUGYFPix6I5kFsCYsKnktaCLZDyhlfFf6HghnT8iLHTIpPDG72XN2Viq31g==:/metrics\nbob:x\n"), 0o640)
	os.Chmod(path, 0o640)
	if code, _, e := run(t, "--passwd", "add", path, "alice", "new"); code != 0 {
		t.Fatal(e)
	}
	data, _ := os.ReadFile(path)
	lines := strings.Split(string(data), "\n")
	if lines[0] != "# operators" || !strings.HasPrefix(lines[1], "alice:$7$1000$") || !strings.HasSuffix(lines[1], ":/metrics") || lines[2] != "bob:x" {
		t.Errorf("file after add:\n%s", data)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the file's own 0640", st.Mode().Perm())
	}
	if code, _, e := run(t, "--passwd", "scope", path, "alice", "/metrics,/v1/operations"); code != 0 {
		t.Fatal(e)
	}
	if code, out, _ := run(t, "--passwd", "list", path); code != 0 || out != "alice\t/metrics,/v1/operations\nbob\n" {
		t.Errorf("list %q", out)
	}
	if code, _, _ := run(t, "--passwd", "scope", path, "alice", "all"); code != 0 {
		t.Fatal("scope all refused")
	}
	if code, out, _ := run(t, "--passwd", "list", path); code != 0 || out != "alice\nbob\n" {
		t.Errorf("list after scope all %q, want the field removed", out)
	}
	if code, _, e := run(t, "--passwd", "scope", path, "alice", "/nowhere"); code == 0 || !strings.Contains(e, "/nowhere") {
		t.Errorf("a scope naming no route: exit %d %q", code, e)
	}
	if code, _, _ := run(t, "--passwd", "delete", path, "bob"); code != 0 {
		t.Fatal("delete refused")
	}
	if code, _, e := run(t, "--passwd", "delete", path, "bob"); code == 0 || !strings.Contains(e, "bob") {
		t.Errorf("deleting an absent user: exit %d %q, want non-zero naming it", code, e)
	}
	if code, out, _ := run(t, "--passwd", "list", path); code != 0 || out != "alice\n" {
		t.Errorf("list after delete %q", out)
	}
}

func TestPasswdRefusesNamesTheBrokerWouldRefuse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p")
	for _, u := range []string{"", "a:b", "#x", "bad\x01name", "bad\u0085"} {
		if code, _, _ := run(t, "--passwd", "add", path, u, "pw"); code == 0 {
			t.Errorf("user %q accepted", u)
		}
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("a file was written for a refused name")
	}
}

func TestPasswdRefusesConfig(t *testing.T) {
	code, _, e := run(t, "--passwd", "list", "/tmp/p", "--config", "/etc/saguin/saguin.yaml")
	if code == 0 || !strings.Contains(e, "--config") {
		t.Fatalf("exit %d %q", code, e)
	}
}

// TestPasswdFileVerifiesInMosquitto runs Debian's mosquitto with a file
// --passwd wrote: the file is Mosquitto's format, hash for hash.
func TestPasswdFileVerifiesInMosquitto(t *testing.T) {
	mosq, err := exec.LookPath("mosquitto")
	if err != nil {
		if _, err2 := os.Stat("/usr/sbin/mosquitto"); err2 != nil {
			t.Skip("mosquitto is not installed (scripts/install-test-deps.sh)")
		}
		mosq = "/usr/sbin/mosquitto"
	}
	pub, err := exec.LookPath("mosquitto_pub")
	if err != nil {
		t.Skip("mosquitto_pub is not installed")
	}
	dir := t.TempDir()
	pw := filepath.Join(dir, "clients.passwd")
	if code, _, e := run(t, "--passwd", "add", pw, "device-7", "s3cret"); code != 0 {
		t.Fatal(e)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	conf := filepath.Join(dir, "mosquitto.conf")
	// Run as root, mosquitto would drop to the mosquitto user, which cannot
	// read a test's temporary directory: user keeps it as whoever runs this.
	me := "root"
	if u := os.Getenv("USER"); u != "" {
		me = u
	}
	os.WriteFile(conf, []byte(fmt.Sprintf("listener %d 127.0.0.1\nallow_anonymous false\npassword_file %s\nuser %s\n", port, pw, me)), 0o600)
	var mlog bytes.Buffer
	cmd := exec.Command(mosq, "-c", conf)
	cmd.Stderr, cmd.Stdout = &mlog, &mlog
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mosquitto never listened on %s: %s", addr, mlog.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	p := fmt.Sprint(port)
	if out, err := exec.Command(pub, "-h", "127.0.0.1", "-p", p, "-u", "device-7", "-P", "s3cret", "-t", "a", "-m", "x").CombinedOutput(); err != nil {
		t.Fatalf("mosquitto refused the right password: %v %s", err, out)
	}
	if out, err := exec.Command(pub, "-h", "127.0.0.1", "-p", p, "-u", "device-7", "-P", "wrong", "-t", "a", "-m", "x").CombinedOutput(); err == nil {
		t.Fatalf("mosquitto admitted a wrong password: %s", out)
	}
}
