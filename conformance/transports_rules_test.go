package conformance

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/certs/certstest"
)

// Checklist-operations.md C.1-C.2 rules with a test of their own, through
// the binary, one per rule and named after it.

// C.1 #2, RFC 0002 "TLS on a listener": cert_file holds the chain, leaf then
// intermediate, and the door sends all of it - a client that trusts the root
// alone verifies a leaf the intermediate issued (openssl's "unable to verify
// the first certificate" is what a leaf sent alone gets).
func TestCertFileChainWithAnIntermediateIsServedWhole(t *testing.T) {
	dir := t.TempDir()
	root := certstest.NewCA(t, "estate-root")
	issuing := root.Intermediate(t, "estate-issuing")
	leaf := issuing.Server(t)
	p := &pki{ca: root, caFile: root.Write(t, dir, "root")}
	p.serverCert, p.serverKey = leaf.Write(t, dir, "server")
	certstest.WriteFile(t, p.serverCert, append(append([]byte(nil), leaf.CertPEM...), issuing.PEM...))
	b := startBrokerIn(t, dir, brokerConfig{Listen: tlsDoor(p, "")})
	addr := doorAddr(t, b, "fleet")

	nc, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: root.Pool(), ServerName: "localhost"})
	if err != nil {
		t.Fatalf("a client trusting only the root: %v", err)
	}
	defer nc.Close()
	chain := nc.ConnectionState().PeerCertificates
	if len(chain) != 2 || chain[0].Subject.CommonName != "localhost" || chain[1].Subject.CommonName != "estate-issuing" {
		names := make([]string, len(chain))
		for i, c := range chain {
			names[i] = c.Subject.CommonName
		}
		t.Fatalf("the door sent %v, want [localhost estate-issuing] (the root is not sent)", names)
	}
	(&raw{t: t, nc: nc, version: codec.Version5}).mustConnect("chained", nil)

	// The same through OpenSSL, whose failure the RFC quotes.
	if pub, err := exec.LookPath("mosquitto_pub"); err == nil {
		host, port := hostPort(t, addr)
		if out, err := run(t, pub, "-h", host, "-p", port, "--cafile", p.caFile, "-V", "mqttv5", "-t", uniq(t), "-m", "x", "-i", "chained-mosquitto"); err != nil {
			t.Fatalf("mosquitto_pub trusting only the root: %v\n%s", err, out)
		}
	}
}

// C.1 #6, RFC 0002 "Client certificates": without client_ca_file no client
// certificate is asked for or looked at. A Go client is asked for one only
// by a CertificateRequest, so its GetClientCertificate is never called on
// such a door - and is on a door naming a client_ca_file, which shows the
// check can see a request - in TLS 1.2 and 1.3 alike.
func TestDoorWithoutClientCAFileSendsNoCertificateRequest(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t, dir)
	b := startBrokerIn(t, dir, brokerConfig{Listen: tlsDoor(p, "") +
		"\n  - name: mutual\n    address: 127.0.0.1:0\n    tls:\n      cert_file: " + p.serverCert + "\n      key_file: " + p.serverKey +
		"\n      client_ca_file: " + p.caFile + "\n      require_certificate: false"})
	device := p.ca.Issue(t, certstest.Spec{CN: "device-7", Client: true})
	asked := func(door, id string, version uint16) bool {
		t.Helper()
		var requests atomic.Int32
		nc, err := tls.Dial("tcp", doorAddr(t, b, door), &tls.Config{
			RootCAs: p.ca.Pool(), ServerName: "localhost", MinVersion: version, MaxVersion: version,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				requests.Add(1)
				return &device.TLS, nil
			},
		})
		if err != nil {
			t.Fatalf("%s door: %v", door, err)
		}
		defer nc.Close()
		// The CONNACK comes after the server has read the client's whole
		// handshake, the certificate message included (TLS 1.3 sends it
		// after the server's Finished).
		(&raw{t: t, nc: nc, version: codec.Version5}).mustConnect(id, nil)
		return requests.Load() > 0
	}
	for _, v := range []struct {
		name    string
		version uint16
	}{{"1.2", tls.VersionTLS12}, {"1.3", tls.VersionTLS13}} {
		if !asked("mutual", "mutual-"+v.name, v.version) {
			t.Fatalf("TLS %s: the door with a client_ca_file asked for no certificate: the check cannot see a request", v.name)
		}
		id := "plain-" + v.name
		if asked("fleet", id, v.version) {
			t.Errorf("TLS %s: a door without client_ca_file sent a CertificateRequest", v.name)
		}
		if line := mustLog(t, b, regexp.MustCompile(`msg="client connected" .*client_id=`+regexp.QuoteMeta(id)+`( |$)`)); strings.Contains(line, "principal=") {
			t.Errorf("TLS %s: a door without client_ca_file named its client: %s", v.name, line)
		}
	}
}

// C.1 #13, RFC 0002 "Withdrawing a device's access": Sagüin has no
// certificate revocation, so a certificate its authority has revoked still
// completes the handshake and names its client. The certificate points at a
// CRL distribution point and an OCSP responder the test serves - the CRL
// listing it as revoked - and the broker asks neither.
func TestNoRevocationCheckingARevokedCertificateStillConnects(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t, dir)
	var crl []byte
	var fetched atomic.Int32
	published := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched.Add(1)
		w.Header().Set("Content-Type", "application/pkix-crl")
		w.Write(crl)
	}))
	defer published.Close()
	leaf := p.ca.Issue(t, certstest.Spec{CN: "device-7", Client: true, CRLs: []string{published.URL + "/estate.crl"}, OCSP: []string{published.URL + "/ocsp"}})
	crl = p.ca.RevocationList(t, leaf)
	// The premise: the authority's own list says the certificate is revoked.
	list, err := x509.ParseRevocationList(crl)
	if err != nil || list.CheckSignatureFrom(p.ca.Cert) != nil || len(list.RevokedCertificateEntries) != 1 ||
		list.RevokedCertificateEntries[0].SerialNumber.Cmp(leaf.Cert.SerialNumber) != 0 {
		t.Fatalf("the CRL does not revoke the leaf: %v", err)
	}

	b := startBrokerIn(t, dir, brokerConfig{Listen: tlsDoor(p, "\n      client_ca_file: "+p.caFile)})
	nc, err := tls.Dial("tcp", doorAddr(t, b, "fleet"), &tls.Config{RootCAs: p.ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{leaf.TLS}})
	if err != nil {
		t.Fatalf("the revoked certificate's handshake: %v", err)
	}
	defer nc.Close()
	(&raw{t: t, nc: nc, version: codec.Version5}).mustConnect("revoked", nil)
	mustLog(t, b, regexp.MustCompile(`msg="client connected" .*client_id=revoked .*principal=device-7`))
	if n := fetched.Load(); n != 0 {
		t.Errorf("the broker fetched %d revocation documents; it checks no revocation", n)
	}
}

// wsRequest is an upgrade request for the mqtt subprotocol in HTTP version
// proto, with Host host and, unless empty, Origin origin.
func wsRequest(proto, host, origin string) string {
	req := "GET /mqtt " + proto + "\r\nHost: " + host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: mqtt\r\n"
	if origin != "" {
		req += "Origin: " + origin + "\r\n"
	}
	return req + "\r\n"
}

// wsAnswer sends req to the ws door at addr and reads the HTTP response,
// returning its status and what reads the rest of the connection.
func wsAnswer(t *testing.T, addr, req string) (int, *bufio.Reader, *raw) {
	t.Helper()
	c := dialRaw(t, addr, codec.Version5)
	c.send([]byte(req))
	c.nc.SetReadDeadline(time.Now().Add(waitLong))
	br := bufio.NewReader(c.nc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no HTTP answer to %q: %v", req, err)
	}
	resp.Body.Close()
	return resp.StatusCode, br, c
}

// C.2 #22, RFC 0002 "How long a socket may wait to send CONNECT": the ws
// door speaks HTTP/1.1 only. An HTTP/1.0 upgrade and HTTP/2 with prior
// knowledge are answered 505 (HTTP Version Not Supported) and an h2c upgrade
// 400, none upgraded, each connection closed after its answer; the same
// upgrade in HTTP/1.1 gets its 101.
func TestWebSocketDoorSpeaksHTTP11Only(t *testing.T) {
	b := startBroker(t, brokerConfig{Listen: "ws:\n  address: 127.0.0.1:0"})
	addr := doorAddr(t, b, "ws")
	if status, _, _ := wsAnswer(t, addr, wsRequest("HTTP/1.1", addr, "")); status != http.StatusSwitchingProtocols {
		t.Fatalf("an HTTP/1.1 upgrade: %d, want 101", status)
	}
	// An HTTP/2 client with prior knowledge opens with the preface and its
	// SETTINGS frame (RFC 9113 3.4), here an empty one.
	preface := "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + "\x00\x00\x00\x04\x00\x00\x00\x00\x00"
	h2c := "GET /mqtt HTTP/1.1\r\nHost: " + addr + "\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n"
	for _, c := range []struct {
		what, req string
		want      int
	}{
		{"an HTTP/1.0 upgrade", wsRequest("HTTP/1.0", addr, ""), http.StatusHTTPVersionNotSupported},
		{"HTTP/2 with prior knowledge", preface, http.StatusHTTPVersionNotSupported},
		{"an h2c upgrade", h2c, http.StatusBadRequest},
	} {
		status, rest, conn := wsAnswer(t, addr, c.req)
		if status != c.want {
			t.Errorf("%s: %d, want %d", c.what, status, c.want)
		}
		if extra, err := io.ReadAll(rest); (err != nil && !isReset(err)) || len(extra) != 0 {
			t.Errorf("%s: after the answer, %q and %v; want the connection closed", c.what, extra, err)
		}
		conn.nc.Close()
	}
}

// C.2 #30, RFC 0002 "How long a socket may wait to send CONNECT": a ws
// door's max_connections slot is taken when the socket is accepted, before
// any upgrade - a socket that has sent nothing holds it - and a socket that
// finds none free is closed with nothing written, whatever it sends: no 101
// or HTTP error, and never an MQTT 0x89. Once the holder hangs up its slot
// serves an upgrade again.
func TestWebSocketSlotTakenAtAcceptClosedWithNothingWrittenWhenNoneIsFree(t *testing.T) {
	b := startBroker(t, brokerConfig{Limits: "max_connections: 1", Listen: "ws:\n  address: 127.0.0.1:0"})
	addr := doorAddr(t, b, "ws")
	holder := dialRaw(t, addr, codec.Version5) // accepted, never upgrades
	connect := (&codec.Connect{Version: codec.Version5, CleanStart: true, ClientID: []byte("busy")}).Append(nil, codec.Version5)
	for _, c := range []struct{ what, first string }{
		{"an upgrade request", wsRequest("HTTP/1.1", addr, "")},
		{"an MQTT CONNECT", string(connect)},
	} {
		late := dialRaw(t, addr, codec.Version5)
		late.send([]byte(c.first))
		late.expectClosedSilently()
	}
	holder.nc.Close()
	deadline := time.Now().Add(waitLong)
	for {
		c := dialRaw(t, addr, codec.Version5)
		c.send([]byte(wsRequest("HTTP/1.1", addr, "")))
		c.nc.SetReadDeadline(time.Now().Add(waitLong))
		if resp, err := http.ReadResponse(bufio.NewReader(c.nc), nil); err == nil {
			if resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatalf("with the slot free: %d, want 101", resp.StatusCode)
			}
			return
		}
		c.nc.Close()
		if time.Now().After(deadline) {
			t.Fatal("the holder's slot never came back")
		}
	}
}

// C.2 #34, RFC 0002 "Which web pages may connect": same_origin alone does
// not stop DNS rebinding - a page whose domain now resolves to the broker
// names that domain in both Origin and Host, so it is its own site and is
// upgraded - while a list stops it, the attacker's domain never being on it
// (403, logged at warn with the origin).
func TestSameOriginAloneAdmitsADNSRebindingPageAListRefusesIt(t *testing.T) {
	b := startBroker(t, brokerConfig{Listen: "ws:\n  - name: same\n    address: 127.0.0.1:0\n" +
		"  - name: listed\n    address: 127.0.0.1:0\n    allowed_origins:\n      - http://dashboard.example"})
	refused := ""
	for _, c := range []struct {
		door string
		want int
	}{{"same", http.StatusSwitchingProtocols}, {"listed", http.StatusForbidden}} {
		addr := doorAddr(t, b, c.door)
		_, port := hostPort(t, addr)
		page := "http://rebind.attacker.example:" + port
		status, _, conn := wsAnswer(t, addr, wsRequest("HTTP/1.1", strings.TrimPrefix(page, "http://"), page))
		if status != c.want {
			t.Errorf("%s door, a rebound page: %d, want %d", c.door, status, c.want)
		}
		conn.nc.Close()
		if c.want == http.StatusForbidden {
			refused = page
		}
	}
	mustLog(t, b, regexp.MustCompile(`level=WARN msg="refused a WebSocket upgrade.*origin=`+regexp.QuoteMeta(refused)))
}
