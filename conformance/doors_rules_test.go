package conformance

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/certs/certstest"
)

// Checklist-operations.md C.1-C.3 rules the audit of issue 15 found untested
// or tested in part, through the binary, one per rule and named after it.

// refusedAtLoad writes cfg into a fresh directory and requires both the start
// and --check-config to refuse it with output holding every one of wants.
func refusedAtLoad(t *testing.T, cfg brokerConfig, wants ...string) {
	t.Helper()
	saguinOnly(t, "the test starts saguin with its own configuration")
	dir := t.TempDir()
	code, out := startFailing(t, cfg, dir)
	check := exec.Command(binPath, "--check-config", filepath.Join(dir, "saguin.yaml"))
	check.Dir = dir
	out2, err := check.CombinedOutput()
	for _, want := range wants {
		if code == 0 || !strings.Contains(out, want) {
			t.Errorf("start: exit %d, want non-zero saying %q:\n%s", code, want, out)
		}
		if err == nil || !strings.Contains(string(out2), want) {
			t.Errorf("--check-config: %v, want a refusal saying %q:\n%s", err, want, out2)
		}
	}
}

// C.2 #23 [GAP-3]: a ws door has no path key (it serves every request path)
// and no subprotocol key; an unknown key is refused rather than ignored, so
// `path: /mqtt` under a ws door stops the start and --check-config, naming
// the key - as does a subprotocol setting.
func TestWebSocketDoorHasNoPathOrSubprotocolKey(t *testing.T) {
	for _, c := range []struct{ key, line string }{
		{"broker.mqtt.listen.ws.path", "path: /mqtt"},
		{"broker.mqtt.listen.ws.subprotocol", "subprotocol: mqtt"},
	} {
		t.Run(c.line, func(t *testing.T) {
			refusedAtLoad(t, brokerConfig{Listen: "ws:\n  address: 127.0.0.1:0\n  " + c.line}, c.key)
		})
	}
}

// C.1 #3, RFC 0002 "TLS on a listener": there is no default certificate and
// nothing is self-generated - a tls block without cert_file, and an empty
// `tls: {}`, are refused naming each missing key, never served with a
// certificate the broker made up.
func TestTLSBlockWithoutACertificateIsRefusedNothingGenerated(t *testing.T) {
	for _, c := range []struct {
		what, tls string
		keys      []string
	}{
		{"no cert_file", "tls:\n    key_file: $DIR/k.pem", []string{"broker.mqtt.listen.tcp.tls.cert_file is missing"}},
		{"tls: {}", "tls: {}", []string{"broker.mqtt.listen.tcp.tls.cert_file is missing", "broker.mqtt.listen.tcp.tls.key_file is missing"}},
	} {
		t.Run(c.what, func(t *testing.T) {
			refusedAtLoad(t, brokerConfig{Listen: "tcp:\n  address: 127.0.0.1:0\n  " + c.tls}, c.keys...)
		})
	}
}

// C.2 #27 [VAL], RFC 0002 "Which web pages may connect": an allowed_origins
// entry is exactly scheme://host[:port] - an entry with a wildcard, a query,
// user info or a fragment is refused at load naming the key and the entry.
func TestWebSocketOriginEntryWithWildcardQueryUserInfoOrFragmentIsRefused(t *testing.T) {
	for _, entry := range []string{"https://*.example", "https://a.example?x=1", "https://u@a.example", "https://a.example#top"} {
		t.Run(entry, func(t *testing.T) {
			refusedAtLoad(t, brokerConfig{Listen: "ws:\n  address: 127.0.0.1:0\n  allowed_origins: [\"" + entry + "\"]"},
				`broker.mqtt.listen.ws.allowed_origins "`+entry+`"`)
		})
	}
}

// C.3 #35, RFC 0002 "TLS on a listener": a unix door's path is NUL-free - a
// path with a NUL byte (which the kernel would cut short) is refused at load
// naming the key.
func TestUnixDoorPathWithANULIsRefused(t *testing.T) {
	refusedAtLoad(t, brokerConfig{Listen: "unix:\n  path: \"$DIR/a\\0b.sock\""}, "broker.mqtt.listen.unix.path", "NUL")
}

// C.1 #5, RFC 0002 "TLS on a listener": min_version is a floor, not a pin,
// 1.2 by default and nothing below 1.2. A door without it refuses a TLS 1.1
// client and admits 1.2 and 1.3; a door with `min_version: "1.3"` refuses a
// 1.2 client and still admits 1.3.
func TestTLSMinVersionIsAFloorDefaultOneTwo(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t, dir)
	pair := "\n    tls:\n      cert_file: " + p.serverCert + "\n      key_file: " + p.serverKey
	b := startBrokerIn(t, dir, brokerConfig{Listen: "tcp:\n  - name: default\n    address: 127.0.0.1:0" + pair +
		"\n  - name: strict\n    address: 127.0.0.1:0" + pair + "\n      min_version: \"1.3\""})
	for _, c := range []struct {
		door    string
		version uint16
		admit   bool
	}{
		{"default", tls.VersionTLS11, false},
		{"default", tls.VersionTLS12, true},
		{"default", tls.VersionTLS13, true},
		{"strict", tls.VersionTLS12, false},
		{"strict", tls.VersionTLS13, true},
	} {
		what := c.door + " door, a client at " + tls.VersionName(c.version)
		nc, err := tls.Dial("tcp", doorAddr(t, b, c.door), &tls.Config{RootCAs: p.ca.Pool(), ServerName: "localhost",
			MinVersion: tls.VersionTLS10, MaxVersion: c.version})
		if !c.admit {
			if err == nil {
				nc.Close()
				t.Errorf("%s: handshake completed, want it refused", what)
			} else if !strings.Contains(err.Error(), "protocol version") {
				t.Errorf("%s: %v, want a protocol version refusal", what, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v, want admitted", what, err)
			continue
		}
		if got := nc.ConnectionState().Version; got != c.version {
			t.Errorf("%s: negotiated %s", what, tls.VersionName(got))
		}
		(&raw{t: t, nc: nc, version: codec.Version5}).mustConnect(uniq(t), nil)
		nc.Close()
	}
}

// C.2 #25, RFC 0002 "Which web pages may connect": with same_origin and
// allowed_origins both set a page must pass both. On a `same_origin: true`
// door listing http://dashboard.example, that page upgrades when it is its
// own site (Host dashboard.example); the same listed origin sent to another
// host is refused 403, as is a page that is its own site but not listed.
func TestSameOriginAndAllowedOriginsBothSetAPageMustPassBoth(t *testing.T) {
	b := startBroker(t, brokerConfig{Listen: "ws:\n  address: 127.0.0.1:0\n  same_origin: true\n" +
		"  allowed_origins:\n    - http://dashboard.example"})
	addr := doorAddr(t, b, "ws")
	for _, c := range []struct {
		what, host, origin string
		want               int
	}{
		{"listed and same-origin", "dashboard.example", "http://dashboard.example", http.StatusSwitchingProtocols},
		{"listed, not same-origin", addr, "http://dashboard.example", http.StatusForbidden},
		{"same-origin, not listed", "other.example", "http://other.example", http.StatusForbidden},
	} {
		status, _, conn := wsAnswer(t, addr, wsRequest("HTTP/1.1", c.host, c.origin))
		conn.nc.Close()
		if status != c.want {
			t.Errorf("%s (Host %s, Origin %s): %d, want %d", c.what, c.host, c.origin, status, c.want)
		}
	}
	mustLog(t, b, regexp.MustCompile(`level=WARN msg="refused a WebSocket upgrade.*origin=http://dashboard\.example`))
}

// mtlsBroker starts a broker whose tls door fleet asks for client
// certificates of p's authority, returning it and the door's address.
func mtlsBroker(t *testing.T, dir string, p *pki) (*brokerProc, string) {
	t.Helper()
	b := startBrokerIn(t, dir, brokerConfig{Listen: tlsDoor(p, "\n      client_ca_file: "+p.caFile)})
	return b, doorAddr(t, b, "fleet")
}

// dialDevice dials addr over TLS presenting a client certificate p's
// authority issues for spec.
func dialDevice(t *testing.T, addr string, p *pki, spec certstest.Spec) *raw {
	t.Helper()
	spec.Client = true
	c, err := dialLeaf(t, addr, p, p.ca.Issue(t, spec))
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	return c
}

// dialLeaf dials addr over TLS, trusting p's authority for the server and
// presenting leaf; the error is the handshake's.
func dialLeaf(t *testing.T, addr string, p *pki, leaf *certstest.Leaf) (*raw, error) {
	t.Helper()
	nc, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: p.ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{leaf.TLS}})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { nc.Close() })
	return &raw{t: t, nc: nc, version: codec.Version5}, nil
}

// C.1 #11, RFC 0002 "Client certificates": on an MQTT door a verified
// certificate with neither a Common Name nor a DNS name names nobody - the
// client falls through (here to anonymous) and the broker says so at info,
// naming the door.
func TestVerifiedCertificateNamingNobodyFallsThroughAndSaysSo(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t, dir)
	b, addr := mtlsBroker(t, dir, p)
	dialDevice(t, addr, p, certstest.Spec{}).mustConnect("nameless", nil)
	mustLog(t, b, regexp.MustCompile(`level=INFO msg="a verified client certificate names nobody \(no Common Name, no DNS name\).*listener=fleet`))
}

// C.1 #12, RFC 0002 "Client certificates" (A.3 #22): a certificate name
// holding a control character is nobody's - the CONNECT is answered 0x86
// and the broker logs a warning naming the door and the name.
func TestCertificateNameWithAControlCharacterIs0x86AndWarned(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t, dir)
	b, addr := mtlsBroker(t, dir, p)
	if ack := dialDevice(t, addr, p, certstest.Spec{CN: "evil\x1bname"}).connect("ctl", nil); ack.ReasonCode != codec.BadUserNameOrPassword {
		t.Fatalf("a control character in the CN: CONNACK %s, want 0x86", ack.ReasonCode)
	}
	mustLog(t, b, regexp.MustCompile(`level=WARN msg="refused: the name its certificate gives holds U\+0000 or a control character".*listener=fleet.*principal=.*evil`))
}

// wsStream is a WebSocket client connection seen as a byte stream, so that
// raw speaks MQTT over it: writes are binary frames, reads the payloads of
// the broker's frames.
type wsStream struct {
	net.Conn
	r       io.Reader
	pending []byte
}

func (c *wsStream) Read(p []byte) (int, error) {
	for len(c.pending) == 0 {
		b, _, err := wsutil.ReadServerData(struct {
			io.Reader
			io.Writer
		}{c.r, c.Conn})
		if err != nil {
			return 0, err
		}
		c.pending = b
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

func (c *wsStream) Write(p []byte) (int, error) {
	return len(p), wsutil.WriteClientBinary(c.Conn, p)
}

// dialRawWS upgrades to the mqtt subprotocol on the ws door at addr and
// returns an MQTT 5 client over it.
func dialRawWS(t *testing.T, addr string) *raw {
	t.Helper()
	d := ws.Dialer{Protocols: []string{"mqtt"}, Timeout: waitLong}
	nc, br, _, err := d.Dial(context.Background(), "ws://"+addr+"/mqtt")
	if err != nil {
		t.Fatalf("upgrade at %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	var r io.Reader = nc
	if br != nil {
		r = io.MultiReader(br, nc)
	}
	return &raw{t: t, nc: &wsStream{Conn: nc, r: r}, version: codec.Version5}
}

// C.2 #21, RFC 0002 "Which web pages may connect": a ws door takes
// password_file and allow_anonymous as a tcp door does, in the list form
// too. On a door with its own password file and allow_anonymous: false an
// anonymous client and a wrong password are 0x86 and the right one is
// admitted; beside it a door with the file and allow_anonymous: true admits
// the anonymous client and still answers a wrong password 0x86.
func TestWebSocketDoorTakesPasswordFileAndAllowAnonymous(t *testing.T) {
	saguinOnly(t, "the test starts saguin with its own doors")
	dir := t.TempDir()
	pw := writePasswd(t, dir, authUsers)
	b := startBrokerIn(t, dir, brokerConfig{Listen: "ws:\n" +
		"  - name: locked\n    address: 127.0.0.1:0\n    password_file: " + pw + "\n    allow_anonymous: false\n" +
		"  - name: mixed\n    address: 127.0.0.1:0\n    password_file: " + pw + "\n    allow_anonymous: true"})
	for _, c := range []struct {
		door, what string
		login      func(*codec.Connect)
		want       codec.ReasonCode
	}{
		{"locked", "anonymous", nil, codec.BadUserNameOrPassword},
		{"locked", "a wrong password", login("device-7", "bad"), codec.BadUserNameOrPassword},
		{"locked", "the right password", login("device-7", "pw7"), codec.Success},
		{"mixed", "anonymous", nil, codec.Success},
		{"mixed", "a wrong password", login("device-7", "bad"), codec.BadUserNameOrPassword},
	} {
		if ack := dialRawWS(t, doorAddr(t, b, c.door)).connect(uniq(t), c.login); ack.ReasonCode != c.want {
			t.Errorf("%s door, %s over ws: CONNACK %s (0x%02x), want 0x%02x", c.door, c.what, ack.ReasonCode, byte(ack.ReasonCode), byte(c.want))
		}
	}
}

// C.2 #28, RFC 0002 "Which web pages may connect": a refused page is
// answered 403 and logged at warn with its origin, bounded - the reading
// in docs/transports.md bounds it to 256 bytes and marks the cut with
// "...". A 4 KiB Origin is refused and its line carries only its first 256
// bytes.
func TestRefusedOriginIsLoggedBounded(t *testing.T) {
	b := startBroker(t, brokerConfig{Listen: "ws:\n  address: 127.0.0.1:0\n  allowed_origins:\n    - http://dashboard.example"})
	addr := doorAddr(t, b, "ws")
	origin := "http://" + strings.Repeat("a", 4096) + ".example"
	status, _, conn := wsAnswer(t, addr, wsRequest("HTTP/1.1", addr, origin))
	conn.nc.Close()
	if status != http.StatusForbidden {
		t.Fatalf("a long unlisted origin: %d, want 403", status)
	}
	line := mustLog(t, b, regexp.MustCompile(`level=WARN msg="refused a WebSocket upgrade.*origin=`))
	if !strings.Contains(line, "origin="+origin[:256]+"...") || strings.Contains(line, origin[:257]) {
		t.Fatalf("the refusal's line does not carry the origin cut to 256 bytes: %.400s", line)
	}
}

// C.2 #29, RFC 0002 "Which web pages may connect": allowed_origins is
// re-read on SIGUSR1, and an invalid file changes nothing. An edit listing
// another site beside a wildcard entry is refused at error and the door
// keeps its old list - the old page upgraded, the new one 403; the same edit
// without the bad entry is then applied, logged with how many sites it
// lists, and the pages swap.
func TestInvalidOriginsEditOnSIGUSR1ChangesNothing(t *testing.T) {
	dir := t.TempDir()
	b := startBrokerIn(t, dir, brokerConfig{Listen: "ws:\n  address: 127.0.0.1:0\n  same_origin: false\n  allowed_origins:\n    - http://dashboard.example"})
	addr := doorAddr(t, b, "ws")
	pages := func(when string, dashboard, other int) {
		t.Helper()
		for _, c := range []struct {
			origin string
			want   int
		}{{"http://dashboard.example", dashboard}, {"http://other.example", other}} {
			status, _, conn := wsAnswer(t, addr, wsRequest("HTTP/1.1", addr, c.origin))
			conn.nc.Close()
			if status != c.want {
				t.Errorf("%s, %s: %d, want %d", when, c.origin, status, c.want)
			}
		}
	}
	pages("at start", http.StatusSwitchingProtocols, http.StatusForbidden)
	path := filepath.Join(dir, "saguin.yaml")
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	reload := func(list string, re *regexp.Regexp) {
		t.Helper()
		edited := strings.Replace(string(text), "- http://dashboard.example", list, 1)
		if edited == string(text) {
			t.Fatalf("the configuration lists no dashboard:\n%s", text)
		}
		if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		seen := len(b.log.snapshot())
		b.signal(syscall.SIGUSR1)
		if b.log.waitFrom(seen, re, waitLong) == "" {
			t.Fatalf("after SIGUSR1 no line matches %s", re)
		}
	}
	reload("- http://other.example\n          - https://*.example",
		regexp.MustCompile(`level=ERROR msg="SIGUSR1: the configuration is not valid; nothing re-read is applied.*allowed_origins`))
	pages("after an invalid edit", http.StatusSwitchingProtocols, http.StatusForbidden)
	reload("- http://other.example", regexp.MustCompile(`level=WARN msg="SIGUSR1: page origins re-read" .*same_origin=false allowed_origins=1`))
	pages("after the valid edit", http.StatusForbidden, http.StatusSwitchingProtocols)
}

// C.1 #15, RFC 0002 "TLS on a listener": a client_ca_file replaced by
// another authority and re-read on SIGUSR1 refuses, from the next
// handshake, a device only the old authority trusted and admits the new
// authority's; a connection opened before keeps being served.
func TestReplacedClientCAOnSIGUSR1RefusesTheOldAuthoritysDevices(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t, dir)
	b, addr := mtlsBroker(t, dir, p)
	old := p.ca.Issue(t, certstest.Spec{CN: "device-old", Client: true})
	open, err := dialLeaf(t, addr, p, old)
	if err != nil {
		t.Fatalf("the old authority's device before the swap: %v", err)
	}
	open.mustConnect("kept", nil)

	next := certstest.NewCA(t, "estate-ca-2")
	certstest.WriteFile(t, p.caFile, next.PEM)
	seen := len(b.log.snapshot())
	b.signal(syscall.SIGUSR1)
	if b.log.waitFrom(seen, regexp.MustCompile(`level=WARN msg="SIGUSR1: certificate re-read" .*listener=broker.mqtt.listen.tcp\[fleet\]`), waitLong) == "" {
		t.Fatal("no certificate re-read line after SIGUSR1")
	}
	// In TLS 1.3 the server reads the client's certificate after its own
	// Finished: the refusal is seen at the handshake or at the first read,
	// with a CONNECT sent so that a served connection would be answered.
	if c, err := dialLeaf(t, addr, p, old); err == nil {
		c.send(c.connectPacket("old", nil))
		if h, _, err := c.next(waitLong); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("the old authority's device after the swap: %s, %v; want a certificate alert", h.Type, err)
		}
	} else if !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("the old authority's device after the swap: %v, want a certificate alert", err)
	}
	fresh, err := dialLeaf(t, addr, p, next.Issue(t, certstest.Spec{CN: "device-new", Client: true}))
	if err != nil {
		t.Fatalf("the new authority's device: %v", err)
	}
	fresh.mustConnect("fresh", nil)
	open.ping()
}

// C.1 #16, RFC 0002 "TLS on a listener": nothing changes unless every
// listener's files load. Of two tls doors, a is renewed properly and b's
// certificate is renewed with its old key left beside it: SIGUSR1 logs at
// error which listener failed and why, and both doors - a too - keep
// serving their old certificates. Once b's key is written, the next SIGUSR1
// renews both.
func TestCertificateReloadIsAllOrNothingAcrossListeners(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t, dir)
	files := map[string][2]string{}
	listen := "tcp:"
	for _, door := range []string{"a", "b"} {
		cert, key := p.ca.Issue(t, certstest.Spec{CN: door + "-old", DNSNames: []string{"localhost"}}).Write(t, dir, door)
		files[door] = [2]string{cert, key}
		listen += "\n  - name: " + door + "\n    address: 127.0.0.1:0\n    tls:\n      cert_file: " + cert + "\n      key_file: " + key
	}
	b := startBrokerIn(t, dir, brokerConfig{Listen: listen})
	served := func(door string) string {
		t.Helper()
		c, err := tls.Dial("tcp", doorAddr(t, b, door), &tls.Config{RootCAs: p.ca.Pool(), ServerName: "localhost"})
		if err != nil {
			t.Fatalf("door %s: %v", door, err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	renewedA := p.ca.Issue(t, certstest.Spec{CN: "a-new", DNSNames: []string{"localhost"}})
	renewedB := p.ca.Issue(t, certstest.Spec{CN: "b-new", DNSNames: []string{"localhost"}})
	certstest.WriteFile(t, files["a"][0], renewedA.CertPEM)
	certstest.WriteFile(t, files["a"][1], renewedA.KeyPEM)
	certstest.WriteFile(t, files["b"][0], renewedB.CertPEM) // b's key still the old one
	seen := len(b.log.snapshot())
	b.signal(syscall.SIGUSR1)
	if b.log.waitFrom(seen, regexp.MustCompile(`level=ERROR msg="SIGUSR1: a certificate did not load.*broker.mqtt.listen.tcp\[b\]`), waitLong) == "" {
		t.Fatal("no error line naming door b after SIGUSR1")
	}
	for door, want := range map[string]string{"a": "a-old", "b": "b-old"} {
		if got := served(door); got != want {
			t.Errorf("after a re-read b failed, door %s serves %q, want %q", door, got, want)
		}
	}
	certstest.WriteFile(t, files["b"][1], renewedB.KeyPEM)
	seen = len(b.log.snapshot())
	b.signal(syscall.SIGUSR1)
	if b.log.waitFrom(seen, regexp.MustCompile(`msg="SIGUSR1: certificate re-read" .*listener=broker.mqtt.listen.tcp\[b\]`), waitLong) == "" {
		t.Fatal("no re-read line for door b after the fixed SIGUSR1")
	}
	for door, want := range map[string]string{"a": "a-new", "b": "b-new"} {
		if got := served(door); got != want {
			t.Errorf("after the re-read, door %s serves %q, want %q", door, got, want)
		}
	}
}

// C.3 #36, RFC 0002 "Validation": an abstract @name unix door has no file
// to leave behind and takes no lock - the broker serves it, and no
// "@name.lock" appears where a relative lock path would land (the broker's
// working directory) nor beside its configuration.
func TestAbstractUnixDoorTakesNoLock(t *testing.T) {
	dir := t.TempDir()
	name := "@saguin-" + uniq(t)
	b := startBrokerIn(t, dir, brokerConfig{Listen: "unix:\n  path: \"" + name + "\""})
	dialRawUnix(t, name, codec.Version5).mustConnect(uniq(t), nil)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{wd, dir} {
		if _, err := os.Lstat(filepath.Join(d, name+".lock")); !os.IsNotExist(err) {
			t.Errorf("a lock for %s in %s: %v", name, d, err)
		}
	}
	b.stop()
}

// C.2 #23 [GAP-3], the reading in docs/transports.md: with no path key the
// upgrade is accepted on any path, and with no subprotocol rule mqtt is
// selected when offered - among others too - while a client offering none,
// or only others, is upgraded without one.
func TestWebSocketUpgradeOnAnyPathSelectsMQTTWhenOffered(t *testing.T) {
	b := startBroker(t, brokerConfig{Listen: "ws:\n  address: 127.0.0.1:0"})
	addr := doorAddr(t, b, "ws")
	for _, c := range []struct{ path, offered, selected string }{
		{"/mqtt", "mqtt", "mqtt"},
		{"/", "chat, mqtt", "mqtt"},
		{"/any/where?x=1", "", ""},
		{"/mqtt", "mqttv3.1", ""},
	} {
		req := "GET " + c.path + " HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
			"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
		if c.offered != "" {
			req += "Sec-WebSocket-Protocol: " + c.offered + "\r\n"
		}
		conn := dialRaw(t, addr, codec.Version5)
		conn.send([]byte(req + "\r\n"))
		conn.nc.SetReadDeadline(time.Now().Add(waitLong))
		resp, err := http.ReadResponse(bufio.NewReader(conn.nc), nil)
		if err != nil {
			t.Fatalf("path %s offering %q: %v", c.path, c.offered, err)
		}
		if got := resp.Header.Get("Sec-WebSocket-Protocol"); resp.StatusCode != http.StatusSwitchingProtocols || got != c.selected {
			t.Errorf("path %s offering %q: %d selecting %q, want 101 selecting %q", c.path, c.offered, resp.StatusCode, got, c.selected)
		}
		conn.nc.Close()
	}
}
