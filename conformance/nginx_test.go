package conformance

import (
	"bufio"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/certs/certstest"
)

// `make nginx` (issue 16 item 8): RFC 0005's nginx arrangement - the stream
// server, the WebSocket server and the operations server in one file - run
// by Debian's nginx in front of a broker configured as the RFC's "broker
// beneath it", with every answer the RFC lists asserted (checklist C.5 #54)
// and CONF-3's correction: behind nginx's TLS the ws door is same_origin:
// false with the page's https origin listed, since same_origin would refuse
// every page (scheme mismatch).
//
// Two deviations forced by Debian's nginx 1.22: it has no `proxy_protocol
// v2` (it sends v1 only), so the stream server is written with
// `proxy_protocol on` and the broker's refusal of that header, naming the
// setting, is what is asserted (HAProxy drives v2 in transports_test.go);
// and the htpasswd file is written with nginx's {SHA} scheme, as no
// htpasswd tool is installed.
func TestNginxArrangementAnswersWhatRFC0005Lists(t *testing.T) {
	nginx := needBinary(t, "nginx")
	module := "/usr/lib/nginx/modules/ngx_stream_module.so"
	if _, err := os.Stat(module); err != nil {
		t.Skipf("nginx's stream module is not installed (libnginx-mod-stream): not checked")
	}
	dir := t.TempDir()
	p := newPKI(t, dir) // the server's certificate, and the authority of clients and operators alike
	wsPort, opsPort := freePort(t), freePort(t)
	streamPort, pagePort, nginxOpsPort := freePort(t), freePort(t), freePort(t)

	pw := filepath.Join(dir, "operations.passwd")
	passwordFile(t, pw, [3]string{"prometheus", "scrape-secret", "/metrics"}, [3]string{"operator", "unused-password", ""})
	sum := sha1.Sum([]byte("scrape-secret"))
	htpasswd := filepath.Join(dir, "metrics.htpasswd")
	certstest.WriteFile(t, htpasswd, []byte("prometheus:{SHA}"+base64.StdEncoding.EncodeToString(sum[:])+"\n"))

	page := "https://127.0.0.1:" + pagePort
	beneath := func(passwordFile string) brokerConfig {
		ops := "operations:\n  listen:\n    tcp:\n      address: 127.0.0.1:" + opsPort +
			"\n    unix:\n      path: $DIR/operations.sock\n      mode: \"0660\""
		if passwordFile != "" {
			ops += "\n  password_file: " + passwordFile
		}
		return brokerConfig{
			Listen: "unix:\n  path: $DIR/saguin.sock\n  mode: \"0660\"\n  proxy_protocol: true\n" +
				"ws:\n  address: 127.0.0.1:" + wsPort + "\n  same_origin: false\n  allowed_origins:\n    - " + page,
			Broker: ops,
		}
	}
	b := startBrokerIn(t, dir, beneath(pw))

	cfg := filepath.Join(dir, "nginx.conf")
	// nginx's workers must reach the broker's 0660 sockets (the RFC's
	// failure mode: a worker outside the socket's group gets "13:
	// Permission denied" and the broker logs nothing); the test runs them
	// as the user the broker runs as.
	certstest.WriteFile(t, cfg, []byte(`load_module `+module+`;
user `+currentUser(t)+`;
pid `+dir+`/nginx.pid;
error_log stderr info;
events { worker_connections 64; }
stream {
    server {
        listen 127.0.0.1:`+streamPort+` ssl;
        ssl_certificate        `+p.serverCert+`;
        ssl_certificate_key    `+p.serverKey+`;
        ssl_client_certificate `+p.caFile+`;
        ssl_verify_client      on;
        proxy_pass unix:`+dir+`/saguin.sock;
        proxy_protocol on;
        proxy_timeout 20m;
    }
}
http {
    access_log off;
    client_body_temp_path `+dir+`/body;
    proxy_temp_path `+dir+`/proxy;
    map $ssl_client_s_dn $client_cn {
        default                 "";
        "~(^|,)CN=(?<cn>[^,]+)" $cn;
    }
    server {
        listen 127.0.0.1:`+pagePort+` ssl;
        ssl_certificate     `+p.serverCert+`;
        ssl_certificate_key `+p.serverKey+`;
        location /mqtt {
            proxy_pass http://127.0.0.1:`+wsPort+`;
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection "upgrade";
            proxy_read_timeout 3600s;
        }
    }
    server {
        listen 127.0.0.1:`+nginxOpsPort+` ssl;
        ssl_certificate     `+p.serverCert+`;
        ssl_certificate_key `+p.serverKey+`;
        ssl_client_certificate `+p.caFile+`;
        ssl_verify_client      optional;
        location /metrics {
            auth_basic           "saguin";
            auth_basic_user_file `+htpasswd+`;
            proxy_pass http://127.0.0.1:`+opsPort+`;
        }
        location /v1/ {
            proxy_pass       http://unix:`+dir+`/operations.sock:/v1/;
            proxy_set_header X-Saguin-Principal $client_cn;
        }
    }
}
`))
	startProxy(t, nginx, nginxOpsPort, "-p", dir, "-c", cfg, "-g", "daemon off;")

	roots := x509.NewCertPool()
	caPEM, err := os.ReadFile(p.caFile)
	if err != nil {
		t.Fatal(err)
	}
	roots.AppendCertsFromPEM(caPEM)
	client := func(cn string) *http.Client {
		cfg := &tls.Config{RootCAs: roots}
		if cn != "" {
			cert, key := p.device(t, dir, cn, certstest.Spec{CN: cn})
			pair, err := tls.LoadX509KeyPair(cert, key)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		return &http.Client{Timeout: waitLong, Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	ask := func(c *http.Client, path string, hdr ...string) int {
		t.Helper()
		req, err := http.NewRequest("GET", "https://127.0.0.1:"+nginxOpsPort+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, _ := do(t, c, req)
		return resp.StatusCode
	}
	none, operator, stranger := client(""), client("operator"), client("stranger")
	for _, row := range []struct {
		what string
		c    *http.Client
		path string
		hdr  []string
		want int
	}{
		{"/metrics, the scraper's password, no certificate", none, "/metrics", basic("prometheus", "scrape-secret"), 200},
		{"/metrics, a wrong password", none, "/metrics", basic("prometheus", "wrong"), 401},
		{"/v1, a certificate whose name has an entry", operator, "/v1/operations/sessions", nil, 200},
		{"/v1, a certificate whose name has none", stranger, "/v1/operations/sessions", nil, 403},
		{"/v1, nothing", none, "/v1/operations/sessions", nil, 401},
		{"/v1, a client-written X-Saguin-Principal and no certificate", none, "/v1/operations/sessions", []string{"X-Saguin-Principal", "operator"}, 401},
		{"/health, deliberately not proxied", none, "/health", nil, 0},
	} {
		got := ask(row.c, row.path, row.hdr...)
		if row.want == 0 && got == 200 {
			t.Errorf("%s: 200, want nginx's own refusal", row.what)
		} else if row.want != 0 && got != row.want {
			t.Errorf("%s: %d, want %d", row.what, got, row.want)
		}
	}

	// The ws server: a page served from the proxy's https origin upgrades
	// and is answered MQTT; a page from another site is refused.
	if status, ack := wsThroughProxy(t, "127.0.0.1:"+pagePort, roots, page); status != 101 || ack != codec.Success {
		t.Errorf("ws through nginx from %s: %d, CONNACK 0x%02x; want 101 and 0x00", page, status, byte(ack))
	}
	if status, _ := wsThroughProxy(t, "127.0.0.1:"+pagePort, roots, "https://evil.example"); status != 403 {
		t.Errorf("ws through nginx from another site: %d, want 403", status)
	}

	// The stream server: Debian's nginx speaks PROXY v1 alone, refused by name.
	devCert, devKey := p.device(t, dir, "device-7", certstest.Spec{CN: "device-7"})
	pair, err := tls.LoadX509KeyPair(devCert, devKey)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := tls.Dial("tcp", "127.0.0.1:"+streamPort, &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	sc.Write((&codec.Connect{Version: 5, CleanStart: true, KeepAlive: 60, ClientID: []byte("via-stream")}).Append(nil, 5))
	mustLog(t, b, regexp.MustCompile(`level=WARN msg="closed: the PROXY header was refused" .*proxy_protocol v2`))

	// Without the operations password file, the same /v1 with no
	// certificate is served: the open case the file prevents.
	b.signal(sigterm)
	if code := b.waitExit(waitLong); code != 0 {
		t.Fatalf("the broker exited %d", code)
	}
	startBrokerIn(t, dir, beneath(""))
	if got := ask(none, "/v1/operations/sessions"); got != 200 {
		t.Errorf("/v1 with no certificate and no operations password_file: %d, want 200", got)
	}
}

// wsThroughProxy upgrades to MQTT over WebSocket at addr (TLS) with origin
// and, once upgraded, sends an MQTT 5 CONNECT in one masked frame: the
// upgrade's status and the CONNACK's code.
func wsThroughProxy(t *testing.T, addr string, roots *x509.CertPool, origin string) (int, codec.ReasonCode) {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitLong))
	req := "GET /mqtt HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: mqtt\r\nOrigin: " + origin + "\r\n\r\n"
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 101 {
		return resp.StatusCode, 0
	}
	connect := (&codec.Connect{Version: 5, CleanStart: true, KeepAlive: 60, ClientID: []byte("via-ws")}).Append(nil, 5)
	mask := [4]byte{1, 2, 3, 4}
	frame := []byte{0x82, 0x80 | byte(len(connect)), mask[0], mask[1], mask[2], mask[3]}
	for i, x := range connect {
		frame = append(frame, x^mask[i%4])
	}
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 2)
	if _, err := io.ReadFull(r, head); err != nil || head[0] != 0x82 || head[1] >= 126 {
		t.Fatalf("the CONNACK frame: % x %v", head, err)
	}
	body := make([]byte, head[1])
	if _, err := io.ReadFull(r, body); err != nil || len(body) < 4 || body[0]>>4 != byte(codec.TypeConnack) {
		t.Fatalf("the CONNACK: % x %v", body, err)
	}
	return resp.StatusCode, codec.ReasonCode(body[3])
}

// currentUser is the name of the user the test runs as.
func currentUser(t *testing.T) string {
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return u.Username
}
