package conformance

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/certs/certstest"
)

// RFC 0002 "TLS on a listener", "Client certificates", "Which web pages may
// connect", "Behind a proxy that terminated TLS", through the binary and
// real clients and proxies: mosquitto_pub/sub with certificates, MQTT.js
// over ws and wss, headless Chromium, HAProxy and nginx.

// pki is an authority, the broker's certificate and a device's, written in
// dir.
type pki struct {
	ca                    *certstest.CA
	caFile                string
	serverCert, serverKey string
}

func newPKI(t testing.TB, dir string) *pki {
	t.Helper()
	ca := certstest.NewCA(t, "estate-ca")
	p := &pki{ca: ca, caFile: ca.Write(t, dir, "ca")}
	p.serverCert, p.serverKey = ca.Server(t).Write(t, dir, "server")
	return p
}

// device writes a client certificate named name in dir.
func (p *pki) device(t *testing.T, dir, file string, spec certstest.Spec) (cert, key string) {
	spec.Client = true
	return p.ca.Issue(t, spec).Write(t, dir, file)
}

// mustLog waits for a broker log line matching re, failing the test
// without one.
func mustLog(t *testing.T, b *brokerProc, re *regexp.Regexp) string {
	t.Helper()
	line := b.log.wait(re, waitLong)
	if line == "" {
		t.Fatalf("no log line matches %s", re)
	}
	return line
}

// doorAddr is where the broker says the named door listens.
func doorAddr(t *testing.T, b *brokerProc, name string) string {
	t.Helper()
	line := mustLog(t, b, regexp.MustCompile(`msg=listening .*listener=`+regexp.QuoteMeta(name)+` address=\S+`))
	m := regexp.MustCompile(`address=(\S+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no listening line for door %s", name)
	}
	return m[1]
}

func needBinary(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		for _, dir := range []string{"/usr/sbin", "/sbin"} {
			if _, e := os.Stat(filepath.Join(dir, name)); e == nil {
				return filepath.Join(dir, name)
			}
		}
		t.Skipf("%s is not installed (scripts/install-test-deps.sh installs it; CI does): not checked", name)
	}
	return p
}

// run runs a command for at most 20 s and returns its combined output.
func run(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

func tlsDoor(p *pki, extra string) string {
	return "tcp:\n  - name: fleet\n    address: 127.0.0.1:0\n    tls:\n      cert_file: " + p.serverCert + "\n      key_file: " + p.serverKey + extra
}

// mosquitto_sub and mosquitto_pub over TLS with client certificates: the
// certificate's name is the client's user name; one from another authority
// or an expired one never gets in.
func TestTLSWithMosquittoClientsAndCertificates(t *testing.T) {
	sub, pub := needBinary(t, "mosquitto_sub"), needBinary(t, "mosquitto_pub")
	dir := t.TempDir()
	p := newPKI(t, dir)
	b := startBrokerIn(t, dir, brokerConfig{Listen: tlsDoor(p, "\n      client_ca_file: "+p.caFile)})
	host, port := hostPort(t, doorAddr(t, b, "fleet"))
	devCert, devKey := p.device(t, dir, "device-7", certstest.Spec{CN: "device-7"})
	sanCert, sanKey := p.device(t, dir, "san", certstest.Spec{DNSNames: []string{"d8.example"}})
	tlsArgs := func(cert, key string) []string {
		return []string{"-h", host, "-p", port, "--cafile", p.caFile, "--cert", cert, "--key", key, "-V", "mqttv5"}
	}
	topic := uniq(t) + "/tls"
	subCmd := exec.Command(sub, append(tlsArgs(devCert, devKey), "-t", topic, "-C", "1", "-W", "15", "-q", "1", "-i", "tls-sub")...)
	var subOut strings.Builder
	subCmd.Stdout, subCmd.Stderr = &subOut, &subOut
	if err := subCmd.Start(); err != nil {
		t.Fatal(err)
	}
	mustLog(t, b, regexp.MustCompile(`msg="client connected" .*listener=fleet .*client_id=tls-sub .*principal=device-7`))
	if out, err := run(t, pub, append(tlsArgs(sanCert, sanKey), "-t", topic, "-m", "over tls", "-q", "1", "-i", "tls-pub")...); err != nil {
		t.Fatalf("mosquitto_pub over TLS: %v\n%s", err, out)
	}
	mustLog(t, b, regexp.MustCompile(`msg="client connected" .*listener=fleet .*client_id=tls-pub .*principal=d8.example`))
	if err := subCmd.Wait(); err != nil || strings.TrimSpace(subOut.String()) != "over tls" {
		t.Fatalf("mosquitto_sub: %v, got %q", err, subOut.String())
	}

	other := certstest.NewCA(t, "other-ca")
	oCert, oKey := other.Issue(t, certstest.Spec{CN: "intruder", Client: true}).Write(t, dir, "intruder")
	oldCert, oldKey := p.device(t, dir, "old", certstest.Spec{CN: "old", Expired: true})
	for what, ck := range map[string][2]string{"another authority's": {oCert, oKey}, "an expired": {oldCert, oldKey}} {
		if out, err := run(t, pub, append(tlsArgs(ck[0], ck[1]), "-t", topic, "-m", "x", "-i", "refused")...); err == nil {
			t.Errorf("%s certificate got in:\n%s", what, out)
		}
	}
	// Without a certificate where one is required, and in plain text.
	if out, err := run(t, pub, "-h", host, "-p", port, "--cafile", p.caFile, "-t", topic, "-m", "x", "-i", "nocert"); err == nil {
		t.Errorf("no certificate got in:\n%s", out)
	}
	if out, err := run(t, pub, "-h", host, "-p", port, "-t", topic, "-m", "x", "-i", "plain"); err == nil {
		t.Errorf("a plain client got in on a TLS port:\n%s", out)
	}
	if strings.Contains(b.log.String(), "client_id=refused") || strings.Contains(b.log.String(), "client_id=nocert") {
		t.Error("a refused client reached CONNECT")
	}
}

// A bad pair stops the start naming the listener, before any port opens.
func TestBadCertificateStopsTheStartNamingTheListener(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t, dir)
	_, otherKey := p.ca.Server(t).Write(t, dir, "other")
	p.serverKey = otherKey
	code, out := startFailing(t, brokerConfig{Listen: tlsDoor(p, "")}, dir)
	if code == 0 || !strings.Contains(out, "broker.mqtt.listen.tcp[fleet]") {
		t.Fatalf("exit %d, output does not name the listener:\n%s", code, out)
	}
	if strings.Contains(out, "msg=listening") {
		t.Fatalf("a port opened before the certificate was refused:\n%s", out)
	}
}

// SIGUSR1 mid-renewal: a certificate whose key is not yet written changes
// nothing and is logged at error naming the listener; once both are written
// the next handshake gets the new one, each expiry logged, and an open
// connection keeps its own.
func TestSIGUSR1RenewsCertificatesAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t, dir)
	b := startBrokerIn(t, dir, brokerConfig{Listen: tlsDoor(p, "")})
	addr := doorAddr(t, b, "fleet")
	served := func() string {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: p.ca.Pool()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	open, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: p.ca.Pool()})
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	kept := &raw{t: t, nc: open, version: 5}
	kept.mustConnect("kept-open", nil)

	renewed := p.ca.Issue(t, certstest.Spec{CN: "renewed", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	certstest.WriteFile(t, p.serverCert, renewed.CertPEM) // the key still the old one
	b.signal(syscall.SIGUSR1)
	mustLog(t, b, regexp.MustCompile(`level=ERROR msg="SIGUSR1: .*broker.mqtt.listen.tcp\[fleet\]`))
	if got := served(); got != "localhost" {
		t.Fatalf("after a failed re-read the door serves %q", got)
	}
	certstest.WriteFile(t, p.serverKey, renewed.KeyPEM)
	b.signal(syscall.SIGUSR1)
	mustLog(t, b, regexp.MustCompile(`msg="SIGUSR1: certificate re-read" .*listener=broker.mqtt.listen.tcp\[fleet\] expires=\d{4}-`))
	if got := served(); got != "renewed" {
		t.Fatalf("after the re-read the door serves %q, want renewed", got)
	}
	if got := open.ConnectionState().PeerCertificates[0].Subject.CommonName; got != "localhost" {
		t.Fatalf("the open connection's certificate became %q", got)
	}
	kept.ping()
}

var mqttJSOnce struct {
	sync.Once
	dir string
	err error
}

// mqttJS is a directory holding MQTT.js and the interop scripts (ws.js,
// page.html, queue-worker.js, latest.js): the one
// scripts/install-test-deps.sh filled, else a copy npm ci fills once.
// runNode runs one of interop/'s scripts with node in dir and returns what it
// printed; a failure carries the script's stderr, where an uncaught
// exception's trace goes.
func runNode(ctx context.Context, node, dir, script string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("node %s %v: %w\nstderr:\n%s", script, args, err, stderr.Bytes())
	}
	return out, nil
}

func mqttJS(t *testing.T) (node, dir string) {
	t.Helper()
	node = needBinary(t, "node")
	if _, err := os.Stat("interop/node_modules/mqtt"); err == nil {
		abs, _ := filepath.Abs("interop")
		return node, abs
	}
	npm := needBinary(t, "npm")
	mqttJSOnce.Do(func() {
		d, err := os.MkdirTemp("", "saguin-mqttjs-")
		if err != nil {
			mqttJSOnce.err = err
			return
		}
		for _, f := range []string{"package.json", "package-lock.json"} {
			b, err := os.ReadFile(filepath.Join("interop", f))
			if err == nil {
				err = os.WriteFile(filepath.Join(d, f), b, 0o644)
			}
			if err != nil {
				mqttJSOnce.err = err
				return
			}
		}
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = d
		if out, err := cmd.CombinedOutput(); err != nil {
			mqttJSOnce.err = fmt.Errorf("npm ci: %v\n%s", err, out)
			return
		}
		mqttJSOnce.dir = d
	})
	if mqttJSOnce.err != nil {
		t.Skipf("MQTT.js could not be installed (no registry?): not checked: %v", mqttJSOnce.err)
	}
	// Every script and page, so a new one needs no entry here.
	scripts, err := filepath.Glob("interop/*.[jh]*")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range scripts {
		f := filepath.Base(path)
		if strings.HasPrefix(f, "package") {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mqttJSOnce.dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return node, mqttJSOnce.dir
}

type wsResult struct {
	OK      bool
	Error   string
	Payload string
	QoS     int
}

func runWSJS(t *testing.T, node, dir string, args ...string) wsResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := runNode(ctx, node, dir, "ws.js", args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var r wsResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("ws.js printed %q: %v", out, err)
	}
	return r
}

// MQTT.js over ws:// and wss://, with an Origin the door admits and one it
// refuses (403 before the upgrade, logged at warn).
func TestMQTTjsOverWebSocket(t *testing.T) {
	node, jsDir := mqttJS(t)
	dir := t.TempDir()
	p := newPKI(t, dir)
	b := startBrokerIn(t, dir, brokerConfig{Listen: "ws:\n  - name: plain\n    address: 127.0.0.1:0\n" +
		"  - name: secure\n    address: 127.0.0.1:0\n    tls:\n      cert_file: " + p.serverCert + "\n      key_file: " + p.serverKey})
	plain, secure := doorAddr(t, b, "plain"), doorAddr(t, b, "secure")
	_, securePort := hostPort(t, secure)
	topic := uniq(t)
	for _, c := range []struct {
		what string
		args []string
		want string
	}{
		{"ws, no Origin", []string{"ws://" + plain + "/mqtt", topic + "/a"}, "over ws"},
		{"ws, its own origin", []string{"ws://" + plain + "/mqtt", topic + "/b", "http://" + plain}, "over ws"},
		{"wss", []string{"wss://localhost:" + securePort + "/", topic + "/c", "", p.caFile}, "over wss"},
		{"wss, its own origin", []string{"wss://localhost:" + securePort + "/", topic + "/d", "https://localhost:" + securePort, p.caFile}, "over wss"},
	} {
		r := runWSJS(t, node, jsDir, c.args...)
		if !r.OK || r.Payload != c.want || r.QoS != 1 {
			t.Errorf("%s: %+v, want %q at QoS 1", c.what, r, c.want)
		}
	}
	if r := runWSJS(t, node, jsDir, "ws://"+plain+"/mqtt", topic+"/e", "http://evil.example"); r.OK {
		t.Errorf("a foreign page connected: %+v", r)
	}
	// MQTT.js reports only that it never got a CONNACK; the 403 itself is
	// asserted in netloop's TestWebSocketOrigins.
	mustLog(t, b, regexp.MustCompile(`level=WARN msg="refused a WebSocket upgrade.*origin=http://evil.example`))
}

// A real browser page: headless Chromium loads a dashboard from one site and
// connects with MQTT.js over WebSocket to a door that lists that site; a
// page from a site not listed is refused.
func TestBrowserPageOverWebSocket(t *testing.T) {
	chromium := needBinary(t, "chromium")
	_, jsDir := mqttJS(t)
	// The page and MQTT.js's browser bundle, served as a dashboard's site
	// would serve them; nothing is written into the source tree.
	site := http.NewServeMux()
	site.HandleFunc("/page.html", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, filepath.Join(jsDir, "page.html")) })
	site.HandleFunc("/mqtt.min.js", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join(jsDir, "node_modules/mqtt/dist/mqtt.min.js"))
	})
	// The page reports its outcome to /result: the test waits for that
	// report (a condition) rather than for a virtual-time budget, which a
	// loaded machine can spend before the broker has answered.
	results := make(chan string, 4)
	site.HandleFunc("/result", func(w http.ResponseWriter, r *http.Request) {
		results <- r.URL.Query().Get("v")
	})
	pages := httptest.NewServer(site)
	defer pages.Close()
	other := httptest.NewServer(site)
	defer other.Close()
	b := startBroker(t, brokerConfig{Listen: "ws:\n  address: 127.0.0.1:0\n  same_origin: false\n  allowed_origins:\n    - " + pages.URL})
	wsAddr := doorAddr(t, b, "ws")
	load := func(site string) string {
		url := site + "/page.html?url=" + "ws://" + wsAddr + "/mqtt&topic=" + uniq(t) + "/page"
		cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
			"--user-data-dir="+t.TempDir(), url)
		// Debian's chromium is a shell script starting the browser and its
		// helpers: they run in a process group of their own, and the whole
		// group is killed once the page has reported, then reaped.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatalf("chromium: %v", err)
		}
		defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
		select {
		case got := <-results:
			return got
		case <-time.After(90 * time.Second):
			t.Fatalf("the page at %s reported nothing in 90 s", site)
			return ""
		}
	}
	if got := load(pages.URL); got != "received: from the page" {
		t.Fatalf("the listed page: %q", got)
	}
	if got := load(other.URL); !strings.HasPrefix(got, "error") {
		t.Fatalf("a page from a site not listed: %q", got)
	}
	mustLog(t, b, regexp.MustCompile(`level=WARN msg="refused a WebSocket upgrade.*origin=`+regexp.QuoteMeta(other.URL)))
}

// freePort is a port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// startProxy runs a proxy command in a process group of its own until the
// test ends (SIGTERM to the group: nginx's workers outlive a killed master)
// and waits for port.
func startProxy(t *testing.T, name string, port string, args ...string) {
	t.Helper()
	logFile := filepath.Join(t.TempDir(), "proxy.log")
	f, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			out, _ := os.ReadFile(logFile)
			t.Logf("%s output:\n%s", name, out)
		}
	})
	deadline := time.Now().Add(waitLong)
	for {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on %s", name, port)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// HAProxy terminating TLS with send-proxy-v2-ssl-cn in front of a unix
// door: a certificate it verified names the client (principal=device-7,
// the client's real address in the log); one it could not verify is
// treated as none and logged with verify_result=; no certificate is simply
// anonymous.
func TestHAProxySendProxyV2SSLCN(t *testing.T) {
	haproxy := needBinary(t, "haproxy")
	pub := needBinary(t, "mosquitto_pub")
	dir := t.TempDir()
	p := newPKI(t, dir)
	bundle := filepath.Join(dir, "haproxy.pem")
	cert, _ := os.ReadFile(p.serverCert)
	key, _ := os.ReadFile(p.serverKey)
	certstest.WriteFile(t, bundle, append(cert, key...))
	b := startBrokerIn(t, dir, brokerConfig{Listen: "unix:\n  path: $DIR/saguin.sock\n  proxy_protocol: true"})
	port := freePort(t)
	cfg := filepath.Join(dir, "haproxy.cfg")
	// The configuration the operator guide (docs/transports.md) shows.
	certstest.WriteFile(t, cfg, []byte(`global
    maxconn 100
defaults
    mode tcp
    timeout connect 5s
    timeout client 20m
    timeout server 20m
frontend mqtts
    bind 127.0.0.1:`+port+` ssl crt `+bundle+` ca-file `+p.caFile+` verify optional ca-ignore-err all crt-ignore-err all
    default_backend saguin
backend saguin
    server saguin unix@`+filepath.Join(dir, "saguin.sock")+` send-proxy-v2-ssl-cn
`))
	startProxy(t, haproxy, port, "-db", "-f", cfg)
	devCert, devKey := p.device(t, dir, "device-7", certstest.Spec{CN: "device-7"})
	other := certstest.NewCA(t, "other-ca")
	oCert, oKey := other.Issue(t, certstest.Spec{CN: "device-7", Client: true}).Write(t, dir, "unverified")
	pubVia := func(id string, extra ...string) {
		t.Helper()
		args := append([]string{"-h", "127.0.0.1", "-p", port, "--cafile", p.caFile, "-V", "mqttv5", "-t", "t/" + id, "-m", "x", "-q", "1", "-i", id}, extra...)
		if out, err := run(t, pub, args...); err != nil {
			t.Fatalf("mosquitto_pub %s through HAProxy: %v\n%s", id, err, out)
		}
	}
	pubVia("verified", "--cert", devCert, "--key", devKey)
	mustLog(t, b, regexp.MustCompile(`msg="a proxy named this client" .*listener=unix remote=127\.0\.0\.1:\d+ principal=device-7`))
	mustLog(t, b, regexp.MustCompile(`msg="client connected" .*listener=unix remote=127\.0\.0\.1:\d+ client_id=verified .*principal=device-7`))

	pubVia("unverified", "--cert", oCert, "--key", oKey)
	mustLog(t, b, regexp.MustCompile(`level=WARN msg="the proxy could not verify this client's certificate.*verify_result=[1-9]\d*`))
	line := mustLog(t, b, regexp.MustCompile(`msg="client connected" .*client_id=unverified`))
	if strings.Contains(line, "principal=") {
		t.Fatalf("an unverified certificate named the client: %s", line)
	}
	pubVia("nocert")
	if line := mustLog(t, b, regexp.MustCompile(`msg="client connected" .*client_id=nocert`)); strings.Contains(line, "principal=") {
		t.Fatalf("a client without a certificate was named: %s", line)
	}
}

// nginx's stream module in front of a unix door with proxy_protocol on (the
// natural thing to write, and v1): the broker refuses the header naming the
// setting to change. Debian's nginx predates v2, so this is the whole of
// what it can show; HAProxy above drives v2.
func TestNginxProxyProtocolOnIsRefusedNamingTheSetting(t *testing.T) {
	nginx := needBinary(t, "nginx")
	module := "/usr/lib/nginx/modules/ngx_stream_module.so"
	if _, err := os.Stat(module); err != nil {
		t.Skipf("nginx's stream module is not installed (libnginx-mod-stream): not checked")
	}
	dir := t.TempDir()
	b := startBrokerIn(t, dir, brokerConfig{Listen: "unix:\n  path: $DIR/saguin.sock\n  proxy_protocol: true"})
	port := freePort(t)
	cfg := filepath.Join(dir, "nginx.conf")
	certstest.WriteFile(t, cfg, []byte(`load_module `+module+`;
user root;
pid `+dir+`/nginx.pid;
error_log stderr info;
events { worker_connections 64; }
stream {
    server {
        listen 127.0.0.1:`+port+`;
        proxy_pass unix:`+filepath.Join(dir, "saguin.sock")+`;
        proxy_protocol on;
        proxy_timeout 20m;
    }
}
`))
	startProxy(t, nginx, port, "-p", dir, "-c", cfg, "-g", "daemon off;")
	c := dialRaw(t, "127.0.0.1:"+port, 5)
	c.send((&codec.Connect{Version: 5, CleanStart: true, ClientID: []byte("via-nginx")}).Append(nil, 5))
	mustLog(t, b, regexp.MustCompile(`level=WARN msg="closed: the PROXY header was refused" .*listener=unix .*proxy_protocol v2`))
	if strings.Contains(b.log.String(), "client_id=via-nginx") {
		t.Fatal("a connection behind a v1 header reached CONNECT")
	}
}

// The certificate's name is the user name the acl_file reads: with CN
// device-7 and a role granting iot/%u/#, iot/device-7/x is answered 0x00 and
// iot/device-8/x 0x87 - a pure-certificate estate, no password file.
func TestCertificateNameIsTheACLUser(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t, dir)
	certstest.WriteFile(t, filepath.Join(dir, "acl.yaml"), []byte(authACL))
	b := startBrokerIn(t, dir, brokerConfig{Listen: tlsDoor(p, "\n      client_ca_file: "+p.caFile), MQTT: "acl_file: " + filepath.Join(dir, "acl.yaml")})
	leaf := p.ca.Issue(t, certstest.Spec{CN: "device-7", Client: true})
	nc, err := tls.Dial("tcp", doorAddr(t, b, "fleet"), &tls.Config{RootCAs: p.ca.Pool(), Certificates: []tls.Certificate{leaf.TLS}})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &raw{t: t, nc: nc, version: 5}
	c.mustConnect("dev7", login("somebody-else", "typed"))
	c.sendPublish(&codec.Publish{QoS: 1, PacketID: 1, Topic: []byte("iot/device-7/x"), Payload: []byte("ok")})
	if code := c.expectAck(codec.TypePuback, 1); code != codec.Success {
		t.Fatalf("own topic: 0x%02x", byte(code))
	}
	c.sendPublish(&codec.Publish{QoS: 1, PacketID: 2, Topic: []byte("iot/device-8/x"), Payload: []byte("no")})
	if code := c.expectAck(codec.TypePuback, 2); code != codec.NotAuthorized {
		t.Fatalf("another device's topic: 0x%02x, want 0x87", byte(code))
	}
}
