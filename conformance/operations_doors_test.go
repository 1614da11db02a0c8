package conformance

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"

	"github.com/saguin-edge/saguin/netloop/certs/certstest"
)

// RFC 0005 "Who Sagüin thinks you are" and "GET /v1/operations/users" at the
// operations listener's doors: a unix door with proxy_protocol behind a real
// HAProxy, a TLS door's certificate renewed by SIGUSR1, and each MQTT door's
// certificate field.

// HAProxy terminating TLS with send-proxy-v2-ssl-cn in front of an
// operations unix door with proxy_protocol: true. The Common Name it
// verified names the caller (an entry in the password file reaches its
// scope, a stranger /metrics alone); a certificate it could not verify is
// none, logged with verify_result=, and the password-governed door answers
// 401; X-Saguin-Principal is the client's own bytes through a stream proxy
// and names nobody; a password still works, and a wrong one is logged with
// the client's real address.
func TestOperationsUnixDoorBehindHAProxySendProxyV2SSLCN(t *testing.T) {
	haproxy := needBinary(t, "haproxy")
	dir := t.TempDir()
	p := newPKI(t, dir)
	bundle := filepath.Join(dir, "haproxy.pem")
	cert, _ := os.ReadFile(p.serverCert)
	key, _ := os.ReadFile(p.serverKey)
	certstest.WriteFile(t, bundle, append(cert, key...))
	pw := filepath.Join(dir, "operations.passwd")
	passwordFile(t, pw, [3]string{"oncall", "oncall-secret", "/v1/operations"}, [3]string{"scraper", "scraper-secret", "/metrics"})
	ob := startOps(t, dir, "listen:\n  unix:\n    path: $DIR/operations.sock\n    proxy_protocol: true\npassword_file: "+pw, brokerConfig{})
	port := freePort(t)
	cfg := filepath.Join(dir, "haproxy.cfg")
	// The configuration docs/operations.md shows.
	certstest.WriteFile(t, cfg, []byte(`global
    maxconn 100
defaults
    mode tcp
    timeout connect 5s
    timeout client 1m
    timeout server 1m
frontend operations
    bind 127.0.0.1:`+port+` ssl crt `+bundle+` ca-file `+p.caFile+` verify optional ca-ignore-err all crt-ignore-err all
    default_backend saguin_operations
backend saguin_operations
    server saguin unix@`+ob.unix+` send-proxy-v2-ssl-cn
`))
	startProxy(t, haproxy, port, "-db", "-f", cfg)
	client := func(leaf *certstest.Leaf) *http.Client {
		conf := &tls.Config{RootCAs: p.ca.Pool()}
		if leaf != nil {
			// Offered whatever authorities HAProxy names: crypto/tls would
			// otherwise keep back one from another authority.
			conf.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &leaf.TLS, nil }
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: conf}}
	}
	get := func(c *http.Client, path string, hdr ...string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", "https://127.0.0.1:"+port+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, _ := do(t, c, req)
		return resp.StatusCode
	}
	oncall := client(p.ca.Issue(t, certstest.Spec{CN: "oncall", Client: true}))
	stranger := client(p.ca.Issue(t, certstest.Spec{CN: "stranger", Client: true}))
	unverified := client(certstest.NewCA(t, "other-ca").Issue(t, certstest.Spec{CN: "oncall", Client: true}))
	none := client(nil)
	cases := []struct {
		who    string
		c      *http.Client
		path   string
		hdr    []string
		status int
	}{
		{"oncall", oncall, "/v1/operations/sessions", nil, 200},
		{"oncall", oncall, "/metrics", nil, 403},
		{"stranger", stranger, "/metrics", nil, 200},
		{"stranger", stranger, "/v1/operations/sessions", nil, 403},
		{"oncall from another authority", unverified, "/v1/operations/sessions", nil, 401},
		{"no certificate", none, "/metrics", nil, 401},
		{"no certificate writing X-Saguin-Principal", none, "/v1/operations/sessions", []string{"X-Saguin-Principal", "oncall"}, 401},
		{"scraper by password", none, "/metrics", basic("scraper", "scraper-secret"), 200},
	}
	for _, c := range cases {
		if got := get(c.c, c.path, c.hdr...); got != c.status {
			t.Errorf("%s %s: %d, want %d", c.who, c.path, got, c.status)
		}
	}
	mustLog(t, ob.brokerProc, regexp.MustCompile(`level=WARN msg="the proxy could not verify this caller's certificate.*listener=unix remote=127\.0\.0\.1:\d+ verify_result=[1-9]\d*`))
	get(none, "/metrics", basic("scraper", "wrong")...)
	mustLog(t, ob.brokerProc, regexp.MustCompile(`msg="operations credential rejected" .*listener=unix remote=127\.0\.0\.1:\d+ user=scraper why="wrong password"`))
}

// SIGUSR1 on an operations TLS door, through netloop/certs as every TLS
// door: a certificate whose key is not yet written changes nothing and is
// logged at error naming the door; once both are written the next handshake
// gets the new one and the line says when it expires, while a connection
// already open keeps its own.
func TestOperationsSIGUSR1RenewsTheTLSDoorsCertificateAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t, dir)
	ob := startOps(t, dir, fmt.Sprintf("listen:\n  tcp:\n    address: 127.0.0.1:0\n    tls:\n      cert_file: %s\n      key_file: %s", p.serverCert, p.serverKey), brokerConfig{})
	mustLog(t, ob.brokerProc, regexp.MustCompile(`msg="certificate loaded" .*listener=broker\.operations\.listen\.tcp\S* expires=\d{4}-`))
	served := func() string {
		c, err := tls.Dial("tcp", ob.ops, &tls.Config{RootCAs: p.ca.Pool()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	open, err := tls.Dial("tcp", ob.ops, &tls.Config{RootCAs: p.ca.Pool()})
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()

	renewed := p.ca.Issue(t, certstest.Spec{CN: "renewed", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	certstest.WriteFile(t, p.serverCert, renewed.CertPEM) // the key still the old one
	ob.signal(syscall.SIGUSR1)
	mustLog(t, ob.brokerProc, regexp.MustCompile(`level=ERROR msg="SIGUSR1: .*broker\.operations\.listen\.tcp`))
	if got := served(); got != "localhost" {
		t.Fatalf("after a failed re-read the door serves %q", got)
	}
	certstest.WriteFile(t, p.serverKey, renewed.KeyPEM)
	ob.signal(syscall.SIGUSR1)
	mustLog(t, ob.brokerProc, regexp.MustCompile(`msg="SIGUSR1: re-read" .*what="operations listener tcp: certificate \S+ expires \d{4}-`))
	if got := served(); got != "renewed" {
		t.Fatalf("after the re-read the door serves %q, want renewed", got)
	}
	if got := open.ConnectionState().PeerCertificates[0].Subject.CommonName; got != "localhost" {
		t.Fatalf("the open connection's certificate became %q", got)
	}
}

// /v1/operations/users names each MQTT door's certificate: required where
// client_ca_file requires one, accepted where it verifies one if offered,
// none on a TLS door with no client CA, on a plain door and on a unix door.
func TestOperationsUsersNamesEachDoorsCertificate(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t, dir)
	tlsBlock := func(extra string) string {
		return "\n    tls:\n      cert_file: " + p.serverCert + "\n      key_file: " + p.serverKey + extra
	}
	listen := "tcp:\n" +
		"  - name: devices\n    address: 127.0.0.1:0" + tlsBlock("\n      client_ca_file: "+p.caFile) + "\n" +
		"  - name: mixed\n    address: 127.0.0.1:0" + tlsBlock("\n      client_ca_file: "+p.caFile+"\n      require_certificate: false") + "\n" +
		"  - name: served\n    address: 127.0.0.1:0" + tlsBlock("") + "\n" +
		"  - name: plain\n    address: 127.0.0.1:0\n" +
		"unix:\n  path: $DIR/saguin.sock"
	ob := startOps(t, dir, opsTCP, brokerConfig{Listen: listen})
	resp, body := ob.get(t, "GET", "/v1/operations/users")
	if resp.StatusCode != 200 {
		t.Fatalf("/v1/operations/users: %d %s", resp.StatusCode, body)
	}
	var got struct {
		Listeners map[string]struct {
			Certificate *string `json:"certificate"`
		} `json:"listeners"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	for door, want := range map[string]string{"devices": "required", "mixed": "accepted", "served": "none", "plain": "none", "unix": "none"} {
		l, ok := got.Listeners[door]
		if !ok || l.Certificate == nil {
			t.Errorf("door %s has no certificate field: %s", door, body)
			continue
		}
		if *l.Certificate != want {
			t.Errorf("door %s: certificate %q, want %q", door, *l.Certificate, want)
		}
	}
	if len(got.Listeners) != 5 {
		t.Errorf("listeners holds %d doors, want every one of the 5 configured: %s", len(got.Listeners), body)
	}
}
