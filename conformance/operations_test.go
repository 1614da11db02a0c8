package conformance

import (
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/certs/certstest"
)

// opsBroker is a broker with an operations listener, and how to reach it.
type opsBroker struct {
	*brokerProc
	ops  string // the tcp operations door's host:port
	unix string // the unix operations door's path, when configured
}

var opsOpenRE = regexp.MustCompile(`msg="operations listener open" .*listener=(\S+) kind=(\S+) address=(\S+)`)

// withOps is b with the operations tcp address its log names (waited for
// up to 5 s; "" when none opened), for tests that start b themselves.
func withOps(b *brokerProc) *opsBroker {
	ob := &opsBroker{brokerProc: b}
	if m := opsOpenRE.FindStringSubmatch(b.log.wait(opsOpenRE, 5*time.Second)); m != nil {
		ob.ops = m[3]
	}
	return ob
}

// startOps starts the broker with broker.operations written as ops (lines
// under broker.operations, $DIR the test's directory) and waits for its
// operations doors.
func startOps(t *testing.T, dir, ops string, cfg brokerConfig) *opsBroker {
	t.Helper()
	cfg.Broker += "\noperations:\n" + indentLines(ops, "  ")
	b := startBrokerIn(t, dir, cfg)
	ob := &opsBroker{brokerProc: b}
	for _, line := range b.log.snapshot() {
		if m := opsOpenRE.FindStringSubmatch(line); m != nil {
			if m[2] == "tcp" && ob.ops == "" {
				ob.ops = m[3]
			} else if m[2] == "unix" {
				ob.unix = m[3]
			}
		}
	}
	if ob.ops == "" && ob.unix == "" {
		t.Fatalf("no operations door in the log:\n%s", b.log)
	}
	return ob
}

func indentLines(s, pad string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		b.WriteString(pad + l + "\n")
	}
	return b.String()
}

const opsTCP = "listen:\n  tcp:\n    address: 127.0.0.1:0"

// get sends a request to the tcp door; hdr pairs are header name, value.
func (ob *opsBroker) get(t *testing.T, method, path string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+ob.ops+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	return do(t, http.DefaultClient, req)
}

func do(t *testing.T, c *http.Client, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func basic(user, pass string) []string {
	req, _ := http.NewRequest("GET", "/", nil)
	req.SetBasicAuth(user, pass)
	return []string{"Authorization", req.Header.Get("Authorization")}
}

// passwordFile writes an operations password file with mosquitto_passwd
// (Mosquitto's own writer, so the broker is checked against the format and
// not against itself), then appends each user's scope field.
func passwordFile(t *testing.T, path string, users ...[3]string) {
	t.Helper()
	tool := needTool(t, "mosquitto_passwd")
	os.Remove(path)
	for i, u := range users {
		args := []string{"-b", path, u[0], u[1]}
		if i == 0 {
			args = []string{"-c", "-b", path, u[0], u[1]}
		}
		if out, err := exec.Command(tool, args...).CombinedOutput(); err != nil {
			t.Fatalf("mosquitto_passwd: %v\n%s", err, out)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		for _, u := range users {
			if strings.HasPrefix(line, u[0]+":") && u[2] != "" {
				line += ":" + u[2]
			}
		}
		out = append(out, line)
	}
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestOperationsHealthAnswersOKToGETAndHEADAnd405ToOthers(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{})
	resp, body := ob.get(t, "GET", "/health")
	if resp.StatusCode != 200 || strings.TrimSpace(body) != `{"status":"ok"}` || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /health: %d %q %q", resp.StatusCode, body, resp.Header.Get("Content-Type"))
	}
	if resp, body := ob.get(t, "HEAD", "/health"); resp.StatusCode != 200 || body != "" {
		t.Fatalf("HEAD /health: %d %q", resp.StatusCode, body)
	}
	if resp, _ := ob.get(t, "POST", "/health"); resp.StatusCode != 405 || !strings.Contains(resp.Header.Get("Allow"), "GET") {
		t.Fatalf("POST /health: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
	if resp, _ := ob.get(t, "GET", "/ready"); resp.StatusCode != 404 {
		t.Fatalf("GET /ready: %d, want 404 (there is no /ready)", resp.StatusCode)
	}
	if resp, _ := ob.get(t, "HEAD", "/v1/operations/sessions"); resp.StatusCode != 405 {
		t.Fatalf("HEAD /v1/operations/sessions: %d, want 405", resp.StatusCode)
	}
}

var hooksBinary struct {
	once sync.Once
	path string
	err  error
}

// TestOperationsHealthAnswers503WhileAPublishPathLockIsHeld runs a binary
// built with the saguin_testhooks tag, whose SIGUSR2 takes a session shard's
// lock and holds it, and sees /health answer 503 - and 200 again once the
// lock is let go.
func TestOperationsHealthAnswers503WhileAPublishPathLockIsHeld(t *testing.T) {
	if *binaryFlag != "" {
		t.Skip("-binary is set: the test-hooks build is made from source")
	}
	hooksBinary.once.Do(func() {
		hooksBinary.path = filepath.Join(filepath.Dir(binPath), "saguin-testhooks")
		out, err := exec.Command("go", "build", "-tags", "saguin_testhooks", "-o", hooksBinary.path, "github.com/saguin-edge/saguin/cmd/saguin").CombinedOutput()
		if err != nil {
			hooksBinary.err = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if hooksBinary.err != nil {
		t.Fatal(hooksBinary.err)
	}
	real := binPath
	binPath = hooksBinary.path
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{})
	binPath = real

	if resp, _ := ob.get(t, "GET", "/health"); resp.StatusCode != 200 {
		t.Fatalf("before the hold: %d", resp.StatusCode)
	}
	ob.signal(syscall.SIGUSR2)
	if ob.log.wait(regexp.MustCompile(`holding a publish-path lock`), 5*time.Second) == "" {
		t.Fatal("the hook did not take the lock")
	}
	resp, body := ob.get(t, "GET", "/health")
	if resp.StatusCode != 503 || strings.TrimSpace(body) != `{"status":"unavailable"}` {
		t.Fatalf("with the lock held: %d %q, want 503 unavailable", resp.StatusCode, body)
	}
	ob.signal(syscall.SIGUSR2)
	if ob.log.wait(regexp.MustCompile(`publish-path lock let go`), 5*time.Second) == "" {
		t.Fatal("the hook did not let the lock go")
	}
	if resp, _ := ob.get(t, "GET", "/health"); resp.StatusCode != 200 {
		t.Fatalf("after the hold: %d", resp.StatusCode)
	}
}

// catalogue is RFC 0005 "The catalogue", copied from the specification: name,
// type and labels of all 82 names, so the scrape is checked against the text
// and not against the broker's own table.
var catalogue = map[string]struct {
	typ    dto.MetricType
	labels string
}{}

func init() {
	const g, c = dto.MetricType_GAUGE, dto.MetricType_COUNTER
	rows := []struct {
		name   string
		typ    dto.MetricType
		labels string
	}{
		{"saguin_build_info", g, "version,broker_id"}, {"saguin_uptime_seconds", g, ""}, {"saguin_connections", g, ""},
		{"saguin_connections_by_protocol", g, "protocol"}, {"saguin_connections_total", c, ""}, {"saguin_sessions_offline", g, ""},
		{"saguin_wills_published_total", c, "cause"}, {"saguin_wills_cancelled_total", c, ""}, {"saguin_wills_waiting", g, ""},
		{"saguin_sessions_restored_total", c, ""}, {"saguin_sessions_dropped_total", c, "cause"}, {"saguin_session_queue_messages", g, ""},
		{"saguin_session_queue_bytes", g, ""}, {"saguin_retained_messages", g, ""}, {"saguin_qos2_held", g, ""},
		{"saguin_qos2_abandoned_total", c, ""}, {"saguin_qos2_max_inflight_per_client", g, ""}, {"saguin_subscriptions", g, ""},
		{"saguin_session_expiry_shortened_total", c, ""}, {"saguin_max_session_expiry_seconds", g, ""},
		{"saguin_bytes_received_total", c, ""}, {"saguin_bytes_sent_total", c, ""}, {"saguin_publishes_received_total", c, ""},
		{"saguin_deliveries_sent_total", c, ""}, {"saguin_deliveries_refused_total", c, ""}, {"saguin_published_total", c, "channel"},
		{"saguin_connections_refused_total", c, "reason"}, {"saguin_publish_refused_total", c, "reason"},
		{"saguin_subscriptions_refused_total", c, "reason"}, {"saguin_broadcast_unmatched_total", c, ""},
		{"saguin_deliveries_dropped_total", c, ""}, {"saguin_deliveries_expired_total", c, ""}, {"saguin_shares_held_total", c, ""},
		{"saguin_shares_drained_total", c, ""}, {"saguin_shares_dropped_total", c, "cause"}, {"saguin_session_deliveries_dropped_total", c, "cause"},
		{"saguin_channel_info", g, "channel,filter,type,provider"}, {"saguin_channel_records", g, "channel"}, {"saguin_channel_bytes", g, "channel"},
		{"saguin_channel_next_offset", g, "channel"}, {"saguin_channel_floor_offset", g, "channel"},
		{"saguin_channel_retention_removed_total", c, "channel"}, {"saguin_channel_consumer_position_min", g, "channel"},
		{"saguin_channel_consumers", g, "channel"}, {"saguin_channel_partitioned_consumers", g, "channel"},
		{"saguin_channel_position_lost_total", c, "channel"}, {"saguin_latest_superseded_total", c, "channel"},
		{"saguin_queue_depth", g, "channel"}, {"saguin_queue_inflight", g, "channel"}, {"saguin_queue_delivered_total", c, "channel"},
		{"saguin_queue_acknowledged_total", c, "channel"}, {"saguin_queue_returned_total", c, "channel"},
		{"saguin_queue_redelivered_total", c, "channel"}, {"saguin_queue_dead_lettered_total", c, "channel"},
		{"saguin_queue_expired_total", c, "channel"}, {"saguin_queue_retain_ignored_total", c, "channel"},
		{"saguin_provider_info", g, "provider,type"}, {"saguin_provider_bytes", g, "provider"}, {"saguin_provider_max_bytes", g, "provider"},
		{"saguin_storage_errors_total", c, "provider"}, {"saguin_storage_commits_total", c, "provider,closed_by"},
		{"saguin_storage_committed_records_total", c, "provider"}, {"saguin_provider_publish_commit_max_records", g, "provider"},
		{"saguin_bridge_info", g, "bridge,peer"}, {"saguin_bridge_connected", g, "bridge"}, {"saguin_bridge_stopped", g, "bridge"},
		{"saguin_bridge_received_total", c, "bridge"}, {"saguin_bridge_unstored_total", c, "bridge,cause"}, {"saguin_bridge_sent_total", c, "bridge"},
		{"saguin_bridge_loops_skipped_total", c, "bridge"}, {"saguin_bridge_unsent_total", c, "bridge,cause"},
		{"saguin_bridge_reconnects_total", c, "bridge"},
		{"saguin_go_heap_live_bytes", g, ""}, {"saguin_go_heap_goal_bytes", g, ""}, {"saguin_go_gc_cycles_total", c, ""},
		{"saguin_go_gc_cpu_seconds_total", c, ""}, {"saguin_go_gc_assist_cpu_seconds_total", c, ""}, {"saguin_go_stack_bytes", g, ""},
		{"saguin_go_allocated_bytes_total", c, ""}, {"saguin_go_allocated_objects_total", c, ""}, {"saguin_go_gogc_percent", g, ""},
		{"saguin_go_memory_limit_bytes", g, ""},
	}
	for _, r := range rows {
		catalogue[r.name] = struct {
			typ    dto.MetricType
			labels string
		}{r.typ, r.labels}
	}
}

// parseScrape parses a scrape with Prometheus' own text parser and checks
// every family against the catalogue: a name it holds, its type, its labels
// in order, a HELP line. It returns the families by name.
func parseScrape(t *testing.T, body string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("the scrape does not parse: %v\n%s", err, body)
	}
	for name, f := range fams {
		want, ok := catalogue[name]
		if !ok {
			t.Errorf("%s is not in the catalogue", name)
			continue
		}
		if f.GetType() != want.typ {
			t.Errorf("%s is a %v, the catalogue says %v", name, f.GetType(), want.typ)
		}
		if f.GetHelp() == "" {
			t.Errorf("%s has no HELP", name)
		}
		for _, m := range f.Metric {
			var names []string
			for _, l := range m.Label {
				names = append(names, l.GetName())
			}
			sort.Strings(names)
			wantNames := strings.Split(want.labels, ",")
			if want.labels == "" {
				wantNames = nil
			}
			sort.Strings(wantNames)
			if !slices.Equal(names, wantNames) {
				t.Errorf("%s carries labels %v, the catalogue says %v", name, names, wantNames)
			}
		}
	}
	if len(catalogue) != 82 {
		t.Fatalf("the copied catalogue has %d names, the RFC 82", len(catalogue))
	}
	return fams
}

func value(f *dto.MetricFamily, labels ...string) (float64, bool) {
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.Label {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		if m.Gauge != nil {
			return m.Gauge.GetValue(), true
		}
		return m.Counter.GetValue(), true
	}
	return 0, false
}

func TestOperationsScrapeIsTheCatalogueAndNothingElse(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP+"\nmin_scrape_interval: 60s", brokerConfig{})
	// One client connected and subscribed, one publish nobody matches, one
	// subscription refused: numbers a scrape must show.
	c := dialRaw(t, ob.addr, 5)
	c.mustConnect("scraped", nil)
	c.subscribe(1, "a/b", 0)
	c.subscribe(2, "$SYS/#", 0)
	c.publish("nobody/listens", []byte("x"), 0, 0)
	c.ping()

	resp, body := ob.get(t, "GET", "/metrics")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("GET /metrics: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	fams := parseScrape(t, body)
	for _, name := range []string{"saguin_build_info", "saguin_uptime_seconds", "saguin_connections", "saguin_connections_total",
		"saguin_sessions_dropped_total", "saguin_retained_messages", "saguin_qos2_held", "saguin_qos2_max_inflight_per_client",
		"saguin_max_session_expiry_seconds", "saguin_shares_dropped_total", "saguin_session_deliveries_dropped_total",
		"saguin_provider_info", "saguin_provider_bytes", "saguin_go_heap_live_bytes", "saguin_go_memory_limit_bytes", "saguin_published_total"} {
		if fams[name] == nil {
			t.Errorf("%s is missing from the scrape", name)
		}
	}
	if v, _ := value(fams["saguin_build_info"], "broker_id", "conformance"); v != 1 {
		t.Errorf("saguin_build_info{broker_id=conformance} = %v", v)
	}
	if v, _ := value(fams["saguin_connections"]); v != 1 {
		t.Errorf("saguin_connections = %v, want 1", v)
	}
	if v, _ := value(fams["saguin_connections_by_protocol"], "protocol", "5"); v != 1 {
		t.Errorf("saguin_connections_by_protocol{protocol=5} = %v, want 1", v)
	}
	if v, ok := value(fams["saguin_broadcast_unmatched_total"]); !ok || v != 1 {
		t.Errorf("saguin_broadcast_unmatched_total = %v (present %v), want 1 (the publish to nobody/listens)", v, ok)
	}
	if v, _ := value(fams["saguin_subscriptions_refused_total"], "reason", "not authorized"); v != 1 {
		t.Errorf("saguin_subscriptions_refused_total{reason=not authorized} = %v, want 1 (the $SYS/# filter)", v)
	}
	if n := len(fams["saguin_shares_dropped_total"].GetMetric()); n != 6 {
		t.Errorf("saguin_shares_dropped_total has %d series, want all six causes", n)
	}
	if n := len(fams["saguin_session_deliveries_dropped_total"].GetMetric()); n != 5 {
		t.Errorf("saguin_session_deliveries_dropped_total has %d series, want all five causes", n)
	}
	if fams["saguin_storage_errors_total"] != nil || fams["saguin_publish_refused_total"] != nil {
		t.Error("a name with no event yet carries a series")
	}
	if v, _ := value(fams["saguin_provider_info"], "provider", "mem", "type", "memory"); v != 1 {
		t.Errorf("saguin_provider_info{provider=mem,type=memory} = %v", v)
	}

	// Sooner than min_scrape_interval the same bytes come back, and gzip
	// is the same computation compressed.
	c.publish("nobody/listens", []byte("y"), 0, 0)
	c.ping()
	if _, again := ob.get(t, "GET", "/metrics"); again != body {
		t.Error("a scrape inside min_scrape_interval was recomputed")
	}
	req, _ := http.NewRequest("GET", "http://"+ob.ops+"/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	tr := &http.Transport{DisableCompression: true}
	resp, gz := do(t, &http.Client{Transport: tr}, req)
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Accept-Encoding gzip answered with Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(strings.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(zr)
	if string(plain) != body {
		t.Error("the gzipped scrape is not the cached one")
	}
	if resp, b := ob.get(t, "HEAD", "/metrics"); resp.StatusCode != 200 || b != "" {
		t.Errorf("HEAD /metrics: %d, %d bytes", resp.StatusCode, len(b))
	}
}

func TestOperationsMinScrapeIntervalBelowAMinuteIsRefused(t *testing.T) {
	dir := t.TempDir()
	code, out := startFailing(t, brokerConfig{Broker: "operations:\n" + indentLines(opsTCP+"\nmin_scrape_interval: 10s", "  ")}, dir)
	if code == 0 || !strings.Contains(out, "min_scrape_interval") {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
}

func TestOperationsHostRuleRefusesANamelessRequestAddressedByName(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{})
	resp, body := ob.get(t, "GET", "/v1/operations/sessions", "Host", "rebound.example:9090")
	if resp.StatusCode != 403 || !strings.Contains(body, "password_file") {
		t.Fatalf("Host rebound.example: %d %q, want 403 naming password_file", resp.StatusCode, body)
	}
	for _, host := range []string{"localhost:9090", "127.0.0.1", "[::1]:9090", "LOCALHOST"} {
		if resp, _ := ob.get(t, "GET", "/v1/operations/sessions", "Host", host); resp.StatusCode != 200 {
			t.Errorf("Host %s: %d, want 200", host, resp.StatusCode)
		}
	}
	// /health is never behind it.
	if resp, _ := ob.get(t, "GET", "/health", "Host", "rebound.example"); resp.StatusCode != 200 {
		t.Errorf("/health by name: %d", resp.StatusCode)
	}
}

func TestOperationsCredentialsAndScopes(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "operations.passwd")
	passwordFile(t, pw, [3]string{"prometheus", "scrape-secret", "/metrics"}, [3]string{"alice", "alice-secret", ""},
		[3]string{"oncall", "oncall-secret", "/v1/operations"})
	ob := startOps(t, dir, opsTCP+"\npassword_file: "+pw, brokerConfig{})

	cases := []struct {
		who    []string
		path   string
		status int
	}{
		{nil, "/metrics", 401},
		{nil, "/health", 200},
		{basic("prometheus", "wrong"), "/metrics", 401},
		{basic("nobody", "scrape-secret"), "/metrics", 401},
		{basic("prometheus", "scrape-secret"), "/metrics", 200},
		{basic("prometheus", "scrape-secret"), "/v1/operations/sessions", 403},
		{basic("oncall", "oncall-secret"), "/metrics", 403},
		{basic("oncall", "oncall-secret"), "/v1/operations/sessions", 200},
		{basic("oncall", "oncall-secret"), "/v1/operations/config", 200},
		{basic("alice", "alice-secret"), "/metrics", 200},
		{basic("alice", "alice-secret"), "/v1/operations/config", 200},
		{basic("ali\x01ce", "alice-secret"), "/metrics", 403},
		// The header is never read on a tcp door, so it names nobody.
		{[]string{"X-Saguin-Principal", "alice"}, "/v1/operations/config", 401},
		// A failed password ends there, whatever else the request says.
		{append(basic("alice", "wrong"), "X-Saguin-Principal", "alice"), "/metrics", 401},
	}
	for _, c := range cases {
		resp, _ := ob.get(t, "GET", c.path, c.who...)
		if resp.StatusCode != c.status {
			t.Errorf("%v %s: %d, want %d", c.who, c.path, resp.StatusCode, c.status)
		}
		if resp.StatusCode == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
			t.Errorf("%v %s: 401 without WWW-Authenticate", c.who, c.path)
		}
	}
	if strings.Contains(ob.log.String(), "secret") {
		t.Error("a rejected credential's password reached the log")
	}
	if ob.log.wait(regexp.MustCompile(`operations credential rejected`), time.Second) == "" {
		t.Error("no log line says a credential was rejected")
	}
}

// unixGet sends a request over the unix door.
func (ob *opsBroker) unixGet(t *testing.T, path string, hdr ...string) (*http.Response, string) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", ob.unix)
	}}}
	req, _ := http.NewRequest("GET", "http://saguin"+path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return do(t, c, req)
}

func TestOperationsUnixDoorBelievesXSaguinPrincipal(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "operations.passwd")
	passwordFile(t, pw, [3]string{"oncall", "oncall-secret", "/v1/operations"})
	sock := filepath.Join(dir, "ops.sock")
	ob := startOps(t, dir, "listen:\n  unix:\n    path: "+sock+"\npassword_file: "+pw, brokerConfig{})
	cases := []struct {
		hdr    []string
		path   string
		status int
	}{
		{nil, "/v1/operations/sessions", 401},
		{[]string{"X-Saguin-Principal", "oncall"}, "/v1/operations/sessions", 200},
		{[]string{"X-Saguin-Principal", "oncall"}, "/metrics", 403},
		// A name with no entry reaches /metrics and nothing else.
		{[]string{"X-Saguin-Principal", "stranger"}, "/metrics", 200},
		{[]string{"X-Saguin-Principal", "stranger"}, "/v1/operations/sessions", 403},
		{[]string{"X-Saguin-Principal", "   "}, "/metrics", 401},
		{nil, "/health", 200},
	}
	for _, c := range cases {
		if resp, _ := ob.unixGet(t, c.path, c.hdr...); resp.StatusCode != c.status {
			t.Errorf("%v %s: %d, want %d", c.hdr, c.path, resp.StatusCode, c.status)
		}
	}
}

func TestOperationsSessionsListsHeldSessionsFirst(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{})
	away := dialRaw(t, ob.addr, 5)
	away.mustConnect("held-1", freshSession(3600))
	away.disconnect()
	here := dialRaw(t, ob.addr, 4)
	here.mustConnect("here-1", nil)
	deadline := time.Now().Add(5 * time.Second)
	var body string
	for time.Now().Before(deadline) {
		_, body = ob.get(t, "GET", "/v1/operations/sessions")
		if strings.Contains(body, `"offline":1`) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{`"total":2`, `"connected":1`, `"offline":1`, `"returned":2`} {
		if !strings.Contains(body, want) {
			t.Fatalf("sessions body lacks %s: %s", want, body)
		}
	}
	if i, j := strings.Index(body, "held-1"), strings.Index(body, "here-1"); i < 0 || j < 0 || i > j {
		t.Fatalf("the held session is not listed first: %s", body)
	}
	if !strings.Contains(body, `"listener":"tcp"`) || !strings.Contains(body, `"protocol":4`) || strings.Contains(body, "partitions") {
		t.Fatalf("sessions body: %s", body)
	}
}

// TestOperationsNoRouteReturnsAConfiguredFilesContents reads every file the
// resolved configuration names and requires that none of its contents comes
// back on any route.
func TestOperationsNoRouteReturnsAConfiguredFilesContents(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "operations.passwd")
	passwordFile(t, pw, [3]string{"alice", "alice-secret", ""})
	ob := startOps(t, dir, opsTCP+"\npassword_file: "+pw, brokerConfig{})
	auth := basic("alice", "alice-secret")
	_, cfgBody := ob.get(t, "GET", "/v1/operations/config", auth...)
	named := map[string]bool{pw: true}
	for _, m := range regexp.MustCompile(`"(/[^"]+)"`).FindAllStringSubmatch(cfgBody, -1) {
		if st, err := os.Stat(m[1]); err == nil && st.Mode().IsRegular() && !strings.HasSuffix(m[1], "saguin.yaml") {
			named[m[1]] = true
		}
	}
	var bodies []string
	for _, p := range []string{"/health", "/metrics", "/v1/operations/acl?user=alice", "/v1/operations/config", "/v1/operations/consumers",
		"/v1/operations/position-lost", "/v1/operations/refused", "/v1/operations/sessions", "/v1/operations/users", "/v1/operations/queues/jobs"} {
		_, b := ob.get(t, "GET", p, auth...)
		bodies = append(bodies, b)
	}
	for path := range named {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			for _, field := range strings.Split(line, ":") {
				if len(field) < 8 {
					continue
				}
				for _, b := range bodies {
					if strings.Contains(b, field) {
						t.Errorf("%s's contents (%q) came back on a route", path, field)
					}
				}
			}
		}
	}
	if !strings.Contains(cfgBody, pw) {
		t.Errorf("the password file is not named by path in /v1/operations/config: %s", cfgBody)
	}
}

func TestOperationsConfigSections(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{})
	_, body := ob.get(t, "GET", "/v1/operations/config?section=providers&section=limits")
	if !strings.HasPrefix(body, `{"providers":{"mem":`) || !strings.Contains(body, `"limits":{`) || strings.Contains(body, `"broker"`) {
		t.Fatalf("?section=providers&section=limits: %s", body)
	}
	// A section the file leaves out is there, empty: a reader tells "none
	// configured" from "no such section" (the 400 below).
	if resp, body := ob.get(t, "GET", "/v1/operations/config?section=bridges"); resp.StatusCode != 200 || strings.TrimSpace(body) != `{"bridges":{}}` {
		t.Errorf("an unused section: %d %s, want {\"bridges\":{}}", resp.StatusCode, body)
	}
	resp, body := ob.get(t, "GET", "/v1/operations/config?section=provider")
	if resp.StatusCode != 400 || !strings.Contains(body, "providers") {
		t.Fatalf("an unknown section: %d %s", resp.StatusCode, body)
	}
	if resp, body := ob.get(t, "GET", "/v1/operations/queues/not-a-queue"); resp.StatusCode != 404 || strings.Contains(body, "jobs") {
		t.Fatalf("an unconfigured queue: %d %s", resp.StatusCode, body)
	}
}

// TestOperationsSIGUSR1RereadsCredentialsAllOrNothing adds a user and sees it
// admitted after SIGUSR1, then breaks the file and sees the signal change
// nothing and the broker keep running.
func TestOperationsSIGUSR1RereadsCredentialsAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "operations.passwd")
	passwordFile(t, pw, [3]string{"alice", "alice-secret", ""})
	ob := startOps(t, dir, opsTCP+"\npassword_file: "+pw, brokerConfig{})
	if resp, _ := ob.get(t, "GET", "/metrics", basic("bob", "bob-secret")...); resp.StatusCode != 401 {
		t.Fatalf("bob before the re-read: %d", resp.StatusCode)
	}
	passwordFile(t, pw, [3]string{"alice", "alice-secret", ""}, [3]string{"bob", "bob-secret", "/metrics"})
	ob.signal(syscall.SIGUSR1)
	if ob.log.wait(regexp.MustCompile(`SIGUSR1: re-read.*names 2 users`), 5*time.Second) == "" {
		t.Fatal("no log line says what the password file now holds")
	}
	if ob.log.wait(regexp.MustCompile(`SIGUSR1: log level applied.* from=debug to=debug`), time.Second) == "" {
		t.Error("no log line says which level was applied")
	}
	if resp, _ := ob.get(t, "GET", "/metrics", basic("bob", "bob-secret")...); resp.StatusCode != 200 {
		t.Fatalf("bob after the re-read: %d", resp.StatusCode)
	}
	if err := os.WriteFile(pw, []byte("bob:$argon2id$v=19$nonsense\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ob.signal(syscall.SIGUSR1)
	if ob.log.wait(regexp.MustCompile(`level=ERROR msg="SIGUSR1: `), 5*time.Second) == "" {
		t.Fatal("a broken file was not reported")
	}
	if resp, _ := ob.get(t, "GET", "/metrics", basic("alice", "alice-secret")...); resp.StatusCode != 200 {
		t.Fatalf("alice after a failed re-read: %d, want the credentials held before", resp.StatusCode)
	}
}

// TestOperationsScrapeCarriesTheChannelFamiliesWhereTheirNumbersExist runs
// an append and a latest channel: each has its channel_info and records,
// the offsets and bytes only on append, the lowest position only while a
// consumer holds one, the superseded count only on latest.
func TestOperationsScrapeCarriesTheChannelFamiliesWhereTheirNumbersExist(t *testing.T) {
	dir := t.TempDir()
	yaml := saguinYAML(memoryStorage, "operations:\n  listen:\n    tcp:\n      address: 127.0.0.1:0") +
		"channels:\n  events:\n    type: append\n    filter: iot/+/events/+\n  state:\n    type: latest\n    filter: iot/+/state/+\n"
	b := startSaguin(t, dir, yaml)
	ob := withOps(b)
	// One subscriber declares a partition slice on each channel.
	part := dialRaw(t, b.addr, codec.Version5)
	part.mustConnect("slice-0", nil)
	for i, f := range []string{"iot/+/events/+", "iot/+/state/+"} {
		if ack := part.subscribeWith(uint16(i+1), withUser("saguin-filter", "topic_hash(2, 0)"), codec.Subscription{Filter: []byte(f), QoS: 1}); ack.ReasonCodes[0] != 1 {
			t.Fatalf("SUBACK 0x%02x for %s with a slice", byte(ack.ReasonCodes[0]), f)
		}
	}
	c := dialRaw(t, b.addr, 5)
	c.mustConnect("publisher", nil)
	for i, topic := range []string{"iot/d1/events/a", "iot/d1/events/b", "iot/d1/state/a"} {
		c.publishQoS1(topic, []byte("v"), uint16(i+1))
	}
	_, body := ob.get(t, "GET", "/metrics")
	fams := parseScrape(t, body)
	want := []struct {
		name   string
		labels []string
		value  float64
	}{
		{"saguin_channel_info", []string{"channel", "events", "type", "append", "filter", "iot/+/events/+", "provider", "mem"}, 1},
		{"saguin_channel_info", []string{"channel", "state", "type", "latest", "filter", "iot/+/state/+", "provider", "mem"}, 1},
		{"saguin_channel_records", []string{"channel", "events"}, 2},
		{"saguin_channel_records", []string{"channel", "state"}, 1},
		{"saguin_channel_consumers", []string{"channel", "events"}, 0},
		{"saguin_published_total", []string{"channel", "events"}, 2},
		{"saguin_published_total", []string{"channel", "state"}, 1},
		{"saguin_latest_superseded_total", []string{"channel", "state"}, 0},
		{"saguin_channel_retention_removed_total", []string{"channel", "state"}, 0},
		{"saguin_channel_partitioned_consumers", []string{"channel", "events"}, 1},
		{"saguin_channel_partitioned_consumers", []string{"channel", "state"}, 1},
	}
	for _, w := range want {
		if v, ok := value(fams[w.name], w.labels...); !ok || v != w.value {
			t.Errorf("%s%v = %v (present %v), want %v", w.name, w.labels, v, ok, w.value)
		}
	}
	for _, absent := range []struct{ name, channel string }{
		{"saguin_channel_next_offset", "state"}, {"saguin_channel_bytes", "state"}, {"saguin_channel_floor_offset", "state"},
		{"saguin_channel_consumer_position_min", "events"}, {"saguin_latest_superseded_total", "events"},
	} {
		if _, ok := value(fams[absent.name], "channel", absent.channel); ok {
			t.Errorf("%s{channel=%s} has a series; the RFC has none there", absent.name, absent.channel)
		}
	}
	if _, ok := value(fams["saguin_channel_next_offset"], "channel", "events"); !ok {
		t.Error("saguin_channel_next_offset{channel=events} is missing")
	}
}

// TestOperationsTLSDoorNamesTheCallerByItsCertificate serves a tcp door with
// TLS and a required client certificate: a certificate named in the
// password file reaches what its entry says, a named stranger and a
// certificate carrying no name reach /metrics alone, and a caller with no
// certificate does not complete the handshake.
func TestOperationsTLSDoorNamesTheCallerByItsCertificate(t *testing.T) {
	dir := t.TempDir()
	ca := certstest.NewCA(t, "operators")
	certFile, keyFile := ca.Server(t).Write(t, dir, "server")
	caFile := ca.Write(t, dir, "operators-ca")
	pw := filepath.Join(dir, "operations.passwd")
	passwordFile(t, pw, [3]string{"oncall", "never-checked-for-a-certificate", "/v1/operations"})
	ob := startOps(t, dir, fmt.Sprintf("listen:\n  tcp:\n    address: 127.0.0.1:0\n    tls:\n      cert_file: %s\n      key_file: %s\n      client_ca_file: %s\npassword_file: %s",
		certFile, keyFile, caFile, pw), brokerConfig{})
	client := func(leaf *certstest.Leaf) *http.Client {
		conf := &tls.Config{RootCAs: ca.Pool()}
		if leaf != nil {
			conf.Certificates = []tls.Certificate{leaf.TLS}
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: conf}}
	}
	get := func(c *http.Client, path string) int {
		req, _ := http.NewRequest("GET", "https://"+ob.ops+path, nil)
		resp, _ := do(t, c, req)
		return resp.StatusCode
	}
	oncall := client(ca.Issue(t, certstest.Spec{CN: "oncall", Client: true}))
	stranger := client(ca.Issue(t, certstest.Spec{CN: "stranger", Client: true}))
	nameless := client(ca.Issue(t, certstest.Spec{Client: true}))
	byDNS := client(ca.Issue(t, certstest.Spec{DNSNames: []string{"oncall"}, Client: true}))
	cases := []struct {
		who    string
		c      *http.Client
		path   string
		status int
	}{
		{"oncall", oncall, "/v1/operations/sessions", 200},
		{"oncall", oncall, "/metrics", 403},
		{"oncall by DNS name", byDNS, "/v1/operations/sessions", 200},
		{"stranger", stranger, "/metrics", 200},
		{"stranger", stranger, "/v1/operations/sessions", 403},
		{"nameless", nameless, "/metrics", 200},
		{"nameless", nameless, "/v1/operations/config", 403},
	}
	for _, c := range cases {
		if got := get(c.c, c.path); got != c.status {
			t.Errorf("%s %s: %d, want %d", c.who, c.path, got, c.status)
		}
	}
	req, _ := http.NewRequest("GET", "https://"+ob.ops+"/health", nil)
	if resp, err := client(nil).Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a caller with no certificate was answered %d; the handshake should have failed", resp.StatusCode)
	}
}

// TestOperationsACLRouteAnswersFromTheHeldACLFile asks /v1/operations/acl
// about users of the acl_file the broker runs with: the --acl --json shape,
// client_id_allowed null without a client id and false where the entry's
// client_ids refuse it, an unmatched name granted nothing with 200, and no
// user a 400.
func TestOperationsACLRouteAnswersFromTheHeldACLFile(t *testing.T) {
	dir := t.TempDir()
	pw := writePasswd(t, dir, authUsers)
	if err := os.WriteFile(filepath.Join(dir, "acl.yaml"), []byte(authACL), 0o600); err != nil {
		t.Fatal(err)
	}
	ob := startOps(t, dir, opsTCP, brokerConfig{MQTT: "password_file: " + pw + "\nacl_file: " + filepath.Join(dir, "acl.yaml")})
	_, body := ob.get(t, "GET", "/v1/operations/acl?user=device-7")
	for _, want := range []string{`"user":"device-7"`, `"pattern_applied":"device-*"`, `"client_id_allowed":null`, `"role":"device"`, `"denies":[]`} {
		if !strings.Contains(body, want) {
			t.Errorf("device-7: %s lacks %s", body, want)
		}
	}
	if _, body := ob.get(t, "GET", "/v1/operations/acl?user=north&client_id=south-1"); !strings.Contains(body, `"client_id_allowed":false`) {
		t.Errorf("north as south-1: %s", body)
	}
	resp, body := ob.get(t, "GET", "/v1/operations/acl?user=printer-3")
	if resp.StatusCode != 200 || !strings.Contains(body, `"grants":[]`) || !strings.Contains(body, `"pattern_applied":null`) {
		t.Errorf("an unmatched name: %d %s", resp.StatusCode, body)
	}
	if resp, _ := ob.get(t, "GET", "/v1/operations/acl"); resp.StatusCode != 400 {
		t.Errorf("no user: %d, want 400", resp.StatusCode)
	}
	if strings.Contains(body, "pw7") {
		t.Error("a password came back")
	}
}

// TestOperationsScrapeCarriesTheQueueFamiliesFromTheEngineCounters runs a
// queue through three jobs - one acknowledged, one returned, one published
// with RETAIN - and leaves the last offer unanswered, its PUBACK not sent:
// each family has the queue's series at the value the RFC's row gives it,
// the unanswered offer counted in depth and in neither delivered nor
// inflight (given to a worker that has not yet received it, checklist
// C15.3). Each offer arrives only after the engine handled the answer
// before it, so the one scrape sees every count.
func TestOperationsScrapeCarriesTheQueueFamiliesFromTheEngineCounters(t *testing.T) {
	dir := t.TempDir()
	yaml := saguinYAML(memoryStorage, "operations:\n  listen:\n    tcp:\n      address: 127.0.0.1:0") +
		"channels:\n  jobs:\n    type: queue\n    filter: work/+/inspect\n    visibility_timeout: 1m\n"
	b := startSaguin(t, dir, yaml)
	ob := withOps(b)
	w := queueWorker(t, b.addr, "w1")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("producer", nil)
	pub.publishQoS1("work/1/inspect", []byte("a"), 1)
	pub.publishQoS1("work/2/inspect", []byte("b"), 2)
	if code := pub.publishAs(&codec.Publish{Retain: true, Topic: []byte("work/3/inspect"), Payload: []byte("c")}, 3); code != codec.Success {
		t.Fatalf("a retained queue publish PUBACK 0x%02x, want 0x00", byte(code))
	}
	first := w.expectPublishWithin(5 * time.Second)
	w.ackDelivery(first)
	w.answer(first, "ack")
	second := w.expectPublishWithin(5 * time.Second)
	w.ackDelivery(second)
	w.answer(second, "return")
	w.expectPublishWithin(5 * time.Second) // offered, not PUBACKed

	_, body := ob.get(t, "GET", "/metrics")
	fams := parseScrape(t, body)
	want := []struct {
		name   string
		labels []string
		value  float64
	}{
		{"saguin_channel_info", []string{"channel", "jobs", "type", "queue", "filter", "work/+/inspect", "provider", "mem"}, 1},
		{"saguin_queue_depth", []string{"channel", "jobs"}, 2},
		{"saguin_queue_inflight", []string{"channel", "jobs"}, 0},
		{"saguin_queue_delivered_total", []string{"channel", "jobs"}, 2},
		{"saguin_queue_acknowledged_total", []string{"channel", "jobs"}, 1},
		{"saguin_queue_returned_total", []string{"channel", "jobs"}, 1},
		{"saguin_queue_redelivered_total", []string{"channel", "jobs"}, 0},
		{"saguin_queue_dead_lettered_total", []string{"channel", "jobs"}, 0},
		{"saguin_queue_expired_total", []string{"channel", "jobs"}, 0},
		{"saguin_queue_retain_ignored_total", []string{"channel", "jobs"}, 1},
		{"saguin_published_total", []string{"channel", "jobs"}, 3},
		{"saguin_channel_retention_removed_total", []string{"channel", "jobs"}, 0},
		{"saguin_channel_position_lost_total", []string{"channel", "jobs"}, 0},
		// The derived dead-letter channel carries the append families,
		// its published count 0 for good (RFC 0005's example scrape).
		{"saguin_channel_info", []string{"channel", "jobs__dlq", "type", "append", "filter", "work/+/inspect/__dlq", "provider", "mem"}, 1},
		{"saguin_published_total", []string{"channel", "jobs__dlq"}, 0},
		{"saguin_channel_records", []string{"channel", "jobs__dlq"}, 0},
		{"saguin_channel_next_offset", []string{"channel", "jobs__dlq"}, 1},
		{"saguin_channel_consumers", []string{"channel", "jobs__dlq"}, 0},
		{"saguin_channel_partitioned_consumers", []string{"channel", "jobs"}, 0},
		{"saguin_channel_partitioned_consumers", []string{"channel", "jobs__dlq"}, 0},
	}
	for _, w := range want {
		if v, ok := value(fams[w.name], w.labels...); !ok || v != w.value {
			t.Errorf("%s%v = %v (present %v), want %v", w.name, w.labels, v, ok, w.value)
		}
	}
	if v, ok := value(fams["saguin_channel_bytes"], "channel", "jobs"); !ok || v <= 0 {
		t.Errorf("saguin_channel_bytes{channel=jobs} = %v (present %v), want the two jobs' bytes", v, ok)
	}
	if _, ok := value(fams["saguin_channel_records"], "channel", "jobs"); ok {
		t.Error("saguin_channel_records{channel=jobs} has a series; a queue carries saguin_queue_depth instead")
	}
}

// Checklist D8.73 (RFC 0005 "What the /v1 routes answer with"): with no
// acl_file configured, /v1/operations/acl answers that everything is
// allowed.
func TestD8_73OperationsACLRouteWithoutAnACLFile(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{})
	resp, body := ob.get(t, "GET", "/v1/operations/acl?user=device-7")
	var got map[string]any
	if err := json.Unmarshal([]byte(body), &got); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %s: %v", resp.StatusCode, body, err)
	}
	if v, ok := got["acl_file"]; !ok || v != nil || got["everything_allowed"] != true || len(got) != 2 {
		t.Fatalf(`%s, want {"acl_file":null,"everything_allowed":true}`, body)
	}
}

// Checklist D8.75 (RFC 0005 "What the /v1 routes answer with"): the acl
// route answers from the acl_file the broker holds now - after an edit and
// SIGUSR1, the re-read file's roles.
func TestD8_75OperationsACLRouteFollowsSIGUSR1(t *testing.T) {
	dir := t.TempDir()
	pw := writePasswd(t, dir, authUsers)
	aclPath := filepath.Join(dir, "acl.yaml")
	if err := os.WriteFile(aclPath, []byte(authACL), 0o600); err != nil {
		t.Fatal(err)
	}
	ob := startOps(t, dir, opsTCP, brokerConfig{MQTT: "password_file: " + pw + "\nacl_file: " + aclPath})
	if _, body := ob.get(t, "GET", "/v1/operations/acl?user=dashboard"); !strings.Contains(body, `"role":"reader"`) {
		t.Fatalf("before the re-read: %s", body)
	}
	edited := strings.Replace(authACL, "  dashboard: [reader]\n", "  dashboard: [device]\n", 1)
	if err := os.WriteFile(aclPath, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, body := ob.get(t, "GET", "/v1/operations/acl?user=dashboard"); !strings.Contains(body, `"role":"reader"`) {
		t.Fatalf("an edit without SIGUSR1 was applied: %s", body)
	}
	ob.signal(syscall.SIGUSR1)
	if ob.log.wait(regexp.MustCompile(`credentials re-read and in force`), waitLong) == "" {
		t.Fatal("the re-read never said it was in force")
	}
	_, body := ob.get(t, "GET", "/v1/operations/acl?user=dashboard")
	if !strings.Contains(body, `"role":"device"`) || strings.Contains(body, `"role":"reader"`) {
		t.Fatalf("after the re-read: %s, want the re-read file's role", body)
	}
}

// Checklist D8.77 (RFC 0005 "What the /v1 routes answer with"):
// /v1/operations/config reflects startup - an edit of the configuration
// file followed by SIGUSR1 does not change what it answers.
func TestD8_77OperationsConfigDoesNotFollowAnEdit(t *testing.T) {
	dir := t.TempDir()
	ob := startOps(t, dir, opsTCP, brokerConfig{})
	_, before := ob.get(t, "GET", "/v1/operations/config")
	if !strings.Contains(before, `"conformance"`) {
		t.Fatalf("the broker id is not in %s", before)
	}
	cfg := filepath.Join(dir, "saguin.yaml")
	text, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(text), "id: conformance\n", "id: conformance-edited\n", 1)
	if err := os.WriteFile(cfg, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	seen := len(ob.log.snapshot())
	ob.signal(syscall.SIGUSR1)
	if ob.log.waitFrom(seen, regexp.MustCompile(`SIGUSR1: `), waitLong) == "" {
		t.Fatal("the broker did not answer SIGUSR1")
	}
	if _, after := ob.get(t, "GET", "/v1/operations/config"); after != before || strings.Contains(after, "conformance-edited") {
		t.Fatalf("/config changed after an edit and SIGUSR1:\nbefore %s\nafter  %s", before, after)
	}
}

// Checklist B58 (RFC 0005 "The catalogue"): a publish the acl_file refuses
// 0x87 is counted in saguin_publish_refused_total{reason="not authorized"}.
func TestB58ACLRefusalIsCountedAsNotAuthorized(t *testing.T) {
	dir := t.TempDir()
	pw := writePasswd(t, dir, authUsers)
	aclPath := filepath.Join(dir, "acl.yaml")
	if err := os.WriteFile(aclPath, []byte(authACL), 0o600); err != nil {
		t.Fatal(err)
	}
	ob := startOps(t, dir, opsTCP+"\nmin_scrape_interval: 60s", brokerConfig{MQTT: "password_file: " + pw + "\nacl_file: " + aclPath})
	c := dialRaw(t, ob.addr, codec.Version5)
	c.mustConnect(clientID(t, "dev"), login("device-7", "pw7"))
	for id := uint16(1); id <= 2; id++ {
		c.publish("alerts/not-mine", []byte("x"), 1, id)
		if code := c.expectPuback(id); code != codec.NotAuthorized {
			t.Fatalf("PUBACK 0x%02x, want 0x87", byte(code))
		}
	}
	_, body := ob.get(t, "GET", "/metrics")
	if v, ok := value(parseScrape(t, body)["saguin_publish_refused_total"], "reason", "not authorized"); !ok || v != 2 {
		t.Fatalf(`saguin_publish_refused_total{reason="not authorized"} = %v %v, want 2`, v, ok)
	}
}

// A publish a channel's engine refuses - a queue at its max_bytes, 0x97 -
// is counted in saguin_publish_refused_total by its code as the broker's own
// refusals are (checklist-channels C9.4, the catalogue's row 28), QoS 0 ones
// included.
func TestOperationsEngineRefusalIsCountedInPublishRefused(t *testing.T) {
	dir := t.TempDir()
	yaml := saguinYAML(memoryStorage, "operations:\n  listen:\n    tcp:\n      address: 127.0.0.1:0") +
		"channels:\n  jobs:\n    type: queue\n    filter: work/+/inspect\n    max_bytes: 200\n"
	b := startSaguin(t, dir, yaml)
	ob := withOps(b)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("producer", nil)
	payload := []byte(strings.Repeat("x", 60))
	refused := 0
	for i := uint16(1); i < 10; i++ {
		pub.publish("work/1/inspect", payload, 1, i)
		if code := pub.expectAck(codec.TypePuback, i); code == codec.QuotaExceeded {
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("max_bytes never refused 0x97")
	}
	pub.publish("work/1/inspect", payload, 0, 0) // refused too, with no answer
	pub.ping()
	_, body := ob.get(t, "GET", "/metrics")
	if v, ok := value(parseScrape(t, body)["saguin_publish_refused_total"], "reason", "quota exceeded"); !ok || v != float64(refused+1) {
		t.Fatalf(`saguin_publish_refused_total{reason="quota exceeded"} = %v (present %v), want %d`, v, ok, refused+1)
	}
}
