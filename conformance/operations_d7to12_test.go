package conformance

import (
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
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
	"github.com/saguin-edge/saguin/netloop/certs/certstest"
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
		"  \"device-*\":\n    roles: [device]\n    limits: {publish_rate: 7919, publish_bytes: 104729}\n", 1)
	if err := os.WriteFile(aclPath, []byte(acl), 0o600); err != nil {
		t.Fatal(err)
	}
	ob := startOps(t, dir, opsTCP, brokerConfig{MQTT: "password_file: " + pw + "\nacl_file: " + aclPath})
	out, err := exec.Command(binPath, "--acl", filepath.Join(dir, "saguin.yaml"), "device-7").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "7919 messages/s") {
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
	rest := strings.ReplaceAll(body, aclPath, "") // the file's path is the test's temporary directory's
	for _, leak := range []string{"limit", "publish_rate", "publish_bytes", "7919", "104729"} {
		if strings.Contains(rest, leak) {
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

// promtoolRuleTest runs `promtool test rules` on a unit-test file whose
// tests are body (YAML under tests:), against the shipped alert rules.
func promtoolRuleTest(t *testing.T, body string) (string, error) {
	t.Helper()
	promtool := needTool(t, "promtool")
	rules, err := filepath.Abs("../examples/monitoring/saguin-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "alerts_test.yml")
	text := fmt.Sprintf("rule_files: [%q]\nevaluation_interval: 1m\ntests:\n%s", rules, body)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "test", "rules", path).CombinedOutput()
	return string(out), err
}

// Checklist D12.115 (RFC 0005 "The one alert this exists for"): the
// shipped warning shot fires on next_offset - consumer_position_min
// growing, before retention reaches the consumer - and not on a lag that
// stands still, however large, nor on a consumer that keeps pace. Run with
// Prometheus' own rule tester on synthetic series a minute apart.
func TestD12_115WarningShotFiresOnAGrowingLagOnly(t *testing.T) {
	lag := func(next, min string) string {
		return fmt.Sprintf("      - series: 'saguin_channel_next_offset{instance=\"b:9090\",job=\"saguin\",channel=\"events\"}'\n        values: '%s'\n"+
			"      - series: 'saguin_channel_consumer_position_min{instance=\"b:9090\",job=\"saguin\",channel=\"events\"}'\n        values: '%s'\n", next, min)
	}
	firing := `          - exp_labels: {severity: warn, instance: "b:9090", job: saguin, channel: events}
            exp_annotations:
              summary: "Channel events: the slowest consumer has been falling behind for half an hour"
              description: "/v1/operations/consumers lists who is behind, worst first."
`
	tests := "  - interval: 1m\n    input_series:\n" + lag("2000+100x120", "0x120") +
		"    alert_rule_test:\n" +
		"      - eval_time: 20m\n        alertname: SaguinConsumerFallingBehind\n        exp_alerts: []\n" +
		"      - eval_time: 100m\n        alertname: SaguinConsumerFallingBehind\n        exp_alerts:\n" + firing +
		"      - eval_time: 100m\n        alertname: SaguinRetentionOvertookAConsumer\n        exp_alerts: []\n" +
		// A straggler whose lag stands still is the consumers route's
		// question, not this alert's.
		"  - interval: 1m\n    input_series:\n" + lag("50000x120", "0x120") +
		"    alert_rule_test:\n      - eval_time: 100m\n        alertname: SaguinConsumerFallingBehind\n        exp_alerts: []\n" +
		// A consumer reading as fast as the head moves.
		"  - interval: 1m\n    input_series:\n" + lag("2000+100x120", "0+100x120") +
		"    alert_rule_test:\n      - eval_time: 100m\n        alertname: SaguinConsumerFallingBehind\n        exp_alerts: []\n"
	if out, err := promtoolRuleTest(t, tests); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

// dashboardPanels is the shipped Grafana dashboard's panels and their
// queries.
func dashboardPanels(t *testing.T) map[string][]string {
	t.Helper()
	data, err := os.ReadFile("../examples/monitoring/saguin-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out[p.Title] = append(out[p.Title], tg.Expr)
		}
	}
	return out
}

// Checklist D12.119 (RFC 0005 "The catalogue", "The Go runtime"): the
// series the catalogue says to read together are on one panel of the
// shipped dashboard, so nobody reads one half alone; and every query of it
// is PromQL Prometheus parses (promtool checks them as recording rules).
func TestD12_119DashboardReadsTogetherWhatTheCatalogueSaysToReadTogether(t *testing.T) {
	panels := dashboardPanels(t)
	together := [][]string{
		{"saguin_deliveries_dropped_total", "saguin_deliveries_refused_total"},
		{"saguin_bridge_loops_skipped_total", "saguin_bridge_sent_total"},
		{"saguin_bridge_stopped", "saguin_bridge_connected"},
		{"saguin_sessions_restored_total", "saguin_sessions_dropped_total"},
		{"saguin_connections", "saguin_sessions_offline"},
		{"saguin_publishes_received_total", "sum(rate(saguin_published_total"},
		{"saguin_shares_held_total", "saguin_shares_drained_total", "saguin_shares_dropped_total"},
		{"saguin_latest_superseded_total", "saguin_published_total"},
		{"rate(saguin_go_gc_cycles_total"},
	}
	var all []string
	for _, exprs := range panels {
		all = append(all, exprs...)
	}
	for _, set := range together {
		ok := false
		for _, exprs := range panels {
			joined := strings.Join(exprs, "\n")
			has := true
			for _, s := range set {
				has = has && regexp.MustCompile(regexp.QuoteMeta(s)+`\b`).MatchString(joined)
			}
			ok = ok || has
		}
		if !ok {
			t.Errorf("no panel reads %s together", strings.Join(set, " beside "))
		}
	}
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, e := range all {
		fmt.Fprintf(&rules, "      - record: dashboard_query_%d\n        expr: %q\n", i, e)
	}
	path := filepath.Join(t.TempDir(), "queries.yml")
	if err := os.WriteFile(path, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(needTool(t, "promtool"), "check", "rules", path).CombinedOutput(); err != nil {
		t.Fatalf("a dashboard query does not parse: %v\n%s", err, out)
	}
}

var rangeRE = regexp.MustCompile(`\[(\d+[smhd])(?::\d+[smhd])?\]`)

// Checklist D12.120 (RFC 0005 "The observer does not set the cost"): the
// shipped scrape configuration scrapes no faster than the broker
// recomputes - its scrape_interval at or above the min_scrape_interval a
// broker resolves when the key is left out, as examples/saguin.yaml leaves
// it - and every range the shipped rules and dashboard take spans at least
// two such scrapes, so no rate is drawn from one sample.
func TestD12_120ShippedScrapeIntervalIsAtLeastMinScrapeInterval(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{})
	var cfg struct {
		Operations struct {
			MinScrapeInterval string `json:"min_scrape_interval"`
		} `json:"operations"`
	}
	ob.getJSON(t, "/v1/operations/config?section=operations", &cfg)
	floor, err := time.ParseDuration(cfg.Operations.MinScrapeInterval)
	if err != nil || floor < time.Minute {
		t.Fatalf("min_scrape_interval %q (%v), want the 60s default", cfg.Operations.MinScrapeInterval, err)
	}
	example, err := os.ReadFile("../examples/saguin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(example), "min_scrape_interval") {
		t.Fatal("examples/saguin.yaml sets min_scrape_interval: compare the scrape configuration with its value")
	}
	prom, err := os.ReadFile("../examples/monitoring/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	intervals := regexp.MustCompile(`(?m)^\s*scrape_interval:\s*(\S+)`).FindAllStringSubmatch(string(prom), -1)
	if len(intervals) == 0 {
		t.Fatal("prometheus.yml sets no scrape_interval: Prometheus' default of 15s is four scrapes per computation")
	}
	for _, m := range intervals {
		d, err := time.ParseDuration(m[1])
		if err != nil || d < floor {
			t.Errorf("prometheus.yml scrape_interval %s, want at least min_scrape_interval %s", m[1], floor)
		}
	}
	rules, err := os.ReadFile("../examples/monitoring/saguin-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	exprs := append(strings.Split(string(rules), "\n"), func() (all []string) {
		for _, e := range dashboardPanels(t) {
			all = append(all, e...)
		}
		return all
	}()...)
	for _, e := range exprs {
		for _, m := range rangeRE.FindAllStringSubmatch(e, -1) {
			d, err := time.ParseDuration(strings.Replace(m[1], "d", "h", 1))
			if strings.HasSuffix(m[1], "d") {
				d *= 24
			}
			if err != nil || d < 2*floor {
				t.Errorf("range [%s] in %q spans fewer than two scrapes of %s", m[1], strings.TrimSpace(e), floor)
			}
		}
	}
}

// Checklist D12.121 (RFC 0005 "Logging, and the process"): the log's bound
// is the supervisor's. The shipped unit leaves standard output to journald
// (bounded by SystemMaxUse) - never a file, which nothing bounds - and the
// operator guide gives the bound for each supervisor, Docker's max-size
// and max-file, unbounded by default, included.
func TestD12_121LogIsBoundedByTheSupervisor(t *testing.T) {
	unit, err := os.ReadFile("../packaging/saguin.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^(StandardOutput|StandardError)=(.*)$`).FindAllStringSubmatch(string(unit), -1) {
		if v := m[2]; v != "journal" && v != "inherit" {
			t.Errorf("the unit sends %s to %q, which journald does not bound", m[1], v)
		}
	}
	if !strings.Contains(string(unit), "journald") {
		t.Error("the unit does not say journald bounds its log")
	}
	guide, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SystemMaxUse", "max-size", "max-file", "svlogd", "multilog", "saguin >> file"} {
		if !strings.Contains(string(guide), want) {
			t.Errorf("docs/operations.md does not give the log's bound under %s", want)
		}
	}
}

// Checklist D12.122 (RFC 0005 "The runtime's own pauses, and the two
// variables that move them"): GOGC and GOMEMLIMIT are the runtime's
// environment variables and nothing else - set where the process starts,
// they are the effective values /metrics reports, and no configuration key
// takes them - and the broker holds its fixed 8 MB minimum-heap allowance,
// which the live heap counts and the heap goal is computed from.
func TestD12_122GCIsTunedByTheEnvironmentAndTheHeapHasAnEightMBFloor(t *testing.T) {
	for _, key := range []string{"gogc: 400", "gomemlimit: 6GiB"} {
		if code, out := startFailing(t, brokerConfig{Broker: key}, t.TempDir()); code == 0 || !strings.Contains(out, "not a key") {
			t.Errorf("broker.%s: exit %d, want it refused as no key:\n%s", key, code, out)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "saguin.yaml")
	cfg := brokerConfig{Broker: "operations:\n" + indentLines(opsTCP, "  ")}
	if err := os.WriteFile(path, []byte(cfg.yaml(dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	ob := withOps(launchUnder(t, dir, path, "export GOGC=400 GOMEMLIMIT=6GiB"))
	_, body := ob.get(t, "GET", "/metrics")
	fams := parseScrape(t, body)
	if v, _ := value(fams["saguin_go_gogc_percent"]); v != 400 {
		t.Errorf("saguin_go_gogc_percent %v, want GOGC's 400", v)
	}
	if v, _ := value(fams["saguin_go_memory_limit_bytes"]); v != 6<<30 {
		t.Errorf("saguin_go_memory_limit_bytes %v, want GOMEMLIMIT's 6GiB", v)
	}
	live, _ := value(fams["saguin_go_heap_live_bytes"])
	if live < 8<<20 {
		t.Errorf("saguin_go_heap_live_bytes %v on an idle broker, want the 8 MB allowance counted", live)
	}
	if goal, _ := value(fams["saguin_go_heap_goal_bytes"]); goal < 5*8<<20 {
		t.Errorf("saguin_go_heap_goal_bytes %v, want at least the allowance times (1 + GOGC/100)", goal)
	}
}

// Checklist D10.107 (RFC 0005 "SIGUSR1 re-reads the log level"): the signal
// says what it did and what it did not. With the level moved from debug to
// warn, the ws door's allowed_origins grown to three and max_message_size
// edited, one SIGUSR1 logs - each line seen at the level it just set - the
// level from and to, the same_origin applied and how many origins, every
// credential file re-read and what it holds (the MQTT password file's
// users, the acl_file's roles, the operations password file's users), the
// TLS door's certificate and its expiry, and that addresses and storage are
// startup-only, naming limits as edited and not applied - and a publish
// the edited max_message_size would refuse is still taken; the listeners
// are not named, since the origins edited there were applied.
func TestD10_107SIGUSR1LogsWhatItAppliedAndWhatIsStartupOnly(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t, dir)
	leaf := p.ca.Issue(t, certstest.Spec{CN: "localhost", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Validity: 72 * time.Hour})
	p.serverCert, p.serverKey = leaf.Write(t, dir, "server-3d")
	cert, err := x509.ParseCertificate(leaf.TLS.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pw := writePasswd(t, dir, authUsers)
	aclPath := filepath.Join(dir, "acl.yaml")
	if err := os.WriteFile(aclPath, []byte(authACL), 0o600); err != nil {
		t.Fatal(err)
	}
	opsPW := filepath.Join(dir, "operations.passwd")
	passwordFile(t, opsPW, [3]string{"alice", "alice-secret", ""})
	listen := tlsDoor(p, "") + "\n  - name: plain\n    address: 127.0.0.1:0\n" +
		"ws:\n  address: 127.0.0.1:0\n  same_origin: false\n  allowed_origins:\n    - https://a.example\n    - https://b.example"
	cfg := brokerConfig{Listen: listen, MQTT: "password_file: " + pw + "\nacl_file: " + aclPath,
		Broker: "limits:\n  max_message_size: 64KiB\noperations:\n" + indentLines(opsTCP+"\npassword_file: "+opsPW, "  ")}
	b := startBrokerIn(t, dir, cfg)
	path := filepath.Join(dir, "saguin.yaml")
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := string(text)
	for _, r := range [][2]string{{"log_level: debug\n", "log_level: warn\n"}, {"max_message_size: 64KiB", "max_message_size: 1KiB"},
		{"- https://b.example\n", "- https://b.example\n          - https://c.example\n"}} {
		if !strings.Contains(edited, r[0]) {
			t.Fatalf("the configuration has no %q:\n%s", r[0], edited)
		}
		edited = strings.Replace(edited, r[0], r[1], 1)
	}
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	seen := len(b.log.snapshot())
	b.signal(syscall.SIGUSR1)
	for _, re := range []string{
		`level=WARN msg="SIGUSR1: log level applied" .*from=debug to=warn`,
		`level=WARN msg="SIGUSR1: page origins re-read" .*same_origin=false allowed_origins=3`,
		`level=WARN msg="SIGUSR1: credentials re-read and in force" .*password_files="` + regexp.QuoteMeta(pw) + ` \(5 users\)" acl_file=` +
			regexp.QuoteMeta(aclPath) + ` roles=5 `,
		`level=WARN msg="SIGUSR1: re-read" .*password file ` + regexp.QuoteMeta(opsPW) + ` names 1 users`,
		`level=WARN msg="SIGUSR1: certificate re-read" .*listener=broker.mqtt.listen.tcp\[fleet\] expires=` +
			regexp.QuoteMeta(cert.NotAfter.UTC().Format(time.RFC3339)),
		`level=WARN msg="SIGUSR1: not applied - addresses, storage .* sections_edited=limits$`,
	} {
		if b.log.waitFrom(seen, regexp.MustCompile(re), waitLong) == "" {
			t.Errorf("no line matches %s", re)
		}
	}
	c := dialRaw(t, doorAddr(t, b, "plain"), codec.Version5)
	c.mustConnect(clientID(t, "dev"), login("device-7", "pw7"))
	c.publishQoS1("iot/device-7/big", []byte(strings.Repeat("x", 4096)), 1) // over the edited 1KiB, under the running 64KiB
}

// recordsBroker is a broker for the /v1 shape tests: an append channel
// events (ev/#, extra keys under it), a queue jobs (work/+/inspect), the
// operations tcp door, no connect rate, and limits lines added.
func recordsBroker(t *testing.T, channelKeys, limits string) *opsBroker {
	t.Helper()
	yaml := saguinYAML(memoryStorage, "session:\n  ack_commit_interval: 10ms\nlimits:\n  max_connect_rate: none\n"+indentLines(limits, "  ")+
		"operations:\n  listen:\n    tcp:\n      address: 127.0.0.1:0") +
		"channels:\n  events:\n    type: append\n    filter: ev/#\n" + indentLines(channelKeys, "    ") +
		"  jobs:\n    type: queue\n    filter: work/+/inspect\n"
	if strings.TrimSpace(limits) == "" {
		yaml = strings.Replace(yaml, "\n  \n", "\n", 1)
	}
	return withOps(startSaguin(t, t.TempDir(), yaml))
}

// waitJSON GETs path into v until ok says it is what the test waits for.
func (ob *opsBroker) waitJSON(t *testing.T, path string, v any, ok func() bool) string {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		body := ob.getJSON(t, path, v)
		if ok() {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s never answered what the test waits for: %s", path, body)
		}
		time.Sleep(20 * time.Millisecond) // polling a route; the broker's writers run on their own
	}
}

// passAway subscribes n durable readers named prefix-NNN to ev/# and
// disconnects them, each holding a position at the current head.
func passAway(t *testing.T, addr, prefix string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%03d", prefix, i)
		c := dialRaw(t, addr, codec.Version5)
		c.mustConnect(ids[i], freshSession(3600))
		c.mustSubscribe(1, "ev/#", 1)
		c.disconnect()
	}
	return ids
}

// Checklist D7.65 (RFC 0005 "What the /v1 routes answer with"): every list
// is capped at a hundred rows, worst first, and every body says how many
// exist beside how many it returned - a hundred-and-one of each, on each
// route, and the one that falls off the end is the one nobody was looking
// for.
func TestD7_65EveryListIsCappedAtAHundredWorstFirstWithTheTotal(t *testing.T) {
	t.Run("sessions", func(t *testing.T) {
		ob := recordsBroker(t, "", "")
		here := dialRaw(t, ob.addr, codec.Version5)
		here.mustConnect("here", nil)
		passAway(t, ob.addr, "held", 101)
		var s struct {
			Sessions []struct {
				ClientID  string `json:"client_id"`
				Connected bool   `json:"connected"`
			} `json:"sessions"`
			Total, Connected, Offline, Returned int
		}
		body := ob.waitJSON(t, "/v1/operations/sessions", &s, func() bool { return s.Offline == 101 })
		if s.Total != 102 || s.Connected != 1 || s.Returned != 100 || len(s.Sessions) != 100 {
			t.Fatalf("total %d connected %d offline %d returned %d rows %d, want 102, 1, 101, 100, 100: %s",
				s.Total, s.Connected, s.Offline, s.Returned, len(s.Sessions), body)
		}
		for _, r := range s.Sessions {
			if r.Connected {
				t.Fatalf("the connected session %q is listed while held ones fell off: %s", r.ClientID, body)
			}
		}
	})
	t.Run("refused", func(t *testing.T) {
		ob := recordsBroker(t, "", "")
		refuse := func(id string) { refuseByAuthMethod(t, ob, id) }
		for i := range 101 {
			refuse(fmt.Sprintf("once-%03d", i))
		}
		refuse("flapper")
		refuse("flapper")
		var r refusedBody
		body := ob.waitJSON(t, "/v1/operations/refused", &r, func() bool { return r.Tracked != nil && *r.Tracked == 102 })
		if *r.Returned != 100 || len(r.Clients) != 100 || *r.Beyond != 0 {
			t.Fatalf("returned %d rows %d beyond %d, want 100, 100, 0: %s", *r.Returned, len(r.Clients), *r.Beyond, body)
		}
		if r.Clients[0].ClientID != "flapper" || r.Clients[0].Count != 2 {
			t.Fatalf("first row %+v, want the client refused twice", r.Clients[0])
		}
	})
	t.Run("queues", func(t *testing.T) {
		ob := recordsBroker(t, "", "")
		pub := dialRaw(t, ob.addr, codec.Version5)
		pub.mustConnect("producer", nil)
		for i := 1; i <= 101; i++ {
			pub.publishQoS1("work/1/inspect", []byte("job"), uint16(i))
		}
		var q queueBody
		body := ob.getJSON(t, "/v1/operations/queues/jobs", &q)
		if q.Unresolved != 101 || q.Returned != 100 || len(q.Records) != 100 {
			t.Fatalf("unresolved %d returned %d rows %d, want 101, 100, 100: %s", q.Unresolved, q.Returned, len(q.Records), body)
		}
		// No job has had an attempt: the oldest are the worst, offset order.
		for i, r := range q.Records {
			if r.Offset != uint64(i+1) {
				t.Fatalf("row %d is offset %d, want %d: the oldest first", i, r.Offset, i+1)
			}
		}
	})
	t.Run("consumers", func(t *testing.T) {
		ob := recordsBroker(t, "start: tail", "")
		passAway(t, ob.addr, "lagger", 1)
		pub := dialRaw(t, ob.addr, codec.Version5)
		pub.mustConnect("producer", nil)
		for i := 1; i <= 3; i++ {
			pub.publishQoS1("ev/x", []byte("r"), uint16(i))
		}
		passAway(t, ob.addr, "tail", 100) // each placed at the head, 4
		var cons consumersBody
		body := ob.waitJSON(t, "/v1/operations/consumers", &cons, func() bool {
			return len(cons.Channels) > 0 && cons.Channels[0].Channel == "events" && cons.Channels[0].Consumers == 101
		})
		ch := cons.Channels[0]
		if ch.Returned != 100 || len(ch.Positions) != 100 {
			t.Fatalf("returned %d rows %d, want 100 of 101: %s", ch.Returned, len(ch.Positions), body)
		}
		if p := ch.Positions[0]; p.Reader != "mqtt:lagger-000" || p.Offset != 1 || p.Behind != 3 {
			t.Fatalf("first position %+v, want mqtt:lagger-000 at 1, 3 behind", p)
		}
		for _, p := range ch.Positions[1:] {
			if p.Offset != 4 || !strings.HasPrefix(p.Reader, "mqtt:tail-") {
				t.Fatalf("position %+v, want a tail reader at the head", p)
			}
		}
	})
	t.Run("position-lost", func(t *testing.T) {
		ob := recordsBroker(t, "retention_bytes: 1000", "")
		pub := dialRaw(t, ob.addr, codec.Version5)
		pub.mustConnect("producer", nil)
		payload := []byte(strings.Repeat("x", 200))
		for i := 1; i <= 10; i++ {
			pub.publishQoS1("ev/x", payload, uint16(i))
		}
		least := dialRaw(t, ob.addr, codec.Version5) // reads the ten, so it loses fewer than anybody
		least.mustConnect("least", freshSession(3600))
		least.mustSubscribe(1, "ev/#", 1)
		if got := least.collect(10); len(got) != 10 {
			t.Fatalf("least read %d of 10", len(got))
		}
		var cons consumersBody
		ob.waitJSON(t, "/v1/operations/consumers", &cons, func() bool {
			return len(cons.Channels) > 0 && len(cons.Channels[0].Positions) == 1 && cons.Channels[0].Positions[0].Offset == 11
		})
		least.disconnect()
		ids := passAway(t, ob.addr, "lost", 100) // at the floor, below 11: none acknowledges what it is sent
		for i := 11; i <= 30; i++ {
			pub.publishQoS1("ev/x", payload, uint16(i))
		}
		watch := dialRaw(t, ob.addr, codec.Version5)
		watch.mustConnect("watcher", freshSession(300))
		waitFloorAbove(t, watch, "events", 11)
		for _, id := range append(ids, "least") {
			c := dialRaw(t, ob.addr, codec.Version5)
			if ack := c.mustConnect(id, session(3600)); ack.SessionPresent {
				t.Fatalf("%s resumed over a passed position", id)
			}
			c.disconnect()
		}
		var lost lostBody
		body := ob.waitJSON(t, "/v1/operations/position-lost", &lost, func() bool { return lost.Tracked == 101 })
		if lost.Returned != 100 || len(lost.Readers) != 100 || lost.Beyond != 0 {
			t.Fatalf("returned %d rows %d beyond %d, want 100 of 101 tracked, 0 beyond: %s", lost.Returned, len(lost.Readers), lost.Beyond, body)
		}
		for i, r := range lost.Readers {
			if r.Reader == "mqtt:least" || r.LastPosition >= 11 {
				t.Fatalf("row %+v: the reader that lost least is listed while one that lost more fell off", r)
			}
			if i > 0 && r.RecordsMissed > lost.Readers[i-1].RecordsMissed {
				t.Fatalf("row %d missed %d after a row that missed %d: not worst first", i, r.RecordsMissed, lost.Readers[i-1].RecordsMissed)
			}
		}
	})
}

// Checklist D7.68 (RFC 0005 "What the /v1 routes answer with"): a client
// id and a user name kept in the records outlive the connection, so they
// are cut to limits.max_topic_length - on /refused, and on /position-lost
// past the reader's scheme.
func TestD7_68ClientStringsInTheRecordsAreCutToMaxTopicLength(t *testing.T) {
	ob := recordsBroker(t, "retention_bytes: 600", "max_topic_length: 32")
	long := "device-" + strings.Repeat("0123456789", 5) // 57 bytes
	c := dialRaw(t, ob.addr, codec.Version5)
	ack := c.connect(long, func(p *codec.Connect) {
		p.UsernameFlag, p.Username = true, []byte("user-"+strings.Repeat("u", 60))
		p.Properties.AuthMethod = []byte("SCRAM-SHA-1")
		p.Properties.Present.Set(codec.PropAuthMethod)
	})
	if ack.ReasonCode != codec.BadAuthenticationMethod {
		t.Fatalf("CONNACK 0x%02x, want 0x8c", byte(ack.ReasonCode))
	}
	var r refusedBody
	body := ob.waitJSON(t, "/v1/operations/refused", &r, func() bool { return len(r.Clients) == 1 })
	if got := r.Clients[0]; got.ClientID != long[:32] || got.User != ("user-" + strings.Repeat("u", 60))[:32] {
		t.Fatalf("row client_id %q user %q, want each cut to 32 bytes: %s", got.ClientID, got.User, body)
	}

	passAway(t, ob.addr, long, 1)
	pub := dialRaw(t, ob.addr, codec.Version5)
	pub.mustConnect("producer", nil)
	for i := 1; i <= 10; i++ {
		pub.publishQoS1("ev/x", []byte(strings.Repeat("x", 200)), uint16(i))
	}
	watch := dialRaw(t, ob.addr, codec.Version5)
	watch.mustConnect("watcher", freshSession(300))
	waitFloorAbove(t, watch, "events", 1)
	back := dialRaw(t, ob.addr, codec.Version5)
	back.mustConnect(long+"-000", session(3600))
	var lost lostBody
	body = ob.waitJSON(t, "/v1/operations/position-lost", &lost, func() bool { return len(lost.Readers) == 1 })
	if got := lost.Readers[0].Reader; got != "mqtt:"+long[:32] {
		t.Fatalf("reader %q, want mqtt: and the client id cut to 32 bytes: %s", got, body)
	}
}

// hasFields checks that the JSON object o carries every field named, and
// that every timestamp among them is RFC 3339 UTC to the second or null.
func hasFields(t *testing.T, where string, o any, fields ...string) map[string]any {
	t.Helper()
	m, ok := o.(map[string]any)
	if !ok {
		t.Fatalf("%s is %T, want a JSON object", where, o)
	}
	for _, f := range fields {
		v, ok := m[f]
		if !ok {
			t.Errorf("%s lacks %q: %v", where, f, m)
			continue
		}
		if strings.HasSuffix(f, "_seen") || f == "lease_until" {
			if s, isString := v.(string); v != nil && (!isString || !stampRE.MatchString(s)) {
				t.Errorf("%s.%s is %v, want RFC 3339 UTC to the second (checklist D8.97)", where, f, v)
			}
		}
	}
	return m
}

// firstRow is the first element of the list field of m.
func firstRow(t *testing.T, where string, m map[string]any, field string) any {
	t.Helper()
	l, ok := m[field].([]any)
	if !ok || len(l) == 0 {
		t.Fatalf("%s.%s is %v, want a list with a row", where, field, m[field])
	}
	return l[0]
}

// Checklist D7.64 (RFC 0005 "What the /v1 routes answer with"): the /v1
// bodies are a contract - a field may be added, never taken away - so on a
// broker holding a row of each kind (a held session, a durable consumer
// behind, a refused client, a reader retention passed, a waiting job),
// every route answers application/json carrying every field RFC 0005
// writes, on the body and on its rows, with its timestamps to the second.
func TestD7_64EveryV1RouteAnswersJSONWithEveryDocumentedField(t *testing.T) {
	ob := recordsBroker(t, "retention_bytes: 1000", "")
	passAway(t, ob.addr, "behind", 1)
	c := dialRaw(t, ob.addr, codec.Version5)
	if ack := c.connect("refused-1", func(p *codec.Connect) {
		p.Properties.AuthMethod = []byte("SCRAM-SHA-1")
		p.Properties.Present.Set(codec.PropAuthMethod)
	}); ack.ReasonCode != codec.BadAuthenticationMethod {
		t.Fatalf("CONNACK 0x%02x, want 0x8c", byte(ack.ReasonCode))
	}
	pub := dialRaw(t, ob.addr, codec.Version5)
	pub.mustConnect("producer", nil)
	pub.publishQoS1("work/1/inspect", []byte("job"), 1)
	var cons consumersBody
	ob.waitJSON(t, "/v1/operations/consumers", &cons, func() bool { return len(cons.Channels) > 0 && cons.Channels[0].Consumers == 1 })
	passAway(t, ob.addr, "passed", 1)
	for i := 2; i <= 20; i++ {
		pub.publishQoS1("ev/x", []byte(strings.Repeat("x", 200)), uint16(i))
	}
	watch := dialRaw(t, ob.addr, codec.Version5)
	watch.mustConnect("watcher", freshSession(300))
	waitFloorAbove(t, watch, "events", 1)
	back := dialRaw(t, ob.addr, codec.Version5)
	back.mustConnect("passed-000", session(3600)) // answered Session Present 0: a position-lost row
	var lost lostBody
	ob.waitJSON(t, "/v1/operations/position-lost", &lost, func() bool { return len(lost.Readers) > 0 })

	get := func(path string) map[string]any {
		var v any
		ob.getJSON(t, path, &v) // 200 and application/json, or the test fails
		return hasFields(t, path, v)
	}
	m := get("/v1/operations/sessions")
	hasFields(t, "sessions", m, "sessions", "total", "connected", "offline", "returned")
	hasFields(t, "sessions row", firstRow(t, "sessions", m, "sessions"), "client_id", "connected", "user", "protocol", "listener",
		"remote", "keepalive", "expires_after", "clean_start", "subscriptions")
	m = get("/v1/operations/consumers")
	ch := hasFields(t, "consumers channel", firstRow(t, "consumers", m, "channels"), "channel", "next_offset", "consumers", "returned", "positions")
	hasFields(t, "consumers position", firstRow(t, "consumers channel", ch, "positions"), "reader", "offset", "behind", "last_seen")
	m = get("/v1/operations/refused")
	hasFields(t, "refused", m, "clients", "returned", "tracked", "beyond")
	hasFields(t, "refused row", firstRow(t, "refused", m, "clients"), "client_id", "user", "reason", "count", "last_seen")
	m = get("/v1/operations/position-lost")
	hasFields(t, "position-lost", m, "readers", "returned", "tracked", "beyond")
	hasFields(t, "position-lost row", firstRow(t, "position-lost", m, "readers"), "reader", "channel", "kind", "reported", "count",
		"records_missed", "last_position", "last_floor", "last_seen")
	m = get("/v1/operations/queues/jobs")
	hasFields(t, "queue", m, "channel", "unresolved", "returned", "records")
	hasFields(t, "queue record", firstRow(t, "queue", m, "records"), "offset", "topic", "attempts", "state", "first_seen", "last_seen")
	m = get("/v1/operations/users")
	hasFields(t, "users", m, "users", "anonymous_allowed", "listeners")
	doors := hasFields(t, "users listeners", m["listeners"], "tcp")
	hasFields(t, "users listeners.tcp", doors["tcp"], "users", "anonymous_allowed", "certificate")
	m = get("/v1/operations/config")
	hasFields(t, "config", m, "broker", "channels")
	hasFields(t, "config channels.events", hasFields(t, "config channels", m["channels"], "events")["events"],
		"type", "filter", "storage", "configured_in")
	hasFields(t, "acl", get("/v1/operations/acl?user=x"), "acl_file", "everything_allowed")
}

// refuseByAuthMethod has id refused at CONNECT (0x8C for an Authentication
// Method), one row of the refusal record, and closes its socket.
func refuseByAuthMethod(t *testing.T, ob *opsBroker, id string) {
	t.Helper()
	c := dialRaw(t, ob.addr, codec.Version5)
	ack := c.connect(id, func(p *codec.Connect) {
		p.Properties.AuthMethod = []byte("SCRAM-SHA-1")
		p.Properties.Present.Set(codec.PropAuthMethod)
	})
	if ack.ReasonCode != codec.BadAuthenticationMethod {
		t.Fatalf("CONNACK 0x%02x, want 0x8c", byte(ack.ReasonCode))
	}
	c.nc.Close()
}

// Checklist D8.92 (RFC 0005 "What the /v1 routes answer with"): the refusal
// record holds a thousand clients; a newcomer past that displaces one
// refused exactly once - never the one refused twice - and beyond says a
// client did not fit, so the route shows a hundred of a thousand tracked
// and one beyond, the repeat offender still first and the newcomer held.
func TestD8_92RefusedRecordHoldsAThousandAndCountsBeyond(t *testing.T) {
	ob := recordsBroker(t, "", "")
	refuse := func(id string) { refuseByAuthMethod(t, ob, id) }
	refuse("flapper")
	refuse("flapper")
	for i := range 999 {
		refuse(fmt.Sprintf("once-%03d", i))
	}
	var r refusedBody
	body := ob.waitJSON(t, "/v1/operations/refused", &r, func() bool { return r.Tracked != nil && *r.Tracked == 1000 })
	if *r.Beyond != 0 {
		t.Fatalf("beyond %d with the record just full: %s", *r.Beyond, body)
	}
	refuse("newcomer")
	body = ob.waitJSON(t, "/v1/operations/refused", &r, func() bool { return *r.Beyond == 1 })
	if *r.Tracked != 1000 || *r.Returned != 100 || len(r.Clients) != 100 {
		t.Fatalf("tracked %d returned %d rows %d, want 1000, 100, 100: %s", *r.Tracked, *r.Returned, len(r.Clients), body)
	}
	if r.Clients[0].ClientID != "flapper" || r.Clients[0].Count != 2 {
		t.Fatalf("first row %+v, want the repeat offender kept and first", r.Clients[0])
	}
	// The newcomer took a one-off's place: refused again, its row counts 2.
	refuse("newcomer")
	body = ob.waitJSON(t, "/v1/operations/refused", &r, func() bool { return len(r.Clients) > 1 && r.Clients[1].Count == 2 })
	if top := r.Clients[0].ClientID + "," + r.Clients[1].ClientID; (top != "newcomer,flapper" && top != "flapper,newcomer") || *r.Tracked != 1000 {
		t.Fatalf("rows refused twice %s, tracked %d; want the newcomer kept beside the flapper: %s", top, *r.Tracked, body)
	}
}

// Checklist D9.103 (RFC 0005 "What the /v1 routes answer with"; issue 16:
// 60 MB sent made 60.2 MB of log): no client makes the log grow faster than
// it sends. A thousand publishes of a 10 KB topic are answered 0x90 each and
// logged as one line whose topic is cut to max_topic_length; a CONNECT
// with a 30 KB client id and user name is refused and logged with neither
// longer than that bound.
func TestD9_103ClientStringsInLogLinesAreBounded(t *testing.T) {
	ob := recordsBroker(t, "", "max_topic_length: 64\nmax_message_size: 1MiB")
	seen := len(ob.log.snapshot())
	c := dialRaw(t, ob.addr, codec.Version5)
	c.mustConnect("flooder", nil)
	long := strings.Repeat("t", 10_000)
	for i := 1; i <= 1000; i++ {
		c.publish(long, []byte("p"), 1, uint16(i))
		if code := c.expectPuback(uint16(i)); code != codec.TopicNameInvalid {
			t.Fatalf("PUBACK 0x%02x, want 0x90", byte(code))
		}
	}
	big := strings.Repeat("i", 30_000)
	r := dialRaw(t, ob.addr, codec.Version5)
	ack := r.connect(big, func(p *codec.Connect) { p.UsernameFlag, p.Username = true, []byte(strings.Repeat("u", 30_000)) })
	if ack.ReasonCode == codec.Success {
		t.Fatal("a 30 KB client id was admitted")
	}
	marker := dialRaw(t, ob.addr, codec.Version5)
	marker.mustConnect("marker-client", nil)
	if ob.log.waitFrom(seen, regexp.MustCompile(`client_id=marker-client`), waitLong) == "" {
		t.Fatal("the marker client was never logged")
	}
	lines := ob.log.snapshot()[seen:]
	written, refusedLines := 0, 0
	for _, l := range lines {
		written += len(l) + 1
		if strings.Contains(l, `msg="publish refused"`) {
			refusedLines++
		}
		for _, s := range []string{"t", "i", "u"} {
			if strings.Contains(l, strings.Repeat(s, 65)) {
				t.Errorf("a client string longer than max_topic_length was logged: %.200s...", l)
			}
		}
	}
	if refusedLines != 1 {
		t.Errorf("%d lines for a thousand refusals of one cause, want 1", refusedLines)
	}
	if sent := 1000 * len(long); written > sent/100 {
		t.Errorf("the log grew %d bytes for %d sent", written, sent)
	}
}

// Checklist D12.117 (RFC 0005 "The catalogue", Storage): the shipped
// batch-size alert reads committed records over commits against
// publish_commit_max_records, and fires only where nearly every commit is
// closed by the interval - the count set above the traffic - not where
// batches are full, nor where little arrives and commits close by records.
func TestD12_117BatchSizeAlertFiresOnIntervalClosedNearlyEmptyBatches(t *testing.T) {
	series := func(interval, records, committed string) string {
		return "  - interval: 1m\n    input_series:\n" +
			"      - series: 'saguin_storage_commits_total{instance=\"b:9090\",job=\"saguin\",provider=\"disk\",closed_by=\"interval\"}'\n        values: '" + interval + "'\n" +
			"      - series: 'saguin_storage_commits_total{instance=\"b:9090\",job=\"saguin\",provider=\"disk\",closed_by=\"records\"}'\n        values: '" + records + "'\n" +
			"      - series: 'saguin_storage_committed_records_total{instance=\"b:9090\",job=\"saguin\",provider=\"disk\"}'\n        values: '" + committed + "'\n" +
			"      - series: 'saguin_provider_publish_commit_max_records{instance=\"b:9090\",job=\"saguin\",provider=\"disk\"}'\n        values: '256x120'\n" +
			"    alert_rule_test:\n      - eval_time: 100m\n        alertname: SaguinCommitBatchesNearlyEmpty\n"
	}
	tests := series("0+60x120", "0x120", "0+60x120") + `        exp_alerts:
          - exp_labels: {severity: info, instance: "b:9090", job: saguin, provider: disk}
            exp_annotations:
              summary: "Provider disk: transactions wait out publish_commit_interval and collect almost nothing"
              description: "Lower publish_commit_interval or publish_commit_max_records, or remove them."
` +
		series("0+60x120", "0x120", "0+6000x120") + "        exp_alerts: []\n" + // a hundred records a batch
		series("0+6x120", "0+54x120", "0+60x120") + "        exp_alerts: []\n" // little arrives, closed by records
	if out, err := promtoolRuleTest(t, tests); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

// Checklist D12.118 (RFC 0005 "The catalogue"): the reconnect-loop alert is
// on saguin_connections_refused_total, by reason: a fleet refused again and
// again for ten minutes fires it naming the reason; one refusal does not.
func TestD12_118ReconnectLoopAlertFiresOnARefusalRate(t *testing.T) {
	series := func(values string) string {
		return "  - interval: 1m\n    input_series:\n" +
			"      - series: 'saguin_connections_refused_total{instance=\"b:9090\",job=\"saguin\",reason=\"not authorized\"}'\n        values: '" + values + "'\n" +
			"    alert_rule_test:\n      - eval_time: 60m\n        alertname: SaguinConnectionsRefused\n"
	}
	tests := series("0+60x120") + `        exp_alerts:
          - exp_labels: {severity: warn, instance: "b:9090", job: saguin, reason: "not authorized"}
            exp_annotations:
              summary: "Connections refused for not authorized"
              description: "/v1/operations/refused names the clients; read beside saguin_publish_refused_total with the same reason."
` + series("0 1x119") + "        exp_alerts: []\n"
	if out, err := promtoolRuleTest(t, tests); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

// Checklist D7.66 (RFC 0005 "The operations listener"): nothing on the
// listener acts. Every route answers any method but GET (and HEAD where
// /health and /metrics take it) 405 naming what it takes, and the request
// changes nothing: the queue's job is still there, unresolved.
func TestD7_66NoRouteActs(t *testing.T) {
	ob := recordsBroker(t, "", "")
	pub := dialRaw(t, ob.addr, codec.Version5)
	pub.mustConnect("producer", nil)
	pub.publishQoS1("work/1/inspect", []byte("job"), 1)
	routes := map[string]string{"/health": "GET, HEAD", "/metrics": "GET, HEAD"}
	for _, p := range []string{"acl?user=x", "config", "consumers", "position-lost", "refused", "sessions", "users", "queues/jobs"} {
		routes["/v1/operations/"+p] = "GET"
	}
	for path, allow := range routes {
		for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
			resp, _ := ob.get(t, m, path)
			if resp.StatusCode != 405 || resp.Header.Get("Allow") != allow {
				t.Errorf("%s %s: %d Allow %q, want 405 Allow %q", m, path, resp.StatusCode, resp.Header.Get("Allow"), allow)
			}
		}
	}
	var q queueBody
	if body := ob.getJSON(t, "/v1/operations/queues/jobs", &q); q.Unresolved != 1 {
		t.Fatalf("the job did not survive the requests: %s", body)
	}
}

// Checklist D8.94 (RFC 0005 "What the /v1 routes answer with"): a reader
// carries its scheme, so a device whose client id is bridge:x is
// mqtt:bridge:x on /position-lost and can never share a row with a bridge
// named x.
func TestD8_94PositionLostReaderCarriesItsScheme(t *testing.T) {
	ob := recordsBroker(t, "retention_bytes: 600", "")
	passAway(t, ob.addr, "bridge:x", 1)
	pub := dialRaw(t, ob.addr, codec.Version5)
	pub.mustConnect("producer", nil)
	for i := 1; i <= 10; i++ {
		pub.publishQoS1("ev/x", []byte(strings.Repeat("x", 200)), uint16(i))
	}
	watch := dialRaw(t, ob.addr, codec.Version5)
	watch.mustConnect("watcher", freshSession(300))
	waitFloorAbove(t, watch, "events", 1)
	back := dialRaw(t, ob.addr, codec.Version5)
	back.mustConnect("bridge:x-000", session(3600))
	var lost lostBody
	body := ob.waitJSON(t, "/v1/operations/position-lost", &lost, func() bool { return len(lost.Readers) == 1 })
	if r := lost.Readers[0]; r.Reader != "mqtt:bridge:x-000" || r.Kind != "session" {
		t.Fatalf("reader %q kind %q, want mqtt:bridge:x-000, a session: %s", r.Reader, r.Kind, body)
	}
	var cons consumersBody
	ob.getJSON(t, "/v1/operations/consumers", &cons)
	for _, c := range cons.Channels {
		for _, p := range c.Positions {
			if !strings.HasPrefix(p.Reader, "mqtt:") {
				t.Errorf("consumer %q carries no scheme (checklist D7.67)", p.Reader)
			}
		}
	}
}

// Checklist D9.100 (RFC 0002 "How much the broker says: broker.log_level"):
// info is never a line per record. At log_level info, a hundred records
// read by an append consumer and fifty jobs offered, leased and
// acknowledged add no more lines than the clients' connects; at debug the
// same jobs write their lines (a line per record is debug's).
func TestD9_100InfoIsNeverALinePerRecord(t *testing.T) {
	run := func(t *testing.T, level string) int {
		yaml := strings.Replace(saguinYAML(memoryStorage, "operations:\n  listen:\n    tcp:\n      address: 127.0.0.1:0"), "log_level: debug", "log_level: "+level, 1) +
			"channels:\n  events:\n    type: append\n    filter: ev/#\n  jobs:\n    type: queue\n    filter: work/+/inspect\n"
		b := startSaguin(t, t.TempDir(), yaml)
		sub := dialRaw(t, b.addr, codec.Version5)
		sub.mustConnect("reader", freshSession(60))
		sub.mustSubscribe(1, "ev/#", 1)
		w := queueWorker(t, b.addr, "worker")
		pub := queueProducer(t, b.addr)
		seen := len(b.log.snapshot())
		for i := 1; i <= 100; i++ {
			pub.publishQoS1("ev/x", []byte("r"), uint16(i))
		}
		if got := sub.collect(100); len(got) != 100 {
			t.Fatalf("the consumer read %d of 100", len(got))
		}
		for i := 1; i <= 50; i++ {
			pub.publishQoS1("work/1/inspect", []byte("job"), uint16(100+i))
			w.answer(w.takeOffer(), "ack")
		}
		var q queueBody
		ob := withOps(b)
		ob.waitJSON(t, "/v1/operations/queues/jobs", &q, func() bool { return q.Unresolved == 0 })
		marker := dialRaw(t, b.addr, codec.Version5)
		marker.mustConnect("marker-client", nil)
		if b.log.waitFrom(seen, regexp.MustCompile(`client_id=marker-client`), waitLong) == "" {
			t.Fatal("the marker client was never logged")
		}
		return len(b.log.snapshot()) - seen
	}
	t.Run("info", func(t *testing.T) {
		if n := run(t, "info"); n > 10 {
			t.Fatalf("%d lines at info for 150 records and one connect", n)
		}
	})
	t.Run("debug", func(t *testing.T) {
		if n := run(t, "debug"); n < 50 {
			t.Fatalf("%d lines at debug for 50 jobs, want a line per job at least", n)
		}
	})
}

// Checklist D.8 rule 80 (RFC 0005 "What the /v1 routes answer with",
// config): /v1/operations/config can be granted on its own - a credential
// scoped to it reads it and nothing else - and a scraper scoped to /metrics
// is refused it.
func TestD8_80ConfigIsGrantedOnItsOwnAndNotToAScraper(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "operations.passwd")
	passwordFile(t, pw, [3]string{"auditor", "audit-secret", "/v1/operations/config"},
		[3]string{"prometheus", "scrape-secret", "/metrics"})
	ob := startOps(t, dir, opsTCP+"\npassword_file: "+pw, brokerConfig{})
	secret := map[string]string{"auditor": "audit-secret", "prometheus": "scrape-secret"}
	for _, c := range []struct {
		user, path string
		status     int
	}{
		{"auditor", "/v1/operations/config", 200},
		{"auditor", "/v1/operations/consumers", 403},
		{"auditor", "/metrics", 403},
		{"prometheus", "/metrics", 200},
		{"prometheus", "/v1/operations/config", 403},
	} {
		if resp, _ := ob.get(t, "GET", c.path, basic(c.user, secret[c.user])...); resp.StatusCode != c.status {
			t.Errorf("%s %s: %d, want %d", c.user, c.path, resp.StatusCode, c.status)
		}
	}
}
