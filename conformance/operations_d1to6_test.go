package conformance

// Checklist section D.1-D.6 (RFC 0005 "The operations listener", "Who Sagüin
// thinks you are", "The health endpoint", "Metrics", "The catalogue"): one
// test a rule, named after it, each against the real binary.

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/saguin-edge/saguin/codec"
)

// opsDoors is every operations door the broker's log says it opened, by
// door name: host:port for a tcp door, the path for a unix one.
func opsDoors(t *testing.T, b *brokerProc, want int) map[string]string {
	t.Helper()
	doors := map[string]string{}
	deadline := time.Now().Add(waitLong)
	for {
		lines := b.log.snapshot()
		for _, line := range lines {
			if m := opsOpenRE.FindStringSubmatch(line); m != nil {
				doors[m[1]] = m[3]
			}
		}
		// The doors are logged one after another at start.
		if len(doors) >= want || b.log.waitFrom(len(lines), opsOpenRE, time.Until(deadline)) == "" {
			break
		}
	}
	if len(doors) != want {
		t.Fatalf("%d operations doors in the log, want %d:\n%s", len(doors), want, b.log)
	}
	return doors
}

// getAt sends one request to a tcp operations door at addr.
func getAt(t *testing.T, addr, path string, hdr ...string) int {
	t.Helper()
	ob := &opsBroker{ops: addr}
	resp, _ := ob.get(t, "GET", path, hdr...)
	return resp.StatusCode
}

// listeningSockets is every socket the process pid listens on, read from
// /proc: "tcp host:port" (hex as the kernel writes it, decoded) and "unix
// path".
func listeningSockets(t *testing.T, pid int) []string {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("no /proc to read the broker's sockets from: %v", err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var out []string
	for _, table := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			// local_address, state (0A is LISTEN), ..., inode is the tenth.
			if len(f) > 9 && f[3] == "0A" && inodes[f[9]] {
				out = append(out, "tcp "+decodeProcAddr(f[1]))
			}
		}
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/unix", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		// Flags 00010000 is __SO_ACCEPTCON: a listening socket.
		if len(f) > 6 && f[3] == "00010000" && inodes[f[6]] {
			path := ""
			if len(f) > 7 {
				path = f[7]
			}
			out = append(out, "unix "+path)
		}
	}
	return out
}

// decodeProcAddr turns /proc/net/tcp's "0100007F:1F90" into "127.0.0.1:8080"
// (IPv4 only; an IPv6 address is kept as the kernel writes it).
func decodeProcAddr(s string) string {
	host, port, _ := strings.Cut(s, ":")
	p, _ := strconv.ParseUint(port, 16, 16)
	if len(host) != 8 {
		return host + ":" + strconv.FormatUint(p, 10)
	}
	v, _ := strconv.ParseUint(host, 16, 32)
	return fmt.Sprintf("%d.%d.%d.%d:%d", byte(v), byte(v>>8), byte(v>>16), byte(v>>24), p)
}

// Checklist D1.1 (RFC 0005 "The operations listener"): with no
// broker.operations block there is no listener at all - the process listens
// on its MQTT door and on nothing else, and says nothing of an operations
// listener.
func TestD1_1NoOperationsBlockOpensNoListener(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	if strings.Contains(b.log.String(), "operations") {
		t.Errorf("a broker with no broker.operations speaks of one:\n%s", b.log)
	}
	got := listeningSockets(t, b.cmd.Process.Pid)
	if len(got) != 1 || got[0] != "tcp "+b.addr {
		t.Fatalf("the broker listens on %v, want its MQTT door tcp %s alone", got, b.addr)
	}
}

// Checklist D1.6 (RFC 0002 "Validation"): a relative password_file, on the
// operations block or on one of its doors, is refused at start naming the
// key.
func TestD1_6RelativeOperationsPasswordFileIsRefused(t *testing.T) {
	for _, c := range []struct{ ops, key string }{
		{opsTCP + "\npassword_file: operations.passwd", "broker.operations.password_file"},
		{opsTCP + "\n    password_file: operations.passwd", "broker.operations.listen.tcp.password_file"},
	} {
		code, out := startFailing(t, brokerConfig{Broker: "operations:\n" + indentLines(c.ops, "  ")}, t.TempDir())
		if code == 0 || !strings.Contains(out, c.key+` "operations.passwd" is relative`) {
			t.Errorf("%s relative: exit %d, output:\n%s", c.key, code, out)
		}
	}
}

// Checklist D1.7 (RFC 0005 "The operations listener"): a door's own
// password_file is the one that door checks, the block's is not; every other
// door - the unix socket included - checks the block's, with no way out of
// it.
func TestD1_7ADoorsOwnPasswordFileBeatsTheBlocks(t *testing.T) {
	dir := t.TempDir()
	blockPW, doorPW := filepath.Join(dir, "block.passwd"), filepath.Join(dir, "door.passwd")
	passwordFile(t, blockPW, [3]string{"alice", "alice-secret", ""})
	passwordFile(t, doorPW, [3]string{"bob", "bob-secret", ""})
	sock := filepath.Join(dir, "ops.sock")
	ob := startOps(t, dir, fmt.Sprintf(`listen:
  tcp:
    - name: own
      address: 127.0.0.1:0
      password_file: %s
    - name: shared
      address: 127.0.0.1:0
  unix:
    path: %s
password_file: %s`, doorPW, sock, blockPW), brokerConfig{})
	doors := opsDoors(t, ob.brokerProc, 3)
	alice, bob := basic("alice", "alice-secret"), basic("bob", "bob-secret")
	cases := []struct {
		door   string
		who    []string
		status int
	}{
		{"own", bob, 200},
		{"own", alice, 401}, // the block's user is nobody here
		{"own", nil, 401},
		{"shared", alice, 200},
		{"shared", bob, 401},
		{"shared", nil, 401},
	}
	for _, c := range cases {
		if got := getAt(t, doors[c.door], "/metrics", c.who...); got != c.status {
			t.Errorf("door %s, %v: %d, want %d", c.door, c.who, got, c.status)
		}
	}
	// The unix door has no file of its own: the block's governs it too.
	if resp, _ := ob.unixGet(t, "/metrics"); resp.StatusCode != 401 {
		t.Errorf("unix door, nobody named: %d, want 401 (the block's file applies)", resp.StatusCode)
	}
	if resp, _ := ob.unixGet(t, "/metrics", alice...); resp.StatusCode != 200 {
		t.Errorf("unix door, alice: %d, want 200", resp.StatusCode)
	}
	if resp, _ := ob.unixGet(t, "/metrics", bob...); resp.StatusCode != 401 {
		t.Errorf("unix door, bob: %d, want 401", resp.StatusCode)
	}
}

// Checklist D1.8 (RFC 0005 "The operations listener", RFC 0002 "TLS on a
// listener"): operations door names are their own id space - an operations
// door may carry an MQTT door's name - and the start names each door;
// --check-config refuses, among operations doors, a second unnamed door of a
// kind and two doors sharing a name.
func TestD1_8OperationsDoorNamesAreTheirOwnIdSpace(t *testing.T) {
	dir := t.TempDir()
	b := startBrokerIn(t, dir, brokerConfig{
		Listen: "tcp:\n  - name: edge\n    address: 127.0.0.1:0",
		Broker: "operations:\n  listen:\n    tcp:\n      - name: edge\n        address: 127.0.0.1:0\n      - name: probe\n        address: 127.0.0.1:0",
	})
	doors := opsDoors(t, b, 2)
	for _, name := range []string{"edge", "probe"} {
		if getAt(t, doors[name], "/health") != 200 {
			t.Errorf("operations door %s does not answer /health", name)
		}
	}
	if !regexp.MustCompile(`msg=listening .*listener=edge `).MatchString(b.log.String()) {
		t.Errorf("the MQTT door edge is not named at start:\n%s", b.log)
	}

	for _, c := range []struct{ why, ops, want string }{
		{"two unnamed tcp doors", "listen:\n  tcp:\n    - address: 127.0.0.1:0\n    - address: 127.0.0.1:0",
			"broker.operations.listen.tcp has 2 doors and entry 1 has no name"},
		{"a tcp and a unix door both named a", "listen:\n  tcp:\n    - name: a\n      address: 127.0.0.1:0\n  unix:\n    - name: a\n      path: $DIR/ops.sock",
			`broker.operations.listen.unix[a] is named "a", and so is the door`},
		{"a unix door named tcp beside the tcp door", "listen:\n  tcp:\n    address: 127.0.0.1:0\n  unix:\n    - name: tcp\n      path: $DIR/ops.sock",
			`is named "tcp"`},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "saguin.yaml")
		cfg := brokerConfig{Broker: "operations:\n" + indentLines(c.ops, "  ")}
		if err := os.WriteFile(path, []byte(cfg.yaml(dir)), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errs, code := runCLI(t, "--check-config", path)
		if code == 0 || !strings.Contains(out+errs, c.want) {
			t.Errorf("%s: --check-config exit %d, want a refusal saying %q:\n%s%s", c.why, code, c.want, out, errs)
		}
	}
}

// Checklist D1.13 (RFC 0005 "The operations listener"): an operations
// address is bound at start with the MQTT doors, and one in use stops the
// start with an error naming the door and the address.
func TestD1_13OperationsAddressInUseIsNamedInTheRefusal(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	addr := held.Addr().String()
	code, out := startFailing(t, brokerConfig{Broker: "operations:\n  listen:\n    tcp:\n      - name: probe\n        address: " + addr}, t.TempDir())
	if code == 0 || !regexp.MustCompile(`operations listener probe: listen tcp `+regexp.QuoteMeta(addr)+`: .*address already in use`).MatchString(out) {
		t.Fatalf("exit %d, want a refusal naming door probe and %s:\n%s", code, addr, out)
	}
}

// Checklist D1.17 (RFC 0002 "How fast connections are accepted"):
// limits.max_connect_rate paces the MQTT doors, not the operations
// listener. At one connection a second (bursting to two) eight MQTT
// sockets are admitted over six seconds; while the last of them is still
// waiting for its CONNACK the operations door has served twenty fresh
// connections, which at that rate would have taken eighteen seconds.
func TestD1_17OperationsDoorsAreNotPacedByMaxConnectRate(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{Limits: "max_connect_rate: 1"})
	var waiting []*raw
	for i := range 8 {
		c := dialRaw(t, ob.addr, codec.Version5)
		c.send(c.connectPacket(fmt.Sprintf("paced-%d", i), nil))
		waiting = append(waiting, c)
	}
	// The first two take the burst: the pacing is in force.
	waiting[0].connack()
	waiting[1].connack()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 20 {
		req, _ := http.NewRequest("GET", "http://"+ob.ops+"/health", nil)
		if resp, _ := do(t, client, req); resp.StatusCode != 200 {
			t.Fatalf("operations connection %d: %d", i, resp.StatusCode)
		}
	}
	last := waiting[len(waiting)-1]
	if h, _, err := last.next(time.Millisecond); err == nil {
		t.Fatalf("the last paced MQTT socket was answered (%s) before the operations door served twenty connections", h.Type)
	}
}

// Checklist D1.18 (GAP-5; docs/operations.md "Readings chosen"): the
// operations HTTP server is bounded - headers past 16 KiB are refused 431, a
// request whose headers do not arrive within 5 s is closed, and a door
// serves 64 connections at once, the next waiting (not refused) until one
// ends.
func TestD1_18OperationsHTTPServerIsBounded(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{})

	// net/http reads 4 KiB past MaxHeaderBytes before it refuses, so the
	// refusal is asserted past that slack. The answer is read off a raw
	// socket: the broker hangs up with the rest of the headers unread, and a
	// client still writing would see the reset rather than the 431.
	for _, c := range []struct {
		kib  int
		want string
	}{{8, "HTTP/1.1 200 "}, {21, "HTTP/1.1 431 "}} {
		conn, err := net.Dial("tcp", ob.ops)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(waitLong))
		fmt.Fprintf(conn, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: %s\r\n\r\n", strings.Repeat("x", c.kib<<10))
		status, err := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if !strings.HasPrefix(status, c.want) {
			t.Errorf("%d KiB of headers: %q %v, want %q", c.kib, status, err, c.want)
		}
	}

	// Half a request: the server closes it once the header timeout passes.
	slow, err := net.Dial("tcp", ob.ops)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fmt.Fprintf(slow, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
	slow.SetReadDeadline(time.Now().Add(waitLong))
	if n, err := slow.Read(make([]byte, 512)); err == nil || isTimeout(err) {
		t.Errorf("a request whose headers never end: read %d bytes, %v; want the connection closed by the broker", n, err)
	}

	// 64 kept-alive connections, each answered once and left idle (60 s
	// before the idle timeout would close them), fill the door - once the
	// connections the requests above left idle in the client are gone.
	http.DefaultClient.CloseIdleConnections()
	request := "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
	var kept []net.Conn
	for i := range 64 {
		c, err := net.Dial("tcp", ob.ops)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(waitLong))
		fmt.Fprint(c, request)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("kept connection %d: %v %v", i, resp, err)
		}
		resp.Body.Close()
		kept = append(kept, c)
	}
	next, err := net.Dial("tcp", ob.ops) // the kernel's backlog takes it
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	fmt.Fprint(next, request)
	br := bufio.NewReader(next)
	next.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := br.Peek(1); !isTimeout(err) {
		t.Fatalf("the 65th connection was answered (%v) while 64 were open", err)
	}
	kept[0].Close()
	next.SetReadDeadline(time.Now().Add(waitLong))
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the 65th connection once a slot was free: %v %v", resp, err)
	}
	resp.Body.Close()
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// Checklist D2.34 (RFC 0005 "Authentication and TLS"): operations
// credentials are never the MQTT ones - an MQTT user's password does not
// open /metrics, and an operator's does not open an MQTT session.
func TestD2_34MQTTCredentialsAreNotOperationsCredentials(t *testing.T) {
	dir := t.TempDir()
	mqttPW := writePasswd(t, dir, map[string]string{"device-7": "pw7"})
	opsPW := filepath.Join(dir, "operations.passwd")
	passwordFile(t, opsPW, [3]string{"oncall", "oncall-secret", ""})
	ob := startOps(t, dir, opsTCP+"\npassword_file: "+opsPW, brokerConfig{MQTT: "password_file: " + mqttPW})

	if got := getAt(t, ob.ops, "/metrics", basic("device-7", "pw7")...); got != 401 {
		t.Errorf("an MQTT user's password on the operations door: %d, want 401", got)
	}
	if got := getAt(t, ob.ops, "/metrics", basic("oncall", "oncall-secret")...); got != 200 {
		t.Errorf("the operator's password on the operations door: %d, want 200", got)
	}
	c := dialRaw(t, ob.addr, codec.Version5)
	if ack := c.connect(clientID(t, "op"), login("oncall", "oncall-secret")); ack.ReasonCode != codec.BadUserNameOrPassword {
		t.Errorf("the operator's password in an MQTT CONNECT: CONNACK 0x%02x, want 0x86", byte(ack.ReasonCode))
	}
	dialRaw(t, ob.addr, codec.Version5).mustConnect(clientID(t, "dev"), login("device-7", "pw7"))
}

// Checklist D2.35 (RFC 0005 "Authentication and TLS", AMB-46): TLS is
// optional on a tcp operations door and a unix door takes none - tls under
// one is refused at load naming the key.
func TestD2_35TLSOnAnOperationsUnixDoorIsRefused(t *testing.T) {
	dir := t.TempDir()
	code, out := startFailing(t, brokerConfig{Broker: "operations:\n  listen:\n    unix:\n      path: $DIR/ops.sock\n      tls:\n        cert_file: $DIR/server.pem\n        key_file: $DIR/server.key"}, dir)
	if code == 0 || !strings.Contains(out, "broker.operations.listen.unix.tls is not accepted on a Unix socket") {
		t.Fatalf("exit %d, want a refusal naming broker.operations.listen.unix.tls:\n%s", code, out)
	}
}

// scrapeOnce takes the broker's one computation of the catalogue: with
// min_scrape_interval at its 60 s floor, every later scrape in a test
// answers the same bytes, so a test does what moves the numbers first,
// waits for the broker to have done it (quiet), then scrapes once.
func scrapeOnce(t *testing.T, ob *opsBroker) map[string]*dto.MetricFamily {
	t.Helper()
	resp, body := ob.get(t, "GET", "/metrics")
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, body)
	}
	return parseScrape(t, body)
}

// wantSeries checks one series' value (present, and equal to want).
func wantSeries(t *testing.T, fams map[string]*dto.MetricFamily, name string, want float64, labels ...string) {
	t.Helper()
	if v, ok := value(fams[name], labels...); !ok || v != want {
		t.Errorf("%s%v = %v (present %v), want %v", name, labels, v, ok, want)
	}
}

// quiet waits until /v1/operations/sessions - computed at every request,
// never cached - says connected of the sessions are connected: every
// connection a test closed has been ended by the broker, and with it every
// count its packets moved.
func quiet(t *testing.T, ob *opsBroker, connected, offline int) {
	t.Helper()
	want := fmt.Sprintf(`"connected":%d,"offline":%d,`, connected, offline)
	deadline := time.Now().Add(waitLong)
	var body string
	for time.Now().Before(deadline) {
		_, body = ob.get(t, "GET", "/v1/operations/sessions")
		if strings.Contains(body, want) {
			return
		}
		time.Sleep(20 * time.Millisecond) // polling a route; nothing here waits on a clock
	}
	t.Fatalf("/v1/operations/sessions never said %s: %s", want, body)
}

// countingConn counts the bytes a client wrote and read.
type countingConn struct {
	net.Conn
	in, out atomic.Int64
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.in.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.out.Add(int64(n))
	return n, err
}

// counted is a raw client whose bytes are counted.
func counted(t *testing.T, addr string, v byte) (*raw, *countingConn) {
	c := dialRaw(t, addr, v)
	cc := &countingConn{Conn: c.nc}
	c.nc = cc
	return c, cc
}

// wire is the scrape after a known exchange: a subscriber to a/# and a
// publisher sending three publishes it matches (QoS 0, QoS 1, QoS 2 released)
// and two nobody matches, then one refused at limits.publish_rate; a client
// whose Will goes to the subscriber; everything disconnected. in and out are
// the bytes the clients wrote and read; published the PUBLISH packets the
// clients sent, delivered those the subscriber read.
type wire struct {
	fams                          map[string]*dto.MetricFamily
	in, out, published, delivered int
}

func wireExchange(t *testing.T) wire {
	t.Helper()
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{Limits: "publish_rate: 5"})
	var w wire
	sub, subBytes := counted(t, ob.addr, codec.Version5)
	sub.mustConnect("sub", nil)
	sub.mustSubscribe(1, "a/#", 2) // the QoS 2 exchange is the subscriber's too
	pub, pubBytes := counted(t, ob.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publish("a/0", []byte("zero"), 0, 0)
	pub.publishQoS1("a/1", []byte("one"), 1)
	pub.publishQoS2("a/2", []byte("two"), 2)
	pub.publish("b/nobody", []byte("x"), 0, 0)
	pub.publishQoS1("b/nobody", []byte("y"), 3)
	w.published = 5
	// The budget is five a second: the sixth publish inside the second is
	// refused 0x97, and counted as received all the same.
	for id := uint16(10); ; id++ {
		pub.publish("a/over", []byte("over"), 1, id)
		w.published++
		if code := pub.expectAck(codec.TypePuback, id); code == codec.QuotaExceeded {
			break
		} else if id > 40 {
			t.Fatal("limits.publish_rate never refused")
		}
	}
	wc, willBytes := counted(t, ob.addr, codec.Version5)
	wc.mustConnect("willing", will("a/will", "gone", 0, false, 0))
	wc.drop()

	// What reached the subscriber: everything on a/ but the refused
	// publish, the Will last.
	w.delivered = len(sub.readUntil("gone")) + 1
	if want := 3 + (w.published - 5 - 1) + 1; w.delivered != want {
		t.Fatalf("the subscriber read %d publishes, want %d", w.delivered, want)
	}
	pub.disconnect()
	sub.disconnect()
	quiet(t, ob, 0, 0)
	w.fams = scrapeOnce(t, ob)
	for _, c := range []*countingConn{subBytes, pubBytes, willBytes} {
		w.in += int(c.out.Load())
		w.out += int(c.in.Load())
	}
	return w
}

// Checklist D.6 row 21 (RFC 0005 "The catalogue", Publishing):
// saguin_bytes_received_total is every byte read from MQTT connections -
// exactly what the clients wrote, the operations listener's traffic not in it.
func TestD6_21BytesReceivedIsEveryByteClientsWrote(t *testing.T) {
	w := wireExchange(t)
	wantSeries(t, w.fams, "saguin_bytes_received_total", float64(w.in))
}

// Checklist D.6 row 22: saguin_bytes_sent_total is every byte written to MQTT
// connections - exactly what the clients read.
func TestD6_22BytesSentIsEveryByteClientsRead(t *testing.T) {
	w := wireExchange(t)
	wantSeries(t, w.fams, "saguin_bytes_sent_total", float64(w.out))
}

// Checklist D.6 row 23: saguin_publishes_received_total counts the PUBLISH
// packets clients sent, the one limits.publish_rate refused included and the
// Will not.
func TestD6_23PublishesReceivedCountsRefusedAndNotWills(t *testing.T) {
	w := wireExchange(t)
	wantSeries(t, w.fams, "saguin_publishes_received_total", float64(w.published))
}

// Checklist D.6 row 24: saguin_deliveries_sent_total counts the PUBLISH
// packets written to subscribers, the Will's included.
func TestD6_24DeliveriesSentCountsWhatSubscribersRead(t *testing.T) {
	w := wireExchange(t)
	wantSeries(t, w.fams, "saguin_deliveries_sent_total", float64(w.delivered))
}

// Checklist D.6 row 25 (docs/operations.md "Readings chosen"):
// saguin_deliveries_refused_total is 0 after deliveries - Sagüin's broadcast
// never refuses a new delivery at session_queue_bytes.
func TestD6_25DeliveriesRefusedStaysZero(t *testing.T) {
	w := wireExchange(t)
	wantSeries(t, w.fams, "saguin_deliveries_refused_total", 0)
}

// Checklist D.6 row 30: saguin_broadcast_unmatched_total counts the
// publishes no subscription matched - the two sent to b/nobody.
func TestD6_30BroadcastUnmatchedCountsPublishesNobodyMatched(t *testing.T) {
	w := wireExchange(t)
	wantSeries(t, w.fams, "saguin_broadcast_unmatched_total", 2)
}

// Checklist D.6 row 6: saguin_sessions_offline is the sessions held with
// nothing connected - two kept sessions whose clients left, not the one
// connected nor the clean one that ended with its connection.
func TestD6_6SessionsOfflineCountsHeldSessionsNothingIsConnectedTo(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{})
	for _, id := range []string{"kept-1", "kept-2"} {
		c := dialRaw(t, ob.addr, codec.Version5)
		c.mustConnect(id, freshSession(3600))
		c.disconnect()
	}
	gone := dialRaw(t, ob.addr, codec.Version5)
	gone.mustConnect("gone", nil)
	gone.disconnect()
	dialRaw(t, ob.addr, codec.Version5).mustConnect("here", nil)
	quiet(t, ob, 1, 2)
	wantSeries(t, scrapeOnce(t, ob), "saguin_sessions_offline", 2)
}

// Checklist D.6 row 7: saguin_wills_published_total counts the Wills that
// went out by what made each due - a connection lost with no delay
// (immediate), a Will Delay Interval run out (delayed), a session that ended
// before its Will's delay (session_ended) - each cause's series appearing
// with its first, none for start.
func TestD6_7WillsPublishedCountsEachCause(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{})
	watch := watcher(t, ob.addr, codec.Version5, "wills/#")
	for _, c := range []struct {
		id      string
		delay   uint32
		session func(*codec.Connect)
	}{
		{"w-immediate", 0, nil},
		{"w-delayed", 1, freshSession(3600)},
		{"w-ended", 3600, freshSession(1)},
	} {
		w := dialRaw(t, ob.addr, codec.Version5)
		w.mustConnect(c.id, both(c.session, will("wills/"+c.id, c.id, 1, false, c.delay)))
		w.drop()
	}
	got := map[string]bool{}
	for len(got) < 3 {
		p := watch.expectPublishWithin(waitLong)
		watch.ackDelivery(p)
		got[string(p.Topic)] = true
	}
	// A subscriber can hold a Will before the broker has counted it; the
	// count is added before the "Will published" line, and the one scrape
	// the interval allows must come after all three.
	for _, id := range []string{"w-immediate", "w-delayed", "w-ended"} {
		if ob.log.wait(regexp.MustCompile(`msg="Will published" .*client_id=`+id+` `), waitLong) == "" {
			t.Fatalf("no line says %s's Will was published", id)
		}
	}
	fams := scrapeOnce(t, ob)
	wantSeries(t, fams, "saguin_wills_published_total", 1, "cause", "immediate")
	wantSeries(t, fams, "saguin_wills_published_total", 1, "cause", "delayed")
	wantSeries(t, fams, "saguin_wills_published_total", 1, "cause", "session_ended")
	if _, ok := value(fams["saguin_wills_published_total"], "cause", "start"); ok {
		t.Error(`saguin_wills_published_total{cause="start"} has a series before any Will was found owed at a start`)
	}
}

// Checklist D.6 row 8: saguin_wills_cancelled_total counts the Wills a client
// cancelled by resuming its session inside the Will Delay Interval; the
// watcher never sees it.
func TestD6_8WillsCancelledCountsASessionResumedInsideTheDelay(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{})
	watch := watcher(t, ob.addr, codec.Version5, "wills/#")
	w := dialRaw(t, ob.addr, codec.Version5)
	w.mustConnect("w-back", both(freshSession(3600), will("wills/back", "back", 1, false, 3600)))
	w.drop()
	quiet(t, ob, 1, 1)
	back := dialRaw(t, ob.addr, codec.Version5)
	back.mustConnect("w-back", session(3600))
	quiet(t, ob, 2, 0)
	if got := watch.ping(); len(got) != 0 {
		t.Fatalf("the cancelled Will went out: %s", got[0].Topic)
	}
	fams := scrapeOnce(t, ob)
	wantSeries(t, fams, "saguin_wills_cancelled_total", 1)
	wantSeries(t, fams, "saguin_wills_waiting", 0)
}

// Checklist D.6 row 9: saguin_wills_waiting is the Wills waiting out their
// Will Delay Interval - two clients gone with an hour's delay.
func TestD6_9WillsWaitingCountsWillsInTheirDelay(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{})
	for _, id := range []string{"w-1", "w-2"} {
		w := dialRaw(t, ob.addr, codec.Version5)
		w.mustConnect(id, both(freshSession(3600), will("wills/"+id, id, 1, false, 3600)))
		w.drop()
	}
	quiet(t, ob, 0, 2)
	fams := scrapeOnce(t, ob)
	wantSeries(t, fams, "saguin_wills_waiting", 2)
	wantSeries(t, fams, "saguin_wills_cancelled_total", 0)
}

// awayWithThreeOwed leaves a session subscribed to q/# at QoS 1 away and
// publishes three 10-byte messages on q/1 it is owed.
func awayWithThreeOwed(t *testing.T) *opsBroker {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{})
	away := dialRaw(t, ob.addr, codec.Version5)
	away.mustConnect("away", freshSession(3600))
	away.mustSubscribe(1, "q/#", 1)
	away.disconnect()
	quiet(t, ob, 0, 1)
	pub := dialRaw(t, ob.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	for id := uint16(1); id <= 3; id++ {
		pub.publishQoS1("q/1", []byte("0123456789"), id)
	}
	pub.disconnect()
	quiet(t, ob, 0, 1)
	return ob
}

// Checklist D.6 row 12: saguin_session_queue_messages is what the broadcast
// log holds for sessions - three messages owed to one away.
func TestD6_12SessionQueueMessagesCountsWhatAwaySessionsAreOwed(t *testing.T) {
	wantSeries(t, scrapeOnce(t, awayWithThreeOwed(t)), "saguin_session_queue_messages", 3)
}

// Checklist D.6 row 13: saguin_session_queue_bytes is those messages in
// limits.session_queue_bytes' accounting (store.RecordSize): topic and
// payload of each, a broadcast record carrying no message id and no
// headers here.
func TestD6_13SessionQueueBytesIsTheOwedMessagesSize(t *testing.T) {
	wantSeries(t, scrapeOnce(t, awayWithThreeOwed(t)), "saguin_session_queue_bytes", float64(3*(len("q/1")+10)))
}

// Checklist D.6 row 16: saguin_qos2_abandoned_total counts exactly-once
// publishes held between PUBREC and PUBREL and dropped with their session -
// here ended by a Clean Start takeover - and saguin_qos2_held lets it go.
func TestD6_16QoS2AbandonedCountsHoldsDroppedWithTheirSession(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{})
	c := dialRaw(t, ob.addr, codec.Version5)
	c.mustConnect("holder", freshSession(3600))
	c.publish("x/held", []byte("once"), 2, 1)
	if code := c.expectAck(codec.TypePubrec, 1); code != codec.Success {
		t.Fatalf("PUBREC 0x%02x", byte(code))
	}
	again := dialRaw(t, ob.addr, codec.Version5)
	again.mustConnect("holder", nil) // Clean Start 1: the held publish goes with the old session
	again.disconnect()
	quiet(t, ob, 0, 0)
	fams := scrapeOnce(t, ob)
	wantSeries(t, fams, "saguin_qos2_abandoned_total", 1)
	wantSeries(t, fams, "saguin_qos2_held", 0)
}

// Checklist D.6 row 19: saguin_session_expiry_shortened_total counts the
// CONNECTs whose Session Expiry Interval limits.max_session_expiry cut - one
// asking two hours of a one-hour cap, not the one asking ten minutes.
func TestD6_19SessionExpiryShortenedCountsCappedConnects(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{Limits: "max_session_expiry: 1h"})
	long := dialRaw(t, ob.addr, codec.Version5)
	if ack := long.mustConnect("long", freshSession(7200)); ack.Properties.SessionExpiry != 3600 {
		t.Fatalf("CONNACK Session Expiry %d, want the cap 3600", ack.Properties.SessionExpiry)
	}
	dialRaw(t, ob.addr, codec.Version5).mustConnect("short", freshSession(600))
	quiet(t, ob, 2, 0)
	fams := scrapeOnce(t, ob)
	wantSeries(t, fams, "saguin_session_expiry_shortened_total", 1)
	wantSeries(t, fams, "saguin_max_session_expiry_seconds", 3600)
}

// Checklist D.6 row 31: saguin_deliveries_dropped_total counts broadcast QoS 0
// deliveries discarded at a subscriber's bounded outbound queue - a flood
// to a subscriber that does not read. A QoS 1 marker, which is never
// dropped, comes after the flood: once the subscriber has read it, what it
// read and what was dropped add up to what was sent.
func TestD6_31DeliveriesDroppedCountsQoS0DiscardedForASlowSubscriber(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{Limits: "max_message_size: 64KiB\nsession_queue_bytes: 64KiB"})
	slow := dialRaw(t, ob.addr, codec.Version5)
	slow.mustConnect("slow", nil)
	slow.mustSubscribe(1, "flood/#", 0)
	slow.mustSubscribe(2, "mark", 1)
	pub := dialRaw(t, ob.addr, codec.Version5)
	pub.mustConnect("flooder", nil)
	const sent = 1000
	payload := make([]byte, 32<<10)
	for range sent {
		pub.publish("flood/x", payload, 0, 0)
	}
	pub.publishQoS1("mark", []byte("mark"), 1)
	read := 0
	for {
		p := slow.expectPublishWithin(waitLong)
		if string(p.Topic) == "mark" {
			break
		}
		read++
	}
	fams := scrapeOnce(t, ob)
	if read == sent {
		t.Fatal("the subscriber read the whole flood; nothing was dropped to count")
	}
	wantSeries(t, fams, "saguin_deliveries_dropped_total", float64(sent-read))
}

// Checklist D.6 row 32: saguin_deliveries_expired_total counts owed messages
// whose Message Expiry ran out before their session reached them. The
// broker's clock is its own, so a Will with a one-second delay, armed after
// the publish, is the witness that the second has passed.
func TestD6_32DeliveriesExpiredCountsOwedMessagesThatRanOut(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{})
	away := dialRaw(t, ob.addr, codec.Version5)
	away.mustConnect("away", freshSession(3600))
	away.mustSubscribe(1, "e/#", 1)
	away.disconnect()
	quiet(t, ob, 0, 1)
	pub := dialRaw(t, ob.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	p := &codec.Publish{QoS: 1, PacketID: 1, Topic: []byte("e/1"), Payload: []byte("short-lived")}
	p.Properties.MessageExpiry = 1
	p.Properties.Present.Set(codec.PropMessageExpiry)
	pub.sendPublish(p)
	if code := pub.expectAck(codec.TypePuback, 1); code != codec.Success {
		t.Fatalf("PUBACK 0x%02x", byte(code))
	}
	watch := watcher(t, ob.addr, codec.Version5, "clock")
	witness := dialRaw(t, ob.addr, codec.Version5)
	witness.mustConnect("witness", both(freshSession(60), will("clock", "tick", 1, false, 1)))
	witness.drop()
	watch.expectPublishWithin(waitLong)
	pub.publishQoS1("e/2", []byte("kept"), 2)

	back := dialRaw(t, ob.addr, codec.Version5)
	back.mustConnect("away", session(3600))
	if before := back.readUntil("kept"); len(before) != 0 {
		t.Fatalf("the expired message was delivered: %s", before[0].Payload)
	}
	wantSeries(t, scrapeOnce(t, ob), "saguin_deliveries_expired_total", 1)
}

// sharedGroupHolding leaves the one member of $share/g/s/# away and
// publishes two QoS 1 messages the group holds for it.
func sharedGroupHolding(t *testing.T) *opsBroker {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{})
	m := dialRaw(t, ob.addr, codec.Version5)
	m.mustConnect("member", freshSession(3600))
	m.mustSubscribe(1, "$share/g/s/#", 1)
	m.disconnect()
	quiet(t, ob, 0, 1)
	pub := dialRaw(t, ob.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publishQoS1("s/1", []byte("a"), 1)
	pub.publishQoS1("s/1", []byte("b"), 2)
	pub.disconnect()
	quiet(t, ob, 0, 1)
	return ob
}

// Checklist D.6 row 33: saguin_shares_held_total counts the deliveries put on
// a shared group's list at a publish no member could take - two while the
// group's one member is away.
func TestD6_33SharesHeldCountsWhatAGroupKeptForItsMembers(t *testing.T) {
	fams := scrapeOnce(t, sharedGroupHolding(t))
	wantSeries(t, fams, "saguin_shares_held_total", 2)
	wantSeries(t, fams, "saguin_shares_drained_total", 0)
}

// Checklist D.6 row 34: saguin_shares_drained_total counts the deliveries a
// group's list handed to a member - both, once the member is back.
func TestD6_34SharesDrainedCountsWhatTheGroupHandedToAMember(t *testing.T) {
	ob := sharedGroupHolding(t)
	m := dialRaw(t, ob.addr, codec.Version5)
	m.mustConnect("member", session(3600))
	for range 2 {
		m.ackDelivery(m.expectPublishWithin(waitLong))
	}
	fams := scrapeOnce(t, ob)
	wantSeries(t, fams, "saguin_shares_drained_total", 2)
	wantSeries(t, fams, "saguin_shares_held_total", 2)
}

// opsYAML is a whole configuration with an operations tcp door on loopback:
// storage is the storage block, broker extra lines under broker.
func opsYAML(storage, broker string) string {
	return saguinYAML(storage, "operations:\n  listen:\n    tcp:\n      address: 127.0.0.1:0\n"+broker)
}

// Checklist D.6 row 59: saguin_provider_max_bytes is each opened provider's
// max_bytes, 0 for none.
func TestD6_59ProviderMaxBytesIsTheConfiguredBound(t *testing.T) {
	dir := t.TempDir()
	ob := withOps(startSaguin(t, dir, opsYAML(`storage:
  default: bounded
  default_retention_period: none
  default_retention_bytes: none
  providers:
    bounded:
      type: memory
      snapshot_dir: none
      max_bytes: 64MiB
    open:
      type: memory
      snapshot_dir: none`, "session:\n  storage: bounded\nretained:\n  storage: open")))
	fams := scrapeOnce(t, ob)
	wantSeries(t, fams, "saguin_provider_max_bytes", 64<<20, "provider", "bounded")
	wantSeries(t, fams, "saguin_provider_max_bytes", 0, "provider", "open")
}

// Checklist D.6 row 63: saguin_provider_publish_commit_max_records is a
// sqlite provider's publish_commit_max_records - 256 with neither key
// written, 0 with publish_commit_interval: none, the figure where both are.
func TestD6_63ProviderPublishCommitMaxRecordsIsTheConfiguredBatch(t *testing.T) {
	dir := t.TempDir()
	ob := withOps(startSaguin(t, dir, opsYAML(`storage:
  default: plain
  default_retention_period: none
  default_retention_bytes: none
  providers:
    plain:
      type: sqlite
      file_path: $DIR/plain.db
    each:
      type: sqlite
      file_path: $DIR/each.db
      publish_commit_interval: none`, "session:\n  storage: plain\nretained:\n  storage: each")))
	fams := scrapeOnce(t, ob)
	wantSeries(t, fams, "saguin_provider_publish_commit_max_records", 256, "provider", "plain")
	wantSeries(t, fams, "saguin_provider_publish_commit_max_records", 0, "provider", "each")

	dir = t.TempDir()
	ob = withOps(startSaguin(t, dir, opsYAML(`storage:
  default: batched
  default_retention_period: none
  default_retention_bytes: none
  providers:
    batched:
      type: sqlite
      file_path: $DIR/batched.db
      publish_commit_interval: 5ms
      publish_commit_max_records: 17`, "")))
	wantSeries(t, scrapeOnce(t, ob), "saguin_provider_publish_commit_max_records", 17, "provider", "batched")
}

// Checklist D.6 rows 73-82 (RFC 0005 "The Go runtime"): the saguin_go_
// series are the runtime's own figures. GOGC and GOMEMLIMIT set in the
// broker's environment come back exactly; GOGC=off reads -1 with no
// collection but the one the start makes to count the 8 MiB heap floor;
// the live heap holds that floor, and the stack and allocation figures are a
// live process's (non-zero, and consistent with each other); no memory
// limit reads MaxInt64 as %g.
func TestD6_73to82GoRuntimeSeriesAreTheRuntimesFigures(t *testing.T) {
	start := func(env string) map[string]*dto.MetricFamily {
		dir := t.TempDir()
		path := filepath.Join(dir, "saguin.yaml")
		if err := os.WriteFile(path, []byte(opsYAML(memoryStorage, "")), 0o644); err != nil {
			t.Fatal(err)
		}
		return scrapeOnce(t, withOps(launchUnder(t, dir, path, "export "+env)))
	}
	tuned := start("GOGC=1 GOMEMLIMIT=512MiB")
	wantSeries(t, tuned, "saguin_go_gogc_percent", 1)
	wantSeries(t, tuned, "saguin_go_memory_limit_bytes", 512<<20)

	off := start("GOGC=off GOMEMLIMIT=off")
	wantSeries(t, off, "saguin_go_gogc_percent", -1)
	wantSeries(t, off, "saguin_go_memory_limit_bytes", 9.223372036854776e+18)
	// The one collection the start makes to count the heap floor is the
	// only one: with GOGC=off nothing else triggers one.
	wantSeries(t, off, "saguin_go_gc_cycles_total", 1)
	// That collection may draw assists from goroutines allocating while it
	// marks (the start's), so the assist CPU is bounded by the collector's,
	// not zero.
	offCPU, _ := value(off["saguin_go_gc_cpu_seconds_total"])
	if assist, _ := value(off["saguin_go_gc_assist_cpu_seconds_total"]); assist > offCPU {
		t.Errorf("GOGC=off: assist CPU %v above the collector's whole %v", assist, offCPU)
	}
	if v, _ := value(off["saguin_go_heap_live_bytes"]); v < 8<<20 {
		t.Errorf("saguin_go_heap_live_bytes %v under GOGC=off, want the 8 MiB heap floor at least", v)
	}

	get := func(name string) float64 { v, _ := value(tuned[name]); return v }
	if get("saguin_go_gc_cycles_total") < 1 {
		t.Errorf("saguin_go_gc_cycles_total %v under GOGC=1", get("saguin_go_gc_cycles_total"))
	}
	live, goal := get("saguin_go_heap_live_bytes"), get("saguin_go_heap_goal_bytes")
	allocated, objects := get("saguin_go_allocated_bytes_total"), get("saguin_go_allocated_objects_total")
	if live < 8<<20 || goal < live {
		t.Errorf("heap live %v, goal %v: want the 8 MiB heap floor at least, under its goal", live, goal)
	}
	if allocated < live || objects <= 0 || objects > allocated {
		t.Errorf("allocated %v bytes in %v objects against a live heap of %v", allocated, objects, live)
	}
	if get("saguin_go_stack_bytes") <= 0 {
		t.Error("saguin_go_stack_bytes is 0 in a process running goroutines")
	}
	if cpu, assist := get("saguin_go_gc_cpu_seconds_total"), get("saguin_go_gc_assist_cpu_seconds_total"); assist > cpu {
		t.Errorf("assist CPU %v above the collector's whole %v", assist, cpu)
	}
}

// Checklist D5.57 (RFC 0005 "The one alert this exists for"): the filter
// label of saguin_channel_info is the channel's filter as written, braces
// and all, and a queue's dead-letter channel carries its derived filter.
func TestD5_57ChannelInfoFilterIsAsWrittenBracesAndAll(t *testing.T) {
	dir := t.TempDir()
	ob := withOps(startSaguin(t, dir, opsYAML(memoryStorage, "")+`channels:
  plants:
    type: append
    filter: plant/{north,south}/+/events
  state:
    type: latest
    filter: state/{a,b}/#
  jobs:
    type: queue
    filter: work/+/inspect
`))
	fams := scrapeOnce(t, ob)
	wantSeries(t, fams, "saguin_channel_info", 1, "channel", "plants", "filter", "plant/{north,south}/+/events", "type", "append")
	wantSeries(t, fams, "saguin_channel_info", 1, "channel", "state", "filter", "state/{a,b}/#", "type", "latest")
	wantSeries(t, fams, "saguin_channel_info", 1, "channel", "jobs__dlq", "filter", "work/+/inspect/__dlq", "type", "append")
}

// Checklist D6.61 (RFC 0005 "The catalogue", Publishing):
// saguin_connections_refused_total counts each refusal by the code's name -
// a wrong and a missing password, a bad authentication method, a client
// identifier not valid, MQTT 3.1, and a socket beyond limits.max_connections
// answered server busy - each reason's series only once it has happened.
func TestD6_61ConnectionsRefusedCountsEachRefusalByReason(t *testing.T) {
	dir := t.TempDir()
	pw := writePasswd(t, dir, map[string]string{"device-7": "pw7"})
	ob := startOps(t, dir, opsTCP, brokerConfig{MQTT: "password_file: " + pw, Limits: "max_connections: 2"})
	refuse := func(id string, mutate func(*codec.Connect), want codec.ReasonCode) {
		t.Helper()
		if ack := dialRaw(t, ob.addr, codec.Version5).connect(id, mutate); ack.ReasonCode != want {
			t.Fatalf("%s: CONNACK 0x%02x, want 0x%02x", id, byte(ack.ReasonCode), byte(want))
		}
	}
	refuse("wrong-1", login("device-7", "wrong"), codec.BadUserNameOrPassword)
	refuse("wrong-2", login("device-7", "wrong"), codec.BadUserNameOrPassword)
	refuse("missing", nil, codec.BadUserNameOrPassword)
	refuse("method", both(login("device-7", "pw7"), func(p *codec.Connect) {
		p.Properties.AuthMethod = []byte("SCRAM-SHA-1")
		p.Properties.Present.Set(codec.PropAuthMethod)
	}), codec.BadAuthenticationMethod)
	refuse("bad\x01id", login("device-7", "pw7"), codec.ClientIdentifierNotValid)
	// MQTT 3.1 (protocol name MQIsdp, level 3) is refused 0x01 before its
	// CONNECT is read further.
	v31 := dialRaw(t, ob.addr, codec.Version311)
	v31.send([]byte{0x10, 0x0f, 0x00, 0x06, 'M', 'Q', 'I', 's', 'd', 'p', 0x03, 0x02, 0x00, 0x3c, 0x00, 0x01, 'x'})
	if ack := v31.connack(); ack.ReasonCode != codec.ConnRefusedProtocolVersion311 {
		t.Fatalf("MQTT 3.1: CONNACK 0x%02x, want 0x01", byte(ack.ReasonCode))
	}
	for _, id := range []string{"in-1", "in-2"} {
		dialRaw(t, ob.addr, codec.Version5).mustConnect(id, login("device-7", "pw7"))
	}
	refuse("busy", login("device-7", "pw7"), codec.ServerBusy)

	quiet(t, ob, 2, 0)
	fams := scrapeOnce(t, ob)
	want := map[string]float64{
		"bad user name or password":    3,
		"bad authentication method":    1,
		"client identifier not valid":  1,
		"unsupported protocol version": 1,
		"server busy":                  1,
	}
	for reason, n := range want {
		wantSeries(t, fams, "saguin_connections_refused_total", n, "reason", reason)
	}
	for _, m := range fams["saguin_connections_refused_total"].GetMetric() {
		if r := m.GetLabel()[0].GetValue(); want[r] == 0 {
			t.Errorf("saguin_connections_refused_total{reason=%q} has a series; nothing was refused so", r)
		}
	}
}

// Checklist D5.53 (RFC 0005 "What a metric is allowed to cost", "There is no
// $SYS tree"): the counts a $SYS tree would publish are kept - the
// connections, the subscriptions held - while no $SYS topic is ever
// published: a subscriber to # sees only what clients published, $SYS/# is
// refused, and a publish to $SYS/ is refused and the one refusal
// saguin_publish_refused_total does not count.
func TestD5_53SYSIsSilentAndItsCountsAreKept(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{})
	sub := dialRaw(t, ob.addr, codec.Version5)
	sub.mustConnect("everything", nil)
	sub.mustSubscribe(1, "#", 1)
	if codes := sub.subscribe(2, "$SYS/#", 1); codes[0] != codec.NotAuthorized {
		t.Fatalf("$SYS/#: SUBACK 0x%02x, want 0x87", byte(codes[0]))
	}
	pub := dialRaw(t, ob.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publish("$SYS/broker/version", []byte("forged"), 1, 1)
	if code := pub.expectPuback(1); code != codec.NotAuthorized {
		t.Fatalf("a publish to $SYS/: PUBACK 0x%02x, want 0x87", byte(code))
	}
	pub.publishQoS1("a/1", []byte("one"), 2)
	pub.publishQoS1("a/2", []byte("end"), 3)
	if got := sub.readUntil("end"); len(got) != 1 || string(got[0].Topic) != "a/1" {
		t.Fatalf("the subscriber to # read %d publishes before the last (want a/1 alone): %v", len(got), got)
	}
	fams := scrapeOnce(t, ob)
	wantSeries(t, fams, "saguin_connections", 2)
	wantSeries(t, fams, "saguin_subscriptions", 1)
	if fams["saguin_publish_refused_total"] != nil {
		t.Errorf("the $SYS publish was counted in saguin_publish_refused_total")
	}
}

// Checklist D6.63 (RFC 0005 "What a scrape looks like"): the samples are
// written as the RFC's example scrape writes them - an integer series as an
// integer (30 days of max_session_expiry as 2592000), uptime as a float, the
// runtime's byte figures in %g (the heap floor puts the live heap past a
// million, where %g turns to an exponent), no memory limit as
// 9.223372036854776e+18 and GOGC as the integer 100.
func TestD6_63SamplesAreWrittenAsTheRFCsScrape(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "saguin.yaml")
	if err := os.WriteFile(path, []byte(opsYAML(memoryStorage, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	ob := withOps(launchUnder(t, dir, path, "unset GOGC GOMEMLIMIT"))
	_, body := ob.get(t, "GET", "/metrics")
	for _, re := range []string{
		`saguin_max_session_expiry_seconds 2592000`,
		`saguin_connections_total 0`,
		`saguin_uptime_seconds \d+\.\d+`,
		`saguin_go_heap_live_bytes \d(\.\d+)?e\+0[67]`,
		`saguin_go_memory_limit_bytes 9\.223372036854776e\+18`,
		`saguin_go_gogc_percent 100`,
		`saguin_go_gc_cycles_total [1-9]\d*`,
	} {
		if !regexp.MustCompile(`(?m)^` + re + `$`).MatchString(body) {
			t.Errorf("no line %s in the scrape:\n%s", re, body)
		}
	}
}

// Checklist D6.59 (RFC 0005 "The catalogue", Queues): the queue identity
// holds exactly - delivered = acknowledged + returned + redelivered +
// dead_lettered + inflight. Three jobs, retry.max_attempts 2 and a one-second
// visibility timeout: one acknowledged; one returned, then returned at its
// last attempt and dead-lettered (which wins over returned); one held past
// its lease and redelivered, then held again and left with the worker.
func TestD6_59QueueDeliveredIsEveryOutcomePlusInflight(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{Channels: "jobs:\n  type: queue\n  filter: work/+/inspect\n  visibility_timeout: 1s\n  retry:\n    max_attempts: 2"})
	w := queueWorker(t, ob.addr, "w1")
	pub := queueProducer(t, ob.addr)
	for i, job := range []string{"ack", "return", "hold"} {
		pub.publishQoS1("work/"+job+"/inspect", []byte(job), uint16(i+1))
	}
	held := 0
	for held < 2 {
		o := w.takeOffer()
		switch string(o.Payload) {
		case "ack":
			w.answer(o, "ack")
		case "return":
			w.answer(o, "return")
		case "hold":
			held++ // the first lease runs out and redelivers; the second stays
		}
	}
	// Settled: the held job leased again, nothing else unresolved.
	var body string
	for deadline := time.Now().Add(waitLong); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		_, body = ob.get(t, "GET", "/v1/operations/queues/jobs")
		if strings.Contains(body, `"unresolved":1,`) && strings.Contains(body, `"state":"leased"`) {
			break
		}
	}
	if !strings.Contains(body, `"unresolved":1,`) || !strings.Contains(body, `"state":"leased"`) {
		t.Fatalf("the queue never settled on the held job alone: %s", body)
	}
	fams := scrapeOnce(t, ob)
	get := func(name string) float64 { v, _ := value(fams[name], "channel", "jobs"); return v }
	want := map[string]float64{"saguin_queue_delivered_total": 5, "saguin_queue_acknowledged_total": 1, "saguin_queue_returned_total": 1,
		"saguin_queue_redelivered_total": 1, "saguin_queue_dead_lettered_total": 1, "saguin_queue_inflight": 1}
	for name, n := range want {
		if got := get(name); got != n {
			t.Errorf("%s = %v, want %v", name, got, n)
		}
	}
	if d, sum := get("saguin_queue_delivered_total"), get("saguin_queue_acknowledged_total")+get("saguin_queue_returned_total")+
		get("saguin_queue_redelivered_total")+get("saguin_queue_dead_lettered_total")+get("saguin_queue_inflight"); d != sum {
		t.Errorf("delivered %v, the outcomes and inflight sum to %v", d, sum)
	}
}

// Checklist D.6 row 5: saguin_connections_total counts the connections
// accepted since start - three that came and went, the one still here; a
// refused CONNECT is not one.
func TestD6_5ConnectionsTotalCountsAcceptedConnections(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{})
	for i := range 3 {
		c := dialRaw(t, ob.addr, codec.Version5)
		c.mustConnect(fmt.Sprintf("came-%d", i), nil)
		c.disconnect()
	}
	dialRaw(t, ob.addr, codec.Version5).mustConnect("here", nil)
	if ack := dialRaw(t, ob.addr, codec.Version5).connect("bad\x01id", nil); ack.ReasonCode != codec.ClientIdentifierNotValid {
		t.Fatalf("CONNACK 0x%02x, want 0x85", byte(ack.ReasonCode))
	}
	quiet(t, ob, 1, 0)
	fams := scrapeOnce(t, ob)
	wantSeries(t, fams, "saguin_connections_total", 4)
	wantSeries(t, fams, "saguin_connections", 1)
}

// Checklist D.6 row 14: saguin_retained_messages is what Sagüin's own retained
// store holds - three topics retained, one of them cleared by an empty
// payload.
func TestD6_14RetainedMessagesCountsTheRetainedStore(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{})
	c := dialRaw(t, ob.addr, codec.Version5)
	c.mustConnect("retainer", nil)
	for i, r := range []struct{ topic, payload string }{{"r/1", "a"}, {"r/2", "b"}, {"r/3", "c"}, {"r/2", ""}} {
		if code := c.publishAs(&codec.Publish{Retain: true, Topic: []byte(r.topic), Payload: []byte(r.payload)}, uint16(i+1)); code != codec.Success {
			t.Fatalf("retained publish on %s: PUBACK 0x%02x", r.topic, byte(code))
		}
	}
	wantSeries(t, scrapeOnce(t, ob), "saguin_retained_messages", 2)
}

// Checklist D.6 rows 15 and 17: saguin_qos2_held is the exactly-once
// publishes between PUBREC and PUBREL - two held, one released - and
// saguin_qos2_max_inflight_per_client the configured
// broker.qos2.max_inflight_per_client.
func TestD6_15And17QoS2HeldAndItsConfiguredBound(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{Broker: "qos2:\n  max_inflight_per_client: 7"})
	c := dialRaw(t, ob.addr, codec.Version5)
	c.mustConnect("holder", nil)
	for id := uint16(1); id <= 3; id++ {
		c.publish("x/held", []byte("once"), 2, id)
		if code := c.expectAck(codec.TypePubrec, id); code != codec.Success {
			t.Fatalf("PUBREC 0x%02x", byte(code))
		}
	}
	c.sendAck(codec.TypePubrel, 3)
	if code := c.expectAck(codec.TypePubcomp, 3); code != codec.Success {
		t.Fatalf("PUBCOMP 0x%02x", byte(code))
	}
	fams := scrapeOnce(t, ob)
	wantSeries(t, fams, "saguin_qos2_held", 2)
	wantSeries(t, fams, "saguin_qos2_max_inflight_per_client", 7)
}

// Checklist D.6 row 60: saguin_storage_errors_total has no series until a
// provider fails, then counts the failures on the provider they came from.
// Another process holds the sqlite database's write lock past the broker's
// five-second busy timeout, so the write behind a message owed to an away
// session fails: the publish is refused 0x83 and counted so, the failure
// logged at ERROR and counted on that provider and no other.
func TestD6_60StorageErrorsAppearsWithAProvidersFirstFailure(t *testing.T) {
	tool := needTool(t, "sqlite3")
	dir := t.TempDir()
	ob := withOps(startSaguin(t, dir, opsYAML(`storage:
  default: db
  default_retention_period: none
  default_retention_bytes: none
  providers:
    db:
      type: sqlite
      file_path: $DIR/saguin.db
    mem:
      type: memory
      snapshot_dir: none`, "retained:\n  storage: mem")))
	away := dialRaw(t, ob.addr, codec.Version5)
	away.mustConnect("away", freshSession(3600))
	away.mustSubscribe(1, "owed/#", 1)
	away.disconnect()
	pub := dialRaw(t, ob.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	quiet(t, ob, 1, 1)

	// sqlite3 takes the write lock and holds it until its input ends.
	holder := exec.Command(tool, filepath.Join(dir, "saguin.db"))
	in, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); holder.Wait() }()
	fmt.Fprintln(in, "BEGIN IMMEDIATE; SELECT 'locked';")
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || strings.TrimSpace(line) != "locked" {
		t.Fatalf("sqlite3 did not take the lock: %q %v", line, err)
	}
	pub.publish("owed/1", []byte("v"), 1, 1)
	// Answered once the write has failed: refused, not acknowledged (RFC
	// 0002: 0x83, the broadcast log could not keep the record).
	h, body, err := pub.next(3 * waitLong)
	if err != nil || h.Type != codec.TypePuback {
		t.Fatalf("no PUBACK while the store was locked: %v %v", h.Type, err)
	}
	var ack codec.Ack
	if err := ack.Decode(h, body, codec.Version5); err != nil || ack.ReasonCode != codec.ImplementationSpecificError {
		t.Fatalf("PUBACK 0x%02x (%v) for a message the broadcast log could not keep, want 0x83", byte(ack.ReasonCode), err)
	}
	if ob.log.wait(regexp.MustCompile(`level=ERROR msg="session store failed" .*database is locked`), waitLong) == "" {
		t.Fatal("no ERROR line for the failed write")
	}
	fams := scrapeOnce(t, ob)
	if v, ok := value(fams["saguin_storage_errors_total"], "provider", "db"); !ok || v < 1 {
		t.Errorf(`saguin_storage_errors_total{provider="db"} = %v (present %v), want the failure counted`, v, ok)
	}
	if _, ok := value(fams["saguin_storage_errors_total"], "provider", "mem"); ok {
		t.Error(`saguin_storage_errors_total{provider="mem"} has a series; that provider never failed`)
	}
	wantSeries(t, fams, "saguin_publish_refused_total", 1, "reason", "implementation specific error")
}

// Checklist D.6 row 58: saguin_provider_bytes is what each provider holds -
// the one keeping the retained store holds a 10 KiB retained value (its
// record's topic and payload, and little else), the one keeping the sessions
// of clients that keep none holds nothing.
func TestD6_58ProviderBytesIsWhatEachProviderHolds(t *testing.T) {
	dir := t.TempDir()
	ob := withOps(startSaguin(t, dir, opsYAML(`storage:
  default: sessions
  default_retention_period: none
  default_retention_bytes: none
  providers:
    sessions:
      type: memory
      snapshot_dir: none
    values:
      type: memory
      snapshot_dir: none`, "session:\n  storage: sessions\nretained:\n  storage: values")))
	c := dialRaw(t, ob.addr, codec.Version5)
	c.mustConnect("retainer", nil)
	if code := c.publishAs(&codec.Publish{Retain: true, Topic: []byte("r/big"), Payload: make([]byte, 10<<10)}, 1); code != codec.Success {
		t.Fatalf("PUBACK 0x%02x", byte(code))
	}
	fams := scrapeOnce(t, ob)
	if v, _ := value(fams["saguin_provider_bytes"], "provider", "values"); v < 10<<10 || v > 11<<10 {
		t.Errorf(`saguin_provider_bytes{provider="values"} = %v, want the 10 KiB value and little else`, v)
	}
	wantSeries(t, fams, "saguin_provider_bytes", 0, "provider", "sessions")
}

// Checklist D.6 row 55 (RFC 0005 "The catalogue", queue): a job past
// job_expires_after is dead-lettered "expired" and counted in
// saguin_queue_expired_total, and in saguin_queue_dead_lettered_total beside it.
func TestD6_55QueueExpiredCountsAnExpiredJob(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP+"\nmin_scrape_interval: 60s", brokerConfig{
		Channels: "jobs:\n  type: queue\n  filter: work/+/inspect\n  visibility_timeout: 1s\n  job_expires_after: 2s"})
	queueProducer(t, ob.addr).publishQoS1("work/1/inspect", []byte("nobody takes me"), 1)
	if ob.log.wait(regexp.MustCompile(`queue: dead-lettered.*reason=expired`), waitLong) == "" {
		t.Fatal("the job was not dead-lettered as expired")
	}
	fams := scrapeOnce(t, ob)
	for _, name := range []string{"saguin_queue_expired_total", "saguin_queue_dead_lettered_total"} {
		if v, ok := value(fams[name], "channel", "jobs"); !ok || v != 1 {
			t.Errorf(`%s{channel="jobs"} = %v (present %v), want 1`, name, v, ok)
		}
	}
}
