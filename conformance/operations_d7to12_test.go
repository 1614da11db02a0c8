package conformance

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// Checklist D.7-D.12 (RFC 0005): the /v1 bodies' shapes, logging, signals
// and the shipped monitoring material, one test a rule, each named after it.

// jsonKeys is the set of keys of the JSON object body, sorted.
func jsonKeys(t *testing.T, body string) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, body)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Checklist D8.74 (RFC 0005 "What the /v1 routes answer with"): the publish
// limits are not in /v1/operations/acl's body although saguin --acl prints
// them - they are a property of the user, served by /config, and a second
// place for them would be a second place to be wrong. The entry asked about
// carries limits of its own, and --acl is run on the same file to show it
// does.
func TestD8_74OperationsACLRouteCarriesNoPublishLimits(t *testing.T) {
	dir := t.TempDir()
	pw := writePasswd(t, dir, authUsers)
	aclPath := filepath.Join(dir, "acl.yaml")
	acl := strings.Replace(authACL, "  \"device-*\": [device]\n",
		"  \"device-*\":\n    roles: [device]\n    limits: {publish_rate: 17, publish_bytes: 4321}\n", 1)
	if err := os.WriteFile(aclPath, []byte(acl), 0o600); err != nil {
		t.Fatal(err)
	}
	ob := startOps(t, dir, opsTCP, brokerConfig{MQTT: "password_file: " + pw + "\nacl_file: " + aclPath})
	out, err := exec.Command(binPath, "--acl", filepath.Join(dir, "saguin.yaml"), "device-7").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "17 messages/s") {
		t.Fatalf("saguin --acl does not print the entry's limits (%v):\n%s", err, out)
	}
	resp, body := ob.get(t, "GET", "/v1/operations/acl?user=device-7&client_id=d7")
	if resp.StatusCode != 200 || !strings.Contains(body, `"pattern_applied":"device-*"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	want := []string{"acl_file", "client_id_allowed", "grants", "grants_withheld", "pattern_applied", "patterns_in_file", "patterns_matched", "user"}
	if got := jsonKeys(t, body); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("keys %v, want exactly %v", got, want)
	}
	for _, leak := range []string{"limit", "publish_rate", "publish_bytes", "17", "4321"} {
		if strings.Contains(body, leak) {
			t.Errorf("the acl body carries %q: %s", leak, body)
		}
	}
}

// Checklist D8.84 (RFC 0005 "What the /v1 routes answer with"):
// /v1/operations/sessions answers nothing about positions (that is
// /consumers) and has no hang-up verb (hanging up is a publish to
// $saguin/sessions/disconnect): a durable consumer holding a position on an
// append channel has a row with the documented fields only, and every
// method but GET - and any path under the route - leaves it connected.
func TestD8_84OperationsSessionsCarriesNoPositionsAndNoHangUpVerb(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "session:\n  ack_commit_interval: 10ms\n"+
		"operations:\n  listen:\n    tcp:\n      address: 127.0.0.1:0", "")
	ob := withOps(b)
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect("durable-1", freshSession(3600))
	c.mustSubscribe(1, "ev/#", 1)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	for i := 1; i <= 3; i++ {
		pub.publishQoS1("ev/x", []byte("r"), uint16(i))
	}
	if got := c.collect(3); len(got) != 3 { // each acknowledged as it arrives
		t.Fatalf("the consumer read %d of 3", len(got))
	}
	var cons consumersBody
	deadline := time.Now().Add(waitLong)
	for {
		body := ob.getJSON(t, "/v1/operations/consumers", &cons)
		if len(cons.Channels) == 1 && len(cons.Channels[0].Positions) == 1 && cons.Channels[0].Positions[0].Offset == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the consumer's position never reached /consumers: %s", body)
		}
		time.Sleep(20 * time.Millisecond) // polling a route for the position writer
	}

	var s struct {
		Sessions []json.RawMessage `json:"sessions"`
	}
	body := ob.getJSON(t, "/v1/operations/sessions", &s)
	documented := map[string]bool{"client_id": true, "connected": true, "user": true, "protocol": true, "listener": true, "remote": true,
		"keepalive": true, "expires_after": true, "clean_start": true, "subscriptions": true, "partitions": true}
	found := false
	for _, row := range s.Sessions {
		for _, k := range jsonKeys(t, string(row)) {
			if !documented[k] {
				t.Errorf("a session row carries %q, not a field of the route: %s", k, row)
			}
		}
		found = found || strings.Contains(string(row), `"client_id":"durable-1"`)
	}
	if !found {
		t.Fatalf("no row for durable-1: %s", body)
	}
	for _, k := range []string{"offset", "behind", "position", "next_offset", "reader"} {
		if strings.Contains(body, `"`+k) {
			t.Errorf("the sessions body carries %q: %s", k, body)
		}
	}

	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		resp, _ := ob.get(t, m, "/v1/operations/sessions?client_id=durable-1")
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET" {
			t.Errorf("%s /v1/operations/sessions: %d Allow %q, want 405 Allow GET", m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
	for _, p := range []string{"/v1/operations/sessions/durable-1", "/v1/operations/sessions/disconnect", "/v1/operations/disconnect"} {
		for _, m := range []string{"GET", "POST", "DELETE"} {
			if resp, _ := ob.get(t, m, p); resp.StatusCode != 404 {
				t.Errorf("%s %s: %d, want 404", m, p, resp.StatusCode)
			}
		}
	}
	c.ping() // still connected: nothing on the listener hung it up
	if _, after := ob.get(t, "GET", "/v1/operations/sessions"); !strings.Contains(after, `"client_id":"durable-1","connected":true`) {
		t.Fatalf("durable-1 is not connected after the requests: %s", after)
	}
}

// Checklist D9.98 (RFC 0005 "Logging, and the process"): the log goes to
// standard output and nowhere else. broker.log_file is refused at start,
// naming the key and where the log goes; a running broker writes nothing on
// standard error and no file in its working directory while it logs
// connections; and no log line is published to a topic (a subscriber to #
// receives nothing but the marker it is waiting for).
func TestD9_98LogIsStandardOutputOnlyAndLogFileIsRefused(t *testing.T) {
	code, out := startFailing(t, brokerConfig{Broker: "log_file: /tmp/saguin.log"}, t.TempDir())
	if code == 0 || !strings.Contains(out, "broker.log_file") || !strings.Contains(out, "standard output") {
		t.Fatalf("broker.log_file: exit %d, want a refusal naming the key and standard output:\n%s", code, out)
	}

	work, errDir := t.TempDir(), t.TempDir()
	path := filepath.Join(errDir, "saguin.yaml")
	if err := os.WriteFile(path, []byte(brokerConfig{}.yaml(work)), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr := filepath.Join(errDir, "stderr")
	b := launchUnder(t, work, path, fmt.Sprintf("cd %s && exec 2>%s", work, stderr))
	watch := dialRaw(t, b.addr, codec.Version5)
	watch.mustConnect("watch-all", nil)
	watch.mustSubscribe(1, "#", 0)
	seen := len(b.log.snapshot())
	for i := range 3 {
		c := dialRaw(t, b.addr, codec.Version5)
		c.mustConnect(fmt.Sprintf("logged-%d", i), freshSession(60))
		c.disconnect()
	}
	if b.log.waitFrom(seen, regexp.MustCompile(`client_id=logged-2 reason=`), waitLong) == "" {
		t.Fatal("the connections were not logged on standard output")
	}
	marker := dialRaw(t, b.addr, codec.Version5)
	marker.mustConnect("marker", nil)
	marker.publish("marker/done", []byte("marker-done"), 0, 0)
	if got := watch.readUntil("marker-done"); len(got) != 0 {
		t.Fatalf("a subscriber to # received %d messages while the broker logged, the first on %q", len(got), got[0].Topic)
	}
	entries, err := os.ReadDir(work)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("the broker wrote %s in its working directory", e.Name())
	}
	if data, err := os.ReadFile(stderr); err != nil || len(data) != 0 {
		t.Errorf("standard error: %q (%v), want nothing", data, err)
	}
}

// Checklist D9.102 (RFC 0005 "SIGUSR1 re-reads the log level"): there is no
// SAGUIN_LOG_LEVEL. With broker.log_level info and the variable set to
// debug, a stored disconnect writes no DEBUG line; with log_level debug and
// the variable set to error, the INFO and DEBUG lines are written.
func TestD9_102SAGUIN_LOG_LEVELIsNotRead(t *testing.T) {
	run := func(t *testing.T, level, env string) *brokerProc {
		dir := t.TempDir()
		path := filepath.Join(dir, "saguin.yaml")
		yaml := strings.Replace(brokerConfig{}.yaml(dir), "log_level: debug\n", "log_level: "+level+"\n", 1)
		if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		b := launchUnder(t, dir, path, "export SAGUIN_LOG_LEVEL="+env)
		c := dialRaw(t, b.addr, codec.Version5)
		c.mustConnect("kept", freshSession(60))
		c.disconnect() // "disconnect stored" at debug, then "disconnected by the client" at info
		if b.log.wait(regexp.MustCompile(`level=INFO msg="disconnected by the client".*client_id=kept`), waitLong) == "" {
			t.Fatalf("no INFO line for the disconnect at log_level %s with SAGUIN_LOG_LEVEL=%s", level, env)
		}
		return b
	}
	t.Run("info level, variable debug", func(t *testing.T) {
		b := run(t, "info", "debug")
		for _, l := range b.log.snapshot() {
			if strings.Contains(l, "level=DEBUG") {
				t.Fatalf("SAGUIN_LOG_LEVEL=debug was read: %s", l)
			}
		}
	})
	t.Run("debug level, variable error", func(t *testing.T) {
		b := run(t, "debug", "error")
		if b.log.wait(regexp.MustCompile(`level=DEBUG msg="disconnect stored".*client_id=kept`), waitLong) == "" {
			t.Fatal("SAGUIN_LOG_LEVEL=error was read: no DEBUG line at log_level debug")
		}
	})
}

// Checklist D10.110 (GAP-9; RFC 0002 "The operations listener"): a graceful
// stop closes the operations listener with the MQTT doors, and its unix
// socket is removed before its lock is released - the moment the lock can
// be taken, the socket is gone - so a broker started next on the same path
// binds it.
func TestD10_110StopRemovesTheOperationsSocketBeforeReleasingItsLock(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "operations.sock")
	ops := "listen:\n  tcp:\n    address: 127.0.0.1:0\n  unix:\n    path: " + sock
	ob := startOps(t, dir, ops, brokerConfig{})
	if resp, _ := ob.unixGet(t, "/health"); resp.StatusCode != 200 {
		t.Fatalf("/health on the socket: %d", resp.StatusCode)
	}
	lock, err := os.OpenFile(sock+".lock", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("the socket's lock: %v", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("the running broker does not hold the lock: %v", err)
	}
	ob.signal(sigterm)
	deadline := time.Now().Add(waitLong)
	for syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the lock was never released")
		}
		time.Sleep(time.Millisecond) // polling the lock: the release is the event
	}
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the lock was released with the socket still there (%v)", err)
	}
	syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if code := ob.waitExit(waitLong); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
	if ob.log.wait(regexp.MustCompile(`msg="broker stopped"`), time.Second) == "" {
		t.Fatal("no clean stop")
	}
	again := startOps(t, dir, ops, brokerConfig{})
	if resp, _ := again.unixGet(t, "/health"); resp.StatusCode != 200 {
		t.Fatalf("/health on the socket after a restart: %d", resp.StatusCode)
	}
}
