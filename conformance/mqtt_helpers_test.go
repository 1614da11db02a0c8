package conformance

// Helpers for the issue 6 tests (mqtt_*_test.go): a second broker to compare
// with (-peer mosquitto), a broker started on a configuration written whole
// (for the storage providers the default harness does not name), restarts,
// and the raw-client steps those tests repeat.
//
// Naming: a test whose name starts TestMqtt holds a rule any correct MQTT
// broker keeps, and runs against Mosquitto too:
//
//	go test ./conformance -run Mqtt -peer mosquitto
//
// Every other test in these files holds a rule Sagüin's spec makes stricter
// than MQTT (or a Sagüin configuration key), says why, and skips under -peer
// or -broker.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

var peerFlag = flag.String("peer", "", `"mosquitto": run the TestMqtt* tests against a Mosquitto started for each test instead of saguin`)

// mqttTarget is the address a plain-MQTT test aims at: a fresh Mosquitto
// under -peer mosquitto, the -broker address, or saguin on the default test
// configuration.
func mqttTarget(t testing.TB) string {
	t.Helper()
	switch *peerFlag {
	case "":
		return target(t)
	case "mosquitto":
		return startMosquitto(t)
	default:
		t.Fatalf("-peer %q: only mosquitto is known", *peerFlag)
		return ""
	}
}

// saguinOnly skips a test that holds a rule of Sagüin's spec rather than of
// MQTT when another broker is the target; why says where they part.
func saguinOnly(t testing.TB, why string) {
	t.Helper()
	if *peerFlag != "" || *brokerFlag != "" {
		t.Skip("Sagüin's spec only: " + why)
	}
}

// startMosquitto runs /usr/sbin/mosquitto on a free loopback port with a
// temporary configuration and no persistence, and returns its address.
func startMosquitto(t testing.TB) string {
	t.Helper()
	return startMosquittoWith(t, "allow_anonymous true\n")
}

// startMosquittoWith is startMosquitto with conf's lines instead of
// allow_anonymous true. It runs as whoever runs the test (user), so that a
// root run can still read files in the test's directory.
func startMosquittoWith(t testing.TB, conf string) string {
	t.Helper()
	bin := "/usr/sbin/mosquitto"
	if _, err := os.Stat(bin); err != nil {
		p, lerr := exec.LookPath("mosquitto")
		if lerr != nil {
			t.Skip("mosquitto is not installed (make test-deps)")
		}
		bin = p
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port := hostPort(t, addr)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mosquitto.conf")
	body := fmt.Sprintf("listener %s 127.0.0.1\n%spersistence false\nlog_dest stdout\nlog_type all\n", port, conf)
	if os.Getuid() == 0 {
		body += "user root\n"
	}
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", cfg)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("mosquitto output:\n%s", out.String())
		}
	})
	deadline := time.Now().Add(waitLong)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return addr
		}
		select {
		case <-done:
			t.Fatalf("mosquitto exited: %s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("mosquitto did not open %s: %v", addr, err)
		}
	}
}

// uniq is a topic prefix no other test (nor an earlier run against a shared
// -broker) has used, so retained values never leak between tests.
func uniq(t testing.TB) string {
	var b [4]byte
	rand.Read(b[:])
	name := regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "-")
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	return "c6/" + name + "-" + hex.EncodeToString(b[:])
}

// clientID is a client id unique to the test, short enough for every limit.
func clientID(t testing.TB, role string) string {
	var b [3]byte
	rand.Read(b[:])
	return role + "-" + hex.EncodeToString(b[:])
}

// --- a saguin started on a configuration written whole -----------------

// saguinYAML is a whole configuration: one tcp door on a free port, the
// storage block given, and extra lines under broker (limits, session,
// retained, qos2, share ...). $DIR is the test's directory.
func saguinYAML(storage, broker string) string {
	indent := func(s string) string {
		var b strings.Builder
		for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
			if line != "" {
				b.WriteString("  " + strings.TrimRight(line, " ") + "\n")
			}
		}
		return b.String()
	}
	return "broker:\n  id: conformance6\n  log_level: debug\n" +
		"  mqtt:\n    listen:\n      tcp:\n        address: 127.0.0.1:0\n" +
		indent(storage) + indent(broker)
}

// memoryStorage is a memory provider with no snapshot (the default harness's).
const memoryStorage = `storage:
  default: mem
  default_retention_period: none
  default_retention_bytes: none
  providers:
    mem:
      type: memory
      snapshot_dir: none`

// snapshotStorage is a memory provider keeping its snapshot in $DIR/snap.
const snapshotStorage = `storage:
  default: mem
  default_retention_period: none
  default_retention_bytes: none
  providers:
    mem:
      type: memory
      snapshot_dir: $DIR/snap`

// sqliteStorage is one sqlite provider at $DIR/saguin.db holding everything.
const sqliteStorage = `storage:
  default: db
  default_retention_period: none
  default_retention_bytes: none
  providers:
    db:
      type: sqlite
      file_path: $DIR/saguin.db`

// startSaguin runs saguin on the configuration yaml in dir (reused across a
// restart) and waits for its tcp door. It skips under -peer and -broker.
func startSaguin(t testing.TB, dir, yaml string) *brokerProc {
	t.Helper()
	saguinOnly(t, "the test needs a saguin started on its own configuration")
	if err := os.MkdirAll(filepath.Join(dir, "snap"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "saguin.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(yaml, "$DIR", dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	b := launch(t, dir, path)
	if b.addr == "" {
		t.Fatalf("no listening line:\n%s", b.log)
	}
	return b
}

// kill9 ends the broker the way a power cut does.
func (b *brokerProc) kill9() {
	b.t.Helper()
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		b.t.Fatal(err)
	}
	<-b.done
}

// stop ends the broker gracefully and waits for a clean exit.
func (b *brokerProc) stop() {
	b.t.Helper()
	b.signal(syscall.SIGTERM)
	if code := b.waitExit(waitLong); code != 0 {
		b.t.Fatalf("exit code %d after SIGTERM", code)
	}
}

// --- raw client steps ---------------------------------------------------

// session asks for a session that outlives the connection: Clean Start 0
// and, on MQTT 5, a Session Expiry Interval of secs.
func session(secs uint32) func(*codec.Connect) {
	return func(c *codec.Connect) {
		c.CleanStart = false
		if c.Version == codec.Version5 {
			c.Properties.SessionExpiry = secs
			c.Properties.Present.Set(codec.PropSessionExpiry)
		}
	}
}

// freshSession asks for a new session that outlives the connection: Clean
// Start 1 with an expiry on MQTT 5; 3.1.1 cannot ask for both, so it sends
// cleanSession 0 (tests using it start from a client id never seen).
func freshSession(secs uint32) func(*codec.Connect) {
	return func(c *codec.Connect) {
		c.CleanStart = true
		if c.Version == codec.Version5 {
			c.Properties.SessionExpiry = secs
			c.Properties.Present.Set(codec.PropSessionExpiry)
		} else {
			c.CleanStart = false
		}
	}
}

// both applies several CONNECT mutations in order.
func both(fs ...func(*codec.Connect)) func(*codec.Connect) {
	return func(c *codec.Connect) {
		for _, f := range fs {
			if f != nil {
				f(c)
			}
		}
	}
}

// subscribeWith sends one SUBSCRIBE and returns its SUBACK.
func (c *raw) subscribeWith(id uint16, props func(*codec.Properties), subs ...codec.Subscription) *codec.Suback {
	c.t.Helper()
	s := &codec.Subscribe{PacketID: id, Subscriptions: subs}
	if props != nil {
		props(&s.Properties)
	}
	c.send(s.Append(nil, c.version))
	h, body := c.read()
	if h.Type != codec.TypeSuback {
		c.t.Fatalf("want SUBACK, got %s (RFC 0003: the SUBACK comes first)", h.Type)
	}
	var ack codec.Suback
	if err := ack.Decode(h, body, c.version); err != nil {
		c.t.Fatal(err)
	}
	if ack.PacketID != id {
		c.t.Fatalf("SUBACK for %d, want %d", ack.PacketID, id)
	}
	return &ack
}

// mustSubscribe subscribes and fails unless filter is granted at qos.
func (c *raw) mustSubscribe(id uint16, filter string, qos byte) {
	c.t.Helper()
	if got := c.subscribe(id, filter, qos); len(got) != 1 || got[0] != codec.ReasonCode(qos) {
		c.t.Fatalf("SUBACK %v for %s, want granted QoS %d", got, filter, qos)
	}
}

// sendPublish writes p on c's protocol.
func (c *raw) sendPublish(p *codec.Publish) {
	c.t.Helper()
	c.send(p.Append(nil, c.version))
}

// sendAck writes a PUBACK, PUBREC, PUBREL or PUBCOMP for id.
func (c *raw) sendAck(typ codec.Type, id uint16) {
	c.t.Helper()
	c.send((&codec.Ack{Type: typ, PacketID: id}).Append(nil, c.version))
}

// expectAck reads the next packet as typ for id and returns its reason code.
func (c *raw) expectAck(typ codec.Type, id uint16) codec.ReasonCode {
	c.t.Helper()
	return c.expectAckPacket(typ, id).ReasonCode
}

// expectAckPacket is expectAck returning the whole acknowledgement, for its
// properties (a Reason String).
func (c *raw) expectAckPacket(typ codec.Type, id uint16) *codec.Ack {
	c.t.Helper()
	h, body := c.read()
	if h.Type != typ {
		c.t.Fatalf("want %s for %d, got %s", typ, id, h.Type)
	}
	var a codec.Ack
	if err := a.Decode(h, body, c.version); err != nil {
		c.t.Fatal(err)
	}
	if a.PacketID != id {
		c.t.Fatalf("%s for %d, want %d", typ, a.PacketID, id)
	}
	return &a
}

// publishQoS1 publishes at QoS 1 and fails unless the PUBACK is a success
// code (below 0x80: Mosquitto answers 0x10 where nobody is subscribed).
func (c *raw) publishQoS1(topic string, payload []byte, id uint16) {
	c.t.Helper()
	c.publish(topic, payload, 1, id)
	if code := c.expectAck(codec.TypePuback, id); code >= 0x80 {
		c.t.Fatalf("PUBACK 0x%02x for %s, want success", byte(code), topic)
	}
}

// publishQoS2 completes a whole exactly-once exchange.
func (c *raw) publishQoS2(topic string, payload []byte, id uint16) {
	c.t.Helper()
	c.publish(topic, payload, 2, id)
	if code := c.expectAck(codec.TypePubrec, id); code >= 0x80 {
		c.t.Fatalf("PUBREC 0x%02x for %s, want success", byte(code), topic)
	}
	c.sendAck(codec.TypePubrel, id)
	if code := c.expectAck(codec.TypePubcomp, id); code != codec.Success {
		c.t.Fatalf("PUBCOMP 0x%02x, want 0x00", byte(code))
	}
}

// ping sends PINGREQ and reads up to the PINGRESP, returning every PUBLISH
// that came before it. Anything the broker queued for c before it read the
// PINGREQ is written ahead of the PINGRESP, so an empty result shows nothing
// was owed then.
func (c *raw) ping() []*codec.Publish {
	c.t.Helper()
	c.send([]byte{0xC0, 0})
	var got []*codec.Publish
	for {
		h, body := c.read()
		switch h.Type {
		case codec.TypePingresp:
			return got
		case codec.TypePublish:
			var p codec.Publish
			if err := p.Decode(h, body, c.version); err != nil {
				c.t.Fatal(err)
			}
			got = append(got, &p)
		default:
			c.t.Fatalf("want PUBLISH or PINGRESP, got %s", h.Type)
		}
	}
}

// expectNothing fails if any PUBLISH is owed to c now.
func (c *raw) expectNothing(why string) {
	c.t.Helper()
	if got := c.ping(); len(got) != 0 {
		c.t.Fatalf("%s: got %d PUBLISH (first %q on %s), want none", why, len(got), got[0].Payload, got[0].Topic)
	}
}

// expectPublishWithin reads the next PUBLISH, waiting at most d.
func (c *raw) expectPublishWithin(d time.Duration) *codec.Publish {
	c.t.Helper()
	h, body, err := c.next(d)
	if err != nil {
		c.t.Fatalf("no PUBLISH within %s: %v", d, err)
	}
	if h.Type != codec.TypePublish {
		c.t.Fatalf("want PUBLISH, got %s", h.Type)
	}
	var p codec.Publish
	if err := p.Decode(h, body, c.version); err != nil {
		c.t.Fatal(err)
	}
	return &p
}

// quietFor waits d and fails if any packet arrives meanwhile: for rules
// whose subject is time (a Will Delay, an expiry), the only way to see that
// something did not happen yet.
func (c *raw) quietFor(d time.Duration, why string) {
	c.t.Helper()
	h, _, err := c.next(d)
	if err == nil {
		c.t.Fatalf("%s: got %s, want nothing for %s", why, h.Type, d)
	}
	var ne net.Error
	if !(errors.As(err, &ne) && ne.Timeout()) {
		c.t.Fatalf("%s: %v", why, err)
	}
}

// resume connects id again with a session of secs and fails unless the
// broker kept its session (Session Present 1).
func resume(t testing.TB, addr string, v byte, id string, secs uint32) *raw {
	t.Helper()
	c := dialRaw(t, addr, v)
	if ack := c.mustConnect(id, session(secs)); !ack.SessionPresent {
		t.Fatalf("%s: the session did not resume", id)
	}
	return c
}

// leave ends c's connection once the broker has answered everything sent
// before (the PINGRESP), so a kept session holds all of it.
func (c *raw) leave() {
	c.t.Helper()
	c.ping()
	c.disconnect()
}

// disconnect sends a normal DISCONNECT and waits for the close.
func (c *raw) disconnect() {
	c.t.Helper()
	c.send((&codec.Disconnect{}).Append(nil, c.version))
	c.expectClosed()
}

// drop closes the socket without a DISCONNECT, as a device losing its link.
func (c *raw) drop() {
	c.nc.Close()
}

// userProps lists a packet's User Properties as key=value.
func userProps(p *codec.Properties) []string {
	var out []string
	for _, u := range p.User {
		out = append(out, string(u.Key)+"="+string(u.Value))
	}
	return out
}

// ackDelivery acknowledges a QoS 1 delivery (a QoS 0 one needs nothing).
func (c *raw) ackDelivery(p *codec.Publish) {
	c.t.Helper()
	if p.QoS == 1 {
		c.sendAck(codec.TypePuback, p.PacketID)
	}
}

// readUntil reads what the broker sends c, completing each exchange as a
// client would (PUBACK, PUBREC, PUBCOMP), until a PUBLISH carrying marker
// arrives, and returns the PUBLISHes before it. A publisher's messages reach
// a subscriber in order, so publishing marker last bounds a count without
// waiting on a clock.
func (c *raw) readUntil(marker string) []*codec.Publish {
	c.t.Helper()
	var got []*codec.Publish
	for {
		h, body := c.read()
		switch h.Type {
		case codec.TypePublish:
			var p codec.Publish
			if err := p.Decode(h, body, c.version); err != nil {
				c.t.Fatal(err)
			}
			switch p.QoS {
			case 1:
				c.sendAck(codec.TypePuback, p.PacketID)
			case 2:
				c.sendAck(codec.TypePubrec, p.PacketID)
			}
			if string(p.Payload) == marker {
				return got
			}
			got = append(got, &p)
		case codec.TypePubrel:
			var a codec.Ack
			if err := a.Decode(h, body, c.version); err != nil {
				c.t.Fatal(err)
			}
			c.sendAck(codec.TypePubcomp, a.PacketID)
		default:
			c.t.Fatalf("want PUBLISH or PUBREL, got %s", h.Type)
		}
	}
}

// collect reads PUBLISHes (acknowledging QoS 1) until n have arrived or the
// wait ends, then anything already queued behind them: for what a SUBSCRIBE
// earns, whose order against live publishes no rule fixes.
func (c *raw) collect(n int) []*codec.Publish {
	c.t.Helper()
	var got []*codec.Publish
	deadline := time.Now().Add(waitLong)
	for len(got) < n {
		h, body, err := c.next(time.Until(deadline))
		if err != nil {
			break
		}
		if h.Type != codec.TypePublish {
			c.t.Fatalf("want PUBLISH, got %s", h.Type)
		}
		var p codec.Publish
		if err := p.Decode(h, body, c.version); err != nil {
			c.t.Fatal(err)
		}
		c.ackDelivery(&p)
		got = append(got, &p)
	}
	return append(got, c.ping()...)
}

// keptSubscriber connects a session kept 60 s after its connection, named
// from prefix, subscribed to topic/# at qos on the broker under test, and a
// publisher beside it: the opening of every resume test.
func keptSubscriber(t *testing.T, v byte, prefix string, qos byte) (addr, topic, id string, sub, pub *raw) {
	t.Helper()
	addr = mqttTarget(t)
	topic = uniq(t)
	id = clientID(t, prefix)
	sub = dialRaw(t, addr, v)
	sub.mustConnect(id, freshSession(60))
	sub.mustSubscribe(1, topic+"/#", qos)
	pub = dialRaw(t, addr, v)
	pub.mustConnect(clientID(t, "pub"), nil)
	return addr, topic, id, sub, pub
}
