package ops

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker/auth"
	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/config"
	"github.com/saguin-edge/saguin/netloop/proxyproto"
	"github.com/saguin-edge/saguin/netloop/proxyproto/proxytest"
)

// logBuf is a log a test reads back.
type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// wait reports whether the log holds sub within a few seconds: the line is
// written by the connection's goroutine, which the client does not wait for.
func (l *logBuf) wait(sub string) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if strings.Contains(l.String(), sub) {
			return true
		}
	}
	return false
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// proxyDoor serves an operations unix door with proxy_protocol on the fake
// clk; extra is added under broker.operations.
func proxyDoor(t *testing.T, clk clock.Clock, extra string) (sock string, log *logBuf) {
	t.Helper()
	dir := t.TempDir()
	sock = filepath.Join(dir, "operations.sock")
	yaml := "broker:\n  id: t\n  mqtt:\n    listen:\n      tcp:\n        address: 127.0.0.1:0\n" +
		"  storage:\n    default: mem\n    default_retention_period: none\n    default_retention_bytes: none\n    providers:\n      mem:\n        type: memory\n        snapshot_dir: none\n" +
		"  operations:\n    listen:\n      unix:\n        path: " + sock + "\n        proxy_protocol: true\n" + extra
	path := filepath.Join(dir, "saguin.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	log = &logBuf{}
	s, err := New(Options{Config: cfg, Source: testSource(t, 0), Clock: clk, Logger: slog.New(slog.NewTextHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return sock, log
}

// askThrough sends a PROXY header then GET path on a new connection, with
// extra request headers, and returns the status.
func askThrough(t *testing.T, sock string, h proxytest.Header, path string, hdr ...string) int {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := "GET " + path + " HTTP/1.1\r\nHost: saguin\r\nConnection: close\r\n"
	for i := 0; i+1 < len(hdr); i += 2 {
		req += hdr[i] + ": " + hdr[i+1] + "\r\n"
	}
	if _, err := c.Write(append(h.Bytes(), req+"\r\n"...)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s through a PROXY header: %v", path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

var client = netip.MustParseAddrPort("192.0.2.7:40001")

func verified(cn string) proxytest.Header {
	return proxytest.Header{Source: client, Dest: netip.MustParseAddrPort("192.0.2.1:9443"), SSL: true,
		ClientFlags: proxytest.ClientSSL | proxytest.ClientCertConn, CN: cn, CRC32C: true}
}

// The Common Name a proxy verified names the caller: with an entry in the
// password file it reaches its scope; a stranger and a verified certificate
// sent without a CN reach /metrics only; an unverified certificate is no
// certificate (logged with verify_result=) and a password-governed door
// answers it 401; X-Saguin-Principal is the client's own bytes behind a
// stream proxy and is not read; a failed password is logged with the
// header's source address.
func TestProxyProtocolDoorNamesTheCallerByTheVerifiedCN(t *testing.T) {
	h, err := auth.New([]byte("oncall-secret"), 1000)
	if err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(t.TempDir(), "operations.passwd")
	if err := os.WriteFile(pw, []byte("oncall:"+h.String()+":/v1/operations\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sock, log := proxyDoor(t, clock.Real, "    password_file: "+pw+"\n")
	unverified := verified("oncall")
	unverified.Verify = 20 // X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY
	noCert := proxytest.Header{Source: client, Dest: netip.MustParseAddrPort("192.0.2.1:9443"), SSL: true, ClientFlags: proxytest.ClientSSL}
	cases := []struct {
		who    string
		h      proxytest.Header
		path   string
		hdr    []string
		status int
	}{
		{"oncall", verified("oncall"), "/v1/operations/sessions", nil, 200},
		{"oncall", verified("oncall"), "/metrics", nil, 403},
		{"stranger", verified("stranger"), "/metrics", nil, 200},
		{"stranger", verified("stranger"), "/v1/operations/sessions", nil, 403},
		{"a verified certificate with no CN", verified(""), "/metrics", nil, 200},
		{"a verified certificate with no CN", verified(""), "/v1/operations/sessions", nil, 403},
		{"an unverified oncall", unverified, "/v1/operations/sessions", nil, 401},
		{"no certificate", noCert, "/metrics", nil, 401},
		{"no certificate writing X-Saguin-Principal", noCert, "/v1/operations/sessions", []string{"X-Saguin-Principal", "oncall"}, 401},
		{"a LOCAL health check", proxytest.Header{Local: true}, "/health", nil, 200},
		{"a control character in the CN", verified("on\x01call"), "/metrics", nil, 403},
	}
	for _, c := range cases {
		if got := askThrough(t, sock, c.h, c.path, c.hdr...); got != c.status {
			t.Errorf("%s %s: %d, want %d", c.who, c.path, got, c.status)
		}
	}
	if !strings.Contains(log.String(), "verify_result=20") {
		t.Errorf("the unverified certificate was not logged with verify_result=:\n%s", log)
	}
	askThrough(t, sock, verified(""), "/metrics", basic("oncall", "wrong")...)
	if !strings.Contains(log.String(), `msg="operations credential rejected" component=operations listener=unix remote=192.0.2.7:40001 user=oncall`) {
		t.Errorf("the rejected password's line does not name the header's source address:\n%s", log)
	}
}

func basic(user, pass string) []string {
	req, _ := http.NewRequest("GET", "/", nil)
	req.SetBasicAuth(user, pass)
	return []string{"Authorization", req.Header.Get("Authorization")}
}

// A connection that sends no header is closed, with nothing written, once
// proxyproto.HeaderTimeout has passed on the injected clock since accept -
// and not a millisecond before: one whose header comes at 5 s less 1 ms is
// served. A v1 header is refused naming the setting.
func TestProxyProtocolDoorClosesASilentPeerAtTheHeaderBound(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	sock, log := proxyDoor(t, clk, "")
	late, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	clk.WaitArmed(1)
	clk.Advance(proxyproto.HeaderTimeout - time.Millisecond)
	if _, err := late.Write(append(verified("x").Bytes(), "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"...)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(late), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a header 1 ms inside the bound: %v %v", resp, err)
	}
	resp.Body.Close()

	silent, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	clk.WaitArmed(1)
	clk.Advance(proxyproto.HeaderTimeout)
	if n, err := silent.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("a silent peer at the bound read %d bytes, %v; want the connection closed", n, err)
	}
	if !log.wait("no PROXY header within 5s of accept") {
		t.Errorf("the bound's closing is not logged:\n%s", log)
	}

	v1, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer v1.Close()
	v1.Write([]byte("PROXY TCP4 192.0.2.7 192.0.2.1 40001 9443\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n"))
	// The broker closes with the request unread, so the kernel resets.
	if n, err := v1.Read(make([]byte, 1)); err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("a v1 header read %d bytes, %v; want the connection closed with nothing written", n, err)
	}
	if !log.wait("proxy_protocol v2") {
		t.Errorf("the v1 refusal does not name the setting:\n%s", log)
	}
}
