// Package conformance holds black-box tests that start the real saguin binary
// on a temporary configuration and check what it answers on the wire. With
// -broker host:port the tests that need nothing but plain MQTT run against
// that broker instead; the ones that need a configuration of their own skip.
package conformance

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	brokerFlag = flag.String("broker", "", "host:port of a running broker to aim the plain-MQTT tests at")
	binaryFlag = flag.String("binary", "", "a saguin binary to start instead of building one (a -race build, say)")
	binPath    string
)

func TestMain(m *testing.M) {
	flag.Parse()
	if *binaryFlag != "" {
		binPath = *binaryFlag
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "saguin-conformance-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "saguin")
	build := exec.Command("go", "build", "-o", binPath, "github.com/saguin-edge/saguin/cmd/saguin")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building saguin:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// brokerProc is a saguin process started for one test.
type brokerProc struct {
	t    testing.TB
	cmd  *exec.Cmd
	dir  string
	addr string // the tcp door's address
	log  *logLines
	done chan struct{}
	err  error
}

// logLines collects the broker's standard output a line at a time.
type logLines struct {
	mu    sync.Mutex
	lines []string
	grow  chan struct{}
}

func (l *logLines) add(s string) {
	l.mu.Lock()
	l.lines = append(l.lines, s)
	close(l.grow)
	l.grow = make(chan struct{})
	l.mu.Unlock()
}

// snapshot is the lines collected so far: the broker may still be writing
// (its retention sweeps log once started).
func (l *logLines) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// wait returns the first line matching re, or "" at the deadline.
func (l *logLines) wait(re *regexp.Regexp, d time.Duration) string {
	return l.waitFrom(0, re, d)
}

// waitFrom returns the first line from index from on matching re, or "" at
// the deadline: what a test wants when an earlier line would match too.
func (l *logLines) waitFrom(from int, re *regexp.Regexp, d time.Duration) string {
	deadline := time.After(d)
	for i := from; ; {
		l.mu.Lock()
		for ; i < len(l.lines); i++ {
			if re.MatchString(l.lines[i]) {
				s := l.lines[i]
				l.mu.Unlock()
				return s
			}
		}
		grow := l.grow
		l.mu.Unlock()
		select {
		case <-grow:
		case <-deadline:
			return ""
		}
	}
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// baseConfig is a configuration every test starts from: a tcp door on a free
// port, memory storage. limits is YAML under broker.limits, mqtt extra keys
// under broker.mqtt (beside listen), top extra keys under broker.
type brokerConfig struct {
	Limits string // lines under broker.limits, each "key: value"
	MQTT   string // lines under broker.mqtt besides listen
	Listen string // the listen block's body; default a tcp door on 127.0.0.1:0
	Broker string // lines under broker besides the above
	// Channels is the channels: block's body, "" for none.
	Channels string
}

func (c brokerConfig) yaml(dir string) string {
	indent := func(s, pad string) string {
		if s == "" {
			return ""
		}
		var b strings.Builder
		for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
			b.WriteString(pad + strings.TrimRight(line, " ") + "\n")
		}
		return b.String()
	}
	listen := c.Listen
	if listen == "" {
		listen = "tcp:\n  address: 127.0.0.1:0"
	}
	listen = strings.ReplaceAll(listen, "$DIR", dir)
	var b strings.Builder
	b.WriteString("broker:\n  id: conformance\n  log_level: debug\n")
	b.WriteString(indent(strings.ReplaceAll(c.Broker, "$DIR", dir), "  "))
	b.WriteString("  mqtt:\n    listen:\n")
	b.WriteString(indent(listen, "      "))
	b.WriteString(indent(c.MQTT, "    "))
	b.WriteString("  storage:\n    default: mem\n    default_retention_period: none\n    default_retention_bytes: none\n")
	b.WriteString("    providers:\n      mem:\n        type: memory\n        snapshot_dir: none\n")
	if c.Limits != "" {
		b.WriteString("  limits:\n")
		b.WriteString(indent(c.Limits, "    "))
	}
	if c.Channels != "" {
		b.WriteString("channels:\n")
		b.WriteString(indent(strings.ReplaceAll(c.Channels, "$DIR", dir), "  "))
	}
	return b.String()
}

var listeningRE = regexp.MustCompile(`msg=listening .*listener=(\S+) address=(\S+:\d+)`)

// startBroker runs saguin on cfg and waits until its doors are open. It skips
// the test when -broker aims the suite elsewhere: the test needs a
// configuration of its own.
func startBroker(t testing.TB, cfg brokerConfig) *brokerProc {
	t.Helper()
	return startBrokerIn(t, t.TempDir(), cfg)
}

// startBrokerIn is startBroker with the configuration written in dir ($DIR).
func startBrokerIn(t testing.TB, dir string, cfg brokerConfig) *brokerProc {
	t.Helper()
	if *brokerFlag != "" {
		t.Skip("needs a broker started on its own configuration; -broker is set")
	}
	path := filepath.Join(dir, "saguin.yaml")
	if err := os.WriteFile(path, []byte(cfg.yaml(dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	return launch(t, dir, path)
}

// launch runs saguin --config path (dir is its working files) and waits for
// it to say it started and where it listens; the process is killed when the
// test ends and its output logged if the test failed.
func launch(t testing.TB, dir, path string) *brokerProc {
	t.Helper()
	return launchUnder(t, dir, path, "")
}

// launchUnder is launch with the broker started by sh after the shell
// commands in prefix ("ulimit -n 300", say); "" runs it directly.
func launchUnder(t testing.TB, dir, path, prefix string) *brokerProc {
	t.Helper()
	b := &brokerProc{t: t, dir: dir, log: &logLines{grow: make(chan struct{})}, done: make(chan struct{})}
	b.cmd = exec.Command(binPath, "--config", path)
	if prefix != "" {
		b.cmd = exec.Command("sh", "-c", prefix+` && exec "$0" "$@"`, binPath, "--config", path)
	}
	stdout, err := b.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	b.cmd.Stderr = &stderr
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			b.log.add(sc.Text())
		}
		io.Copy(io.Discard, stdout)
		b.err = b.cmd.Wait()
		close(b.done)
	}()
	t.Cleanup(func() {
		b.cmd.Process.Kill()
		<-b.done
		if t.Failed() {
			t.Logf("broker output:\n%s\nstderr:\n%s", b.log, stderr.String())
		}
	})
	line := b.log.wait(regexp.MustCompile(`msg="broker started"|msg="cannot`), 15*time.Second)
	if !strings.Contains(line, "broker started") {
		// A refused start is on its way out: let it finish writing.
		select {
		case <-b.done:
		case <-time.After(time.Second):
		}
		t.Fatalf("broker did not start: %s\noutput:\n%s\nstderr: %s", line, b.log, stderr.String())
	}
	if m := listeningRE.FindStringSubmatch(b.log.wait(listeningRE, time.Second)); m != nil {
		b.addr = m[2]
	}
	return b
}

// startFailing runs saguin on cfg and returns its exit code and output, for
// configurations that must refuse the start.
func startFailing(t testing.TB, cfg brokerConfig, dir string) (int, string) {
	t.Helper()
	path := filepath.Join(dir, "saguin.yaml")
	if err := os.WriteFile(path, []byte(cfg.yaml(dir)), 0o644); err != nil {
		t.Fatal(err)
	}
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
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("broker kept running; output:\n%s", out.String())
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

const sigterm = syscall.SIGTERM

// signal sends sig to the broker.
func (b *brokerProc) signal(sig syscall.Signal) {
	b.t.Helper()
	if err := b.cmd.Process.Signal(sig); err != nil {
		b.t.Fatal(err)
	}
}

// waitExit waits for the process to end and returns its exit code.
func (b *brokerProc) waitExit(d time.Duration) int {
	b.t.Helper()
	select {
	case <-b.done:
		return b.cmd.ProcessState.ExitCode()
	case <-time.After(d):
		b.t.Fatalf("broker still running after %s", d)
	}
	return -1
}

// target is the address plain-MQTT tests aim at: -broker, or a saguin on the
// default test configuration.
func target(t testing.TB) string {
	t.Helper()
	if *brokerFlag != "" {
		return *brokerFlag
	}
	return startBroker(t, brokerConfig{}).addr
}

// hostPort splits an address for the mosquitto tools' -h and -p.
func hostPort(t testing.TB, addr string) (string, string) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return h, p
}
