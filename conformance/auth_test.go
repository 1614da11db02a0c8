package conformance

import (
	"fmt"
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

// The users every authentication test's password file holds, written by
// Debian's mosquitto_passwd so the hashes are the ones a migration brings.
var authUsers = map[string]string{"device-7": "pw7", "dashboard": "pwd", "sensor-1": "pws", "oncall": "pwo", "north": "pwn"}

// authACL is the acl_file the tests run under: one role per rule a test
// shows.
const authACL = `roles:
  device:
    - topic: iot/%u/#
      allow: [write, read]
  reader:
    - topic: alerts/#
      allow: [read]
  sensor:
    - topic: s/#
      allow: [write, read]
    - broker: features
      deny: [persistent, will, share, retained, qos2]
  on-call:
    - broker: sessions
      allow: [disconnect]
    - topic: "#"
      allow: [write, read]
  cohort:
    - topic: c/#
      allow: [write]
users:
  "device-*": [device]
  dashboard: [reader]
  sensor-1: [sensor]
  oncall: [on-call]
  north:
    roles: [cohort]
    client_ids: "north-*"
`

// writePasswd writes users with mosquitto_passwd (-H sha512-pbkdf2, its
// default) into dir/clients.passwd.
func writePasswd(t testing.TB, dir string, users map[string]string) string {
	t.Helper()
	bin, err := exec.LookPath("mosquitto_passwd")
	if err != nil {
		t.Skip("mosquitto_passwd is not installed (scripts/install-test-deps.sh)")
	}
	path := filepath.Join(dir, "clients.passwd")
	first := true
	for u, p := range users {
		args := []string{"-b", path, u, p}
		if first {
			args = append([]string{"-c"}, args...)
			first = false
		}
		if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
			t.Fatalf("mosquitto_passwd: %v %s", err, out)
		}
	}
	return path
}

// authBroker starts saguin with a password file and, when acl is not "",
// an acl_file holding it.
func authBroker(t *testing.T, acl string, mqtt string) *brokerProc {
	t.Helper()
	saguinOnly(t, "the test needs a saguin started with its own password file")
	dir := t.TempDir()
	pw := writePasswd(t, dir, authUsers)
	keys := "password_file: " + pw + "\n" + mqtt
	if acl != "" {
		os.WriteFile(filepath.Join(dir, "acl.yaml"), []byte(acl), 0o600)
		keys += "\nacl_file: " + filepath.Join(dir, "acl.yaml")
	}
	return startBrokerIn(t, dir, brokerConfig{MQTT: keys})
}

func login(user, pass string) func(*codec.Connect) {
	return func(c *codec.Connect) {
		c.UsernameFlag, c.Username = true, []byte(user)
		if pass != "" {
			c.PasswordFlag, c.Password = true, []byte(pass)
		}
	}
}

func refusedCode(v byte, code5, code311 codec.ReasonCode) codec.ReasonCode {
	if v == codec.Version5 {
		return code5
	}
	return code311
}

// RFC 0002 "Who may connect": a wrong credential and a missing one are
// both 0x86 (3.1.1 0x04); the log says which.
func TestWrongAndMissingCredentialsAreBothBadUserNameOrPassword(t *testing.T) {
	b := authBroker(t, "", "")
	versions(t, func(t *testing.T, v byte) {
		for _, tc := range []struct {
			name  string
			login func(*codec.Connect)
			log   string
		}{
			{"wrong password", login("device-7", "nope"), "wrong password"},
			{"unknown user", login("nobody", "pw7"), "no such user"},
			{"no user name", nil, "no user name"},
		} {
			c := dialRaw(t, b.addr, v)
			id := clientID(t, strings.ReplaceAll(tc.name, " ", "-"))
			ack := c.connect(id, tc.login)
			if want := refusedCode(v, codec.BadUserNameOrPassword, codec.ConnRefusedBadUserNamePassword); ack.ReasonCode != want {
				t.Errorf("%s: CONNACK 0x%02x, want 0x%02x", tc.name, byte(ack.ReasonCode), byte(want))
			}
			if b.log.wait(regexp.MustCompile(`client_id=`+regexp.QuoteMeta(id)+`.*why="`+tc.log), waitLong) == "" {
				t.Errorf("%s: no refusal line for %s saying why=%q", tc.name, id, tc.log)
			}
		}
		c := dialRaw(t, b.addr, v)
		c.mustConnect(clientID(t, "right"), login("device-7", "pw7"))
	})
}

// mosquitto_pub and mosquitto_sub with -u/-P against a file mosquitto_passwd
// wrote: the migration path.
func TestMosquittoClientsAuthenticateWithAMosquittoPasswordFile(t *testing.T) {
	b := authBroker(t, "", "")
	pub, err := exec.LookPath("mosquitto_pub")
	if err != nil {
		t.Skip("mosquitto_pub is not installed")
	}
	host, port := hostPort(t, b.addr)
	if out, err := exec.Command(pub, "-h", host, "-p", port, "-u", "dashboard", "-P", "pwd", "-t", "a/b", "-m", "x", "-q", "1").CombinedOutput(); err != nil {
		t.Fatalf("right password refused: %v %s", err, out)
	}
	if out, err := exec.Command(pub, "-h", host, "-p", port, "-u", "dashboard", "-P", "bad", "-t", "a/b", "-m", "x").CombinedOutput(); err == nil {
		t.Fatalf("wrong password admitted: %s", out)
	}
}

// RFC 0002 "What a refused client sees": a publish the acl_file does not
// grant is 0x87 on the PUBACK; a 3.1.1 connection is closed.
func TestPublishNotAuthorizedIsPubackNotAuthorized(t *testing.T) {
	b := authBroker(t, authACL, "")
	versions(t, func(t *testing.T, v byte) {
		c := dialRaw(t, b.addr, v)
		c.mustConnect(clientID(t, "dev"), login("device-7", "pw7"))
		c.publish("iot/device-7/t", []byte("ok"), 1, 1)
		if code := c.expectPuback(1); code != codec.Success {
			t.Fatalf("own topic: 0x%02x", byte(code))
		}
		c.publish("iot/device-8/t", []byte("no"), 1, 2)
		if v == codec.Version5 {
			if code := c.expectPuback(2); code != codec.NotAuthorized {
				t.Fatalf("another device's topic: PUBACK 0x%02x, want 0x87", byte(code))
			}
			return
		}
		c.expectClosed()
	})
}

// A subscription is granted whole or refused: 0x87 per filter (3.1.1 0x80),
// the connection kept.
func TestSubscribeNotAuthorizedIsSubackNotAuthorized(t *testing.T) {
	b := authBroker(t, authACL, "")
	versions(t, func(t *testing.T, v byte) {
		c := dialRaw(t, b.addr, v)
		c.mustConnect(clientID(t, "dash"), login("dashboard", "pwd"))
		want := refusedCode(v, codec.NotAuthorized, codec.SubackFailure311)
		if got := c.subscribe(1, "iot/#", 1); got[0] != want {
			t.Fatalf("SUBACK 0x%02x, want 0x%02x", byte(got[0]), byte(want))
		}
		if got := c.subscribe(2, "alerts/#", 1); got[0] != 1 {
			t.Fatalf("granted filter: SUBACK 0x%02x", byte(got[0]))
		}
	})
}

// A Will on a topic the client may not publish to is refused 0x87 at
// CONNECT (3.1.1 0x05), before any session is made.
func TestWillNotAuthorizedIsConnackNotAuthorized(t *testing.T) {
	b := authBroker(t, authACL, "")
	versions(t, func(t *testing.T, v byte) {
		c := dialRaw(t, b.addr, v)
		ack := c.connect(clientID(t, "will"), both(login("device-7", "pw7"), func(p *codec.Connect) {
			p.WillFlag, p.WillTopic, p.WillPayload = true, []byte("iot/device-8/lwt"), []byte("gone")
		}))
		if want := refusedCode(v, codec.NotAuthorized, codec.ConnRefusedNotAuthorized311); ack.ReasonCode != want {
			t.Fatalf("CONNACK 0x%02x, want 0x%02x", byte(ack.ReasonCode), byte(want))
		}
	})
}

// client_ids: ties a credential to the devices that may carry it; any other
// id is 0x86, like a wrong password.
func TestClientIDsMismatchIsBadUserNameOrPassword(t *testing.T) {
	b := authBroker(t, authACL, "")
	versions(t, func(t *testing.T, v byte) {
		c := dialRaw(t, b.addr, v)
		ack := c.connect("south-1", login("north", "pwn"))
		if want := refusedCode(v, codec.BadUserNameOrPassword, codec.ConnRefusedBadUserNamePassword); ack.ReasonCode != want {
			t.Fatalf("CONNACK 0x%02x, want 0x%02x", byte(ack.ReasonCode), byte(want))
		}
		if b.log.wait(regexp.MustCompile(`client_id=south-1.*client_ids`), waitLong) == "" {
			t.Fatal("no refusal line for south-1 naming client_ids")
		}
		dialRaw(t, b.addr, v).mustConnect("north-"+uniq(t), login("north", "pwn"))
	})
}

// RFC 0002 "Taking a feature away", the CONNACK half: persistent shortened
// to Session Expiry 0, Maximum QoS 1, Shared Subscription Available 0, and a
// Will refused 0x87; a wrong password is still 0x86.
func TestFeatureDenialsInTheConnack(t *testing.T) {
	b := authBroker(t, authACL, "")
	c := dialRaw(t, b.addr, codec.Version5)
	ack := c.mustConnect(clientID(t, "sensor"), both(login("sensor-1", "pws"), session(3600)))
	pr := &ack.Properties
	if !pr.Present.Has(codec.PropSessionExpiry) || pr.SessionExpiry != 0 {
		t.Errorf("persistent denied: Session Expiry %v %d, want 0", pr.Present.Has(codec.PropSessionExpiry), pr.SessionExpiry)
	}
	if !pr.Present.Has(codec.PropMaximumQoS) || pr.MaximumQoS != 1 {
		t.Errorf("qos2 denied: Maximum QoS %v %d, want 1", pr.Present.Has(codec.PropMaximumQoS), pr.MaximumQoS)
	}
	if !pr.Present.Has(codec.PropSharedSubAvailable) || pr.SharedSubAvailable != 0 {
		t.Errorf("share denied: Shared Subscription Available %v, want 0", pr.Present.Has(codec.PropSharedSubAvailable))
	}
	if pr.Present.Has(codec.PropRetainAvailable) {
		t.Errorf("retained denied: Retain Available written; it stays 1")
	}
	versions(t, func(t *testing.T, v byte) {
		w := dialRaw(t, b.addr, v)
		ack := w.connect(clientID(t, "sensor-will"), both(login("sensor-1", "pws"), func(p *codec.Connect) {
			p.WillFlag, p.WillTopic, p.WillPayload = true, []byte("s/lwt"), []byte("x")
		}))
		if want := refusedCode(v, codec.NotAuthorized, codec.ConnRefusedNotAuthorized311); ack.ReasonCode != want {
			t.Errorf("Will denied: CONNACK 0x%02x, want 0x%02x", byte(ack.ReasonCode), byte(want))
		}
		bad := dialRaw(t, b.addr, v)
		ack = bad.connect(clientID(t, "sensor-bad"), both(login("sensor-1", "nope"), func(p *codec.Connect) {
			p.WillFlag, p.WillTopic, p.WillPayload = true, []byte("s/lwt"), []byte("x")
		}))
		if want := refusedCode(v, codec.BadUserNameOrPassword, codec.ConnRefusedBadUserNamePassword); ack.ReasonCode != want {
			t.Errorf("wrong password with a denied Will: 0x%02x, want 0x%02x", byte(ack.ReasonCode), byte(want))
		}
	})
}

// The DISCONNECT half: what a client denied a feature does anyway ends its
// connection with MQTT's own code (3.1.1: closed).
func TestFeatureDenialsEndTheConnection(t *testing.T) {
	b := authBroker(t, authACL, "")
	versions(t, func(t *testing.T, v byte) {
		t.Run("qos2 publish is 0x9B", func(t *testing.T) {
			c := dialRaw(t, b.addr, v)
			c.mustConnect(clientID(t, "q2"), login("sensor-1", "pws"))
			c.publish("s/x", []byte("x"), 2, 1)
			c.expectEnd(codec.QoSNotSupported)
		})
		t.Run("retained broadcast publish is 0x9A", func(t *testing.T) {
			c := dialRaw(t, b.addr, v)
			c.mustConnect(clientID(t, "ret"), login("sensor-1", "pws"))
			c.sendPublish(&codec.Publish{Topic: []byte("s/x"), Payload: []byte("x"), Retain: true})
			c.expectEnd(codec.RetainNotSupported)
		})
		t.Run("qos2 subscription is granted 1", func(t *testing.T) {
			c := dialRaw(t, b.addr, v)
			c.mustConnect(clientID(t, "sub2"), login("sensor-1", "pws"))
			if got := c.subscribe(1, "s/#", 2); got[0] != 1 {
				t.Fatalf("SUBACK 0x%02x, want 1", byte(got[0]))
			}
		})
		if v == codec.Version5 {
			t.Run("share subscription is 0x9E", func(t *testing.T) {
				c := dialRaw(t, b.addr, v)
				c.mustConnect(clientID(t, "share"), login("sensor-1", "pws"))
				c.send((&codec.Subscribe{PacketID: 1, Subscriptions: []codec.Subscription{{Filter: []byte("$share/g/s/#"), QoS: 1}}}).Append(nil, v))
				for {
					h, body := c.read()
					if h.Type == codec.TypeSuback {
						continue
					}
					if h.Type != codec.TypeDisconnect {
						t.Fatalf("got %s", h.Type)
					}
					var d codec.Disconnect
					d.Decode(h, body, v)
					if d.ReasonCode != codec.SharedSubscriptionsNotSupported {
						t.Fatalf("DISCONNECT 0x%02x, want 0x9E", byte(d.ReasonCode))
					}
					break
				}
			})
		}
	})
}

// RFC 0002 "Who may connect": adding a user admits nobody until SIGUSR1;
// after it the user connects. A re-read narrowing a grant applies to an
// open connection's next publish and delivery.
func TestSIGUSR1AppliesNewUsersAndGrantsToOpenConnections(t *testing.T) {
	b := authBroker(t, authACL, "")
	pw := filepath.Join(b.dir, "clients.passwd")
	if out, err := exec.Command("mosquitto_passwd", "-b", pw, "device-9", "pw9").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	c := dialRaw(t, b.addr, codec.Version5)
	if ack := c.connect(clientID(t, "new-early"), login("device-9", "pw9")); ack.ReasonCode != codec.BadUserNameOrPassword {
		t.Fatalf("added user admitted before the signal: 0x%02x", byte(ack.ReasonCode))
	}
	dash := dialRaw(t, b.addr, codec.Version5)
	dash.mustConnect(clientID(t, "dash"), login("dashboard", "pwd"))
	dash.mustSubscribe(1, "alerts/#", 0)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), login("oncall", "pwo"))
	pub.publish("alerts/a", []byte("before"), 0, 0)
	if p := dash.expectPublish(); string(p.Payload) != "before" {
		t.Fatalf("got %q", p.Payload)
	}

	narrowed := strings.Replace(authACL, "    - topic: alerts/#\n      allow: [read]\n", "    - topic: alerts/page/#\n      allow: [read]\n", 1)
	os.WriteFile(filepath.Join(b.dir, "acl.yaml"), []byte(narrowed), 0o600)
	b.signal(syscall.SIGUSR1)
	if b.log.wait(regexp.MustCompile(`credentials re-read and in force.*users`), waitLong) == "" {
		t.Fatal("the re-read never said it was in force")
	}

	dialRaw(t, b.addr, codec.Version5).mustConnect(clientID(t, "new-late"), login("device-9", "pw9"))
	// The open subscription is asked again at delivery: alerts/a is no
	// longer granted, alerts/page/1 still is.
	pub.publish("alerts/a", []byte("refused"), 0, 0)
	pub.publish("alerts/page/1", []byte("after"), 0, 0)
	if p := dash.expectPublish(); string(p.Payload) != "after" {
		t.Fatalf("got %q, want only the still-granted topic", p.Payload)
	}
}

// All or nothing: a re-read with one file broken applies none of them, logs
// the broken file at error naming it, and the broker goes on as it was.
func TestSIGUSR1WithABrokenFileChangesNothing(t *testing.T) {
	b := authBroker(t, authACL, "")
	pw := filepath.Join(b.dir, "clients.passwd")
	if out, err := exec.Command("mosquitto_passwd", "-b", pw, "device-9", "pw9").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	aclPath := filepath.Join(b.dir, "acl.yaml")
	os.WriteFile(aclPath, []byte(authACL+"clients:\n  x: [device]\n"), 0o600)
	b.signal(syscall.SIGUSR1)
	if b.log.wait(regexp.MustCompile(`level=ERROR.*SIGUSR1.*`+regexp.QuoteMeta(aclPath)), waitLong) == "" {
		t.Fatalf("no error line of the re-read names %s", aclPath)
	}
	// The password file did load, and is not applied either.
	c := dialRaw(t, b.addr, codec.Version5)
	if ack := c.connect(clientID(t, "new"), login("device-9", "pw9")); ack.ReasonCode != codec.BadUserNameOrPassword {
		t.Fatalf("a user from a half-applied re-read was admitted: 0x%02x", byte(ack.ReasonCode))
	}
	d := dialRaw(t, b.addr, codec.Version5)
	d.mustConnect(clientID(t, "old"), login("device-7", "pw7"))
	d.publish("iot/device-7/x", []byte("x"), 1, 1)
	if code := d.expectPuback(1); code != codec.Success {
		t.Fatalf("the old grants are gone: 0x%02x", byte(code))
	}
	// The broker still answers signals: a second re-read of the same broken
	// file logs a second error line.
	seen := len(b.log.snapshot())
	b.signal(syscall.SIGUSR1)
	if b.log.waitFrom(seen, regexp.MustCompile(`level=ERROR.*SIGUSR1.*`+regexp.QuoteMeta(aclPath)), waitLong) == "" {
		t.Fatal("a second SIGUSR1 was not answered")
	}
}

// AMB-24: SIGUSR1 is one step - with the configuration, the password file
// and the acl_file all broken, each is named at error in that one step (not
// the first alone), and nothing is applied.
func TestSIGUSR1NamesEveryFailingFile(t *testing.T) {
	b := authBroker(t, authACL, "")
	pw := filepath.Join(b.dir, "clients.passwd")
	f, err := os.OpenFile(pw, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("argon:$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA\n")
	f.Close()
	aclPath := filepath.Join(b.dir, "acl.yaml")
	os.WriteFile(aclPath, []byte(authACL+"clients:\n  x: [device]\n"), 0o600)
	cfg := filepath.Join(b.dir, "saguin.yaml")
	os.WriteFile(cfg, []byte("broker: [not, a, mapping\n"), 0o600)
	b.signal(syscall.SIGUSR1)
	for _, path := range []string{cfg, pw, aclPath} {
		if b.log.wait(regexp.MustCompile(`level=ERROR.*SIGUSR1.*`+regexp.QuoteMeta(path)), waitLong) == "" {
			t.Fatalf("no error line of the re-read names %s", path)
		}
	}
	d := dialRaw(t, b.addr, codec.Version5)
	d.mustConnect(clientID(t, "old"), login("device-7", "pw7"))
	d.publish("iot/device-7/x", []byte("x"), 1, 1)
	if code := d.expectPuback(1); code != codec.Success {
		t.Fatalf("the old grants are gone: 0x%02x", byte(code))
	}
}

func hangUpRequest(target, responseTopic string) *codec.Publish {
	p := &codec.Publish{Topic: []byte("$saguin/sessions/disconnect"), Payload: []byte(target), QoS: 1, PacketID: 7}
	if responseTopic != "" {
		p.Properties.ResponseTopic = []byte(responseTopic)
		p.Properties.Present.Set(codec.PropResponseTopic)
		p.Properties.CorrelationData = []byte("corr")
		p.Properties.Present.Set(codec.PropCorrelationData)
	}
	return p
}

// RFC 0002 "Hanging up a client": hung-up and the target's DISCONNECT 0x98
// with its session untouched; no-such-client; 0x87 without disconnect; 0x83
// without a Response Topic or naming itself.
func TestHangUpAnswersHungUpOrNoSuchClient(t *testing.T) {
	b := authBroker(t, authACL, "")
	devID := clientID(t, "dev")
	dev := dialRaw(t, b.addr, codec.Version5)
	dev.mustConnect(devID, both(login("device-7", "pw7"), session(600)))
	dev.mustSubscribe(1, "iot/device-7/#", 1)

	op := dialRaw(t, b.addr, codec.Version5)
	opID := clientID(t, "op")
	op.mustConnect(opID, login("oncall", "pwo"))
	op.sendPublish(hangUpRequest(devID, "ops/replies"))
	reply, code := replyAndAck(op)
	if code != codec.Success {
		t.Fatalf("PUBACK 0x%02x", byte(code))
	}
	if string(reply.Topic) != "ops/replies" || string(reply.Payload) != "hung-up" || string(reply.Properties.CorrelationData) != "corr" {
		t.Fatalf("reply %s %q corr %q", reply.Topic, reply.Payload, reply.Properties.CorrelationData)
	}
	dev.expectDisconnect(codec.AdministrativeAction)
	// The session is untouched: the device comes back to it.
	back := dialRaw(t, b.addr, codec.Version5)
	if ack := back.mustConnect(devID, both(login("device-7", "pw7"), func(p *codec.Connect) {
		p.CleanStart = false
		p.Properties.SessionExpiry = 600
		p.Properties.Present.Set(codec.PropSessionExpiry)
	})); !ack.SessionPresent {
		t.Error("the hang-up ended the session")
	}

	op.sendPublish(hangUpRequest("nobody-"+uniq(t), "ops/replies"))
	if p, _ := replyAndAck(op); string(p.Payload) != "no-such-client" {
		t.Fatalf("reply %q, want no-such-client", p.Payload)
	}
	for _, tc := range []struct {
		name string
		p    *codec.Publish
	}{
		{"no response topic", hangUpRequest(devID, "")},
		{"own id", hangUpRequest(opID, "ops/replies")},
		{"no id", hangUpRequest("", "ops/replies")},
	} {
		op.sendPublish(tc.p)
		if code := op.expectAck(codec.TypePuback, 7); code != codec.ImplementationSpecificError {
			t.Errorf("%s: PUBACK 0x%02x, want 0x83", tc.name, byte(code))
		}
	}
	dash := dialRaw(t, b.addr, codec.Version5)
	dash.mustConnect(clientID(t, "dash"), login("dashboard", "pwd"))
	dash.sendPublish(hangUpRequest(devID, "r"))
	if code := dash.expectAck(codec.TypePuback, 7); code != codec.NotAuthorized {
		t.Errorf("without disconnect: PUBACK 0x%02x, want 0x87", byte(code))
	}
}

// replyAndAck reads a request's reply and its PUBACK, in whichever order
// they come: the reply is written to the connection, the PUBACK answers.
func replyAndAck(c *raw) (*codec.Publish, codec.ReasonCode) {
	c.t.Helper()
	var reply *codec.Publish
	code, acked := codec.ReasonCode(0), false
	for reply == nil || !acked {
		h, body := c.read()
		switch h.Type {
		case codec.TypePublish:
			reply = &codec.Publish{}
			if err := reply.Decode(h, body, c.version); err != nil {
				c.t.Fatal(err)
			}
		case codec.TypePuback:
			var a codec.Ack
			if err := a.Decode(h, body, c.version); err != nil {
				c.t.Fatal(err)
			}
			code, acked = a.ReasonCode, true
		default:
			c.t.Fatalf("got %s", h.Type)
		}
	}
	return reply, code
}

// A 3.1.1 client cannot ask: its own connection is closed, never the one
// it named.
func TestHangUpFrom311ClosesTheAsker(t *testing.T) {
	b := authBroker(t, authACL, "")
	devID := clientID(t, "dev")
	dev := dialRaw(t, b.addr, codec.Version5)
	dev.mustConnect(devID, login("device-7", "pw7"))
	op := dialRaw(t, b.addr, codec.Version311)
	op.mustConnect(clientID(t, "op"), login("oncall", "pwo"))
	op.sendPublish(&codec.Publish{Topic: []byte("$saguin/sessions/disconnect"), Payload: []byte(devID), QoS: 1, PacketID: 1})
	op.expectClosed()
	dev.publish("iot/device-7/x", []byte("x"), 1, 1)
	if code := dev.expectPuback(1); code != codec.Success {
		t.Fatalf("the named client was touched: 0x%02x", byte(code))
	}
}

// RFC 0002 "The verbs" / checklist B.5 (C4.2): a queue job is offered only
// to a worker the acl_file lets consume it - a worker whose consume a
// filter: narrows is offered a later job past an older one it may not take -
// and the job it was refused waits for an allowed worker with its attempt
// unspent.
func TestQueueJobOfferedOnlyToAnAllowedWorkerAttemptUnspent(t *testing.T) {
	saguinOnly(t, "the test needs a saguin started with its own password file")
	dir := t.TempDir()
	pw := writePasswd(t, dir, map[string]string{"producer": "pwp", "narrow": "pwn", "wide": "pww"})
	acl := `roles:
  producer:
    - channel: jobs
      allow: [write]
  site-1:
    - channel: jobs
      filter: work/1/inspect
      allow: [consume]
  every-site:
    - channel: jobs
      allow: [consume]
users:
  producer: [producer]
  narrow: [site-1]
  wide: [every-site]
`
	os.WriteFile(filepath.Join(dir, "acl.yaml"), []byte(acl), 0o600)
	b := startBrokerIn(t, dir, brokerConfig{MQTT: "password_file: " + pw + "\nacl_file: " + filepath.Join(dir, "acl.yaml"), Channels: queueChannel})
	worker := func(user, pass string) *raw {
		w := dialRaw(t, b.addr, codec.Version5)
		w.mustConnect(user, login(user, pass))
		if got := w.subscribe(1, queueForm, 1); len(got) != 1 || got[0] != codec.GrantedQoS1 {
			t.Fatalf("%s: SUBACK %v for the queue's form, want 0x01", user, got)
		}
		return w
	}
	narrow := worker("narrow", "pwn")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("producer", login("producer", "pwp"))
	pub.publishQoS1("work/2/inspect", []byte("site 2"), 1)
	pub.publishQoS1("work/1/inspect", []byte("site 1"), 2)
	got := narrow.expectPublishWithin(5 * time.Second)
	if string(got.Topic) != "work/1/inspect" || offerAttempt(t, got) != 1 {
		t.Fatalf("narrow was offered %q on %s at attempt %d, want site 1's job at 1", got.Payload, got.Topic, offerAttempt(t, got))
	}
	narrow.ackDelivery(got)
	narrow.answer(got, "ack")
	wide := worker("wide", "pww")
	o := wide.expectPublishWithin(5 * time.Second)
	if string(o.Payload) != "site 2" || offerAttempt(t, o) != 1 {
		t.Fatalf("wide was offered %q at attempt %d, want site 2's job at attempt 1 (refusing it to narrow spent none)", o.Payload, offerAttempt(t, o))
	}
	narrow.expectNothing("site 2's job is not narrow's to take")
}

// Checklist A29 (notes-0003 "Sessions: one owner, one ending"): every
// CONNECT check runs before the named session is looked at, so a CONNECT
// refused for a wrong password or a client_ids mismatch, naming the client
// id of a live connection, takes nothing over; and naming a kept session,
// even with Clean Start 1, leaves that session as it was.
func TestA29RefusedConnectChangesNoSession(t *testing.T) {
	b := authBroker(t, authACL, "")
	versions(t, func(t *testing.T, v byte) {
		id := clientID(t, "held")
		refusals := []struct {
			name  string
			login func(*codec.Connect)
		}{
			{"wrong password", login("device-7", "nope")},
			{"client_ids mismatch", login("north", "pwn")},
		}
		cleanStart := func(c *codec.Connect) { c.CleanStart = true }
		refuse := func(f func(*codec.Connect)) {
			t.Helper()
			want := refusedCode(v, codec.BadUserNameOrPassword, codec.ConnRefusedBadUserNamePassword)
			if ack := dialRaw(t, b.addr, v).connect(id, f); ack.ReasonCode != want {
				t.Fatalf("CONNACK 0x%02x, want 0x%02x", byte(ack.ReasonCode), byte(want))
			}
		}
		pub := dialRaw(t, b.addr, v)
		pub.mustConnect(clientID(t, "pub"), login("device-7", "pw7"))

		live := dialRaw(t, b.addr, v)
		live.mustConnect(id, both(login("device-7", "pw7"), freshSession(300)))
		live.mustSubscribe(1, "iot/device-7/held", 1)
		for _, r := range refusals {
			refuse(both(r.login, session(300)))
		}
		pub.publish("iot/device-7/held", []byte("still live"), 0, 0)
		if p := live.expectPublish(); string(p.Payload) != "still live" {
			t.Fatalf("the live connection got %q after refused CONNECTs naming its id", p.Payload)
		}

		live.disconnect()
		for _, r := range refusals {
			refuse(both(r.login, cleanStart))
		}
		again := dialRaw(t, b.addr, v)
		if ack := again.mustConnect(id, both(login("device-7", "pw7"), session(300))); !ack.SessionPresent {
			t.Fatal("a refused CONNECT with Clean Start 1 discarded the kept session")
		}
		pub.publish("iot/device-7/held", []byte("kept"), 0, 0)
		if p := again.expectPublish(); string(p.Payload) != "kept" {
			t.Fatalf("the kept subscription delivered %q", p.Payload)
		}
	})
}

// Checklist A32 (AMB-34): an MQTT 5 CONNECT with a password and no user
// name offers no user name - it is anonymous, the password ignored: refused
// 0x86 as "no user name" where anonymous clients are not admitted, admitted
// in mixed mode.
func TestA32PasswordWithoutUserNameIsAnonymous(t *testing.T) {
	passwordOnly := func(c *codec.Connect) { c.PasswordFlag, c.Password = true, []byte("pw7") }
	closed := authBroker(t, authACL, "")
	id := clientID(t, "closed")
	if ack := dialRaw(t, closed.addr, codec.Version5).connect(id, passwordOnly); ack.ReasonCode != codec.BadUserNameOrPassword {
		t.Fatalf("CONNACK 0x%02x, want 0x86", byte(ack.ReasonCode))
	}
	if closed.log.wait(regexp.MustCompile(`client_id=`+regexp.QuoteMeta(id)+`.*why="no user name`), waitLong) == "" {
		t.Fatal("the refusal does not say the client offered no user name")
	}
	mixed := authBroker(t, "", "allow_anonymous: true")
	dialRaw(t, mixed.addr, codec.Version5).mustConnect(clientID(t, "mixed"), passwordOnly)
}

// Checklist A42: withdrawing a user from the password file and sending
// SIGUSR1 refuses that user's next CONNECT and leaves its open connections
// alone.
func TestA42WithdrawnUserKeepsItsOpenConnections(t *testing.T) {
	b := authBroker(t, authACL, "")
	open := dialRaw(t, b.addr, codec.Version5)
	open.mustConnect(clientID(t, "open"), login("device-7", "pw7"))
	open.mustSubscribe(1, "iot/device-7/#", 1)
	rest := map[string]string{}
	for u, p := range authUsers {
		if u != "device-7" {
			rest[u] = p
		}
	}
	writePasswd(t, b.dir, rest)
	b.signal(syscall.SIGUSR1)
	if b.log.wait(regexp.MustCompile(`credentials re-read and in force`), waitLong) == "" {
		t.Fatal("the re-read never said it was in force")
	}
	if ack := dialRaw(t, b.addr, codec.Version5).connect(clientID(t, "new"), login("device-7", "pw7")); ack.ReasonCode != codec.BadUserNameOrPassword {
		t.Fatalf("the withdrawn user connected again: 0x%02x", byte(ack.ReasonCode))
	}
	open.publish("iot/device-7/x", []byte("still here"), 1, 2)
	if code := open.expectPuback(2); code != codec.Success {
		t.Fatalf("the open connection's publish: 0x%02x", byte(code))
	}
	if p := open.expectPublish(); string(p.Payload) != "still here" {
		t.Fatalf("the open connection got %q", p.Payload)
	}
}

// Checklist B24: %u and %c are substituted in one pass - a user name holding
// "%c" and a client id holding "%u" are taken literally, whichever order a
// two-pass substitution would have run in.
func TestB24SubstitutionIsOnePass(t *testing.T) {
	saguinOnly(t, "the test needs a saguin started with its own password file")
	dir := t.TempDir()
	pw := writePasswd(t, dir, map[string]string{"u%c": "pwu"})
	acl := "roles:\n  own:\n    - topic: t/%u/%c/#\n      allow: [write]\nusers:\n  \"u%c\": [own]\n"
	os.WriteFile(filepath.Join(dir, "acl.yaml"), []byte(acl), 0o600)
	b := startBrokerIn(t, dir, brokerConfig{MQTT: "password_file: " + pw + "\nacl_file: " + filepath.Join(dir, "acl.yaml")})
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect("%u", login("u%c", "pwu"))
	for i, tc := range []struct {
		topic string
		want  codec.ReasonCode
	}{
		{"t/u%c/%u/x", codec.Success},
		{"t/u%u/%u/x", codec.NotAuthorized},  // %u, then %c in the result
		{"t/u%c/u%c/x", codec.NotAuthorized}, // %c, then %u in the result
	} {
		id := uint16(i + 1)
		c.publish(tc.topic, []byte("x"), 1, id)
		if got := c.expectPuback(id); got != tc.want {
			t.Errorf("%s: PUBACK 0x%02x, want 0x%02x", tc.topic, byte(got), byte(tc.want))
		}
	}
}

// Checklist B38 (RFC 0002 "Authorization may only narrow"): the structural
// refusals are evaluated first, so a user granted topic "#" with every
// verb, and the queue channel's consume, is still refused $SYS, the
// reserved $saguin/ forms and the queue's wrong forms with the codes an
// anonymous client gets.
func TestB38AGrantOfEverythingDoesNotWidenStructuralRefusals(t *testing.T) {
	saguinOnly(t, "the test needs a saguin started with its own password file")
	dir := t.TempDir()
	pw := writePasswd(t, dir, map[string]string{"root": "pwr"})
	acl := "roles:\n  all:\n    - topic: \"#\"\n      allow: [write, read]\n    - channel: jobs\n      allow: [consume]\nusers:\n  root: [all]\n"
	os.WriteFile(filepath.Join(dir, "acl.yaml"), []byte(acl), 0o600)
	b := startBrokerIn(t, dir, brokerConfig{
		MQTT:     "password_file: " + pw + "\nacl_file: " + filepath.Join(dir, "acl.yaml"),
		Channels: queueChannel,
	})
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect(clientID(t, "root"), login("root", "pwr"))
	for i, k := range []struct {
		filter string
		want   codec.ReasonCode
	}{
		{queueForm, codec.GrantedQoS1}, // the grants are in force
		{"$SYS/#", codec.NotAuthorized},
		{"$saguin/queue/nope", codec.TopicFilterInvalid},
		{"$saguin/queue/#", codec.TopicFilterInvalid},
		{queueResponse, codec.TopicFilterInvalid},
		{"work/+/inspect", codec.TopicFilterInvalid},
		{"$share/g/" + queueForm, codec.NotAuthorized},
	} {
		if got := c.subscribe(uint16(10+i), k.filter, 1); len(got) != 1 || got[0] != k.want {
			t.Errorf("%s: SUBACK %v, want 0x%02x", k.filter, got, byte(k.want))
		}
	}
	c.publish("$SYS/broker/x", []byte("x"), 1, 1)
	if code := c.expectPuback(1); code != codec.NotAuthorized {
		t.Errorf("$SYS/broker/x: PUBACK 0x%02x, want 0x87", byte(code))
	}
}

// Checklist A30: a socket taken into the overflow budget (the broker at
// max_connections) is answered 0x89 Server busy (3.1.1: 0x03) whatever it
// offers - no credential is checked, so a wrong password or none is not
// answered 0x86. Each case has a broker of its own: the budget's one place
// is given back some time after the refused socket's close is read.
func TestA30OverflowSocketIsServerBusyWithNoCredentialChecked(t *testing.T) {
	saguinOnly(t, "the test needs a saguin started with its own password file")
	pw := writePasswd(t, t.TempDir(), authUsers)
	versions(t, func(t *testing.T, v byte) {
		for _, tc := range []struct {
			name  string
			login func(*codec.Connect)
		}{
			{"wrong password", login("device-7", "nope")},
			{"no user name", nil},
			{"right password", login("device-7", "pw7")},
		} {
			b := startBrokerIn(t, t.TempDir(), brokerConfig{MQTT: "password_file: " + pw, Limits: "max_connections: 1"})
			dialRaw(t, b.addr, codec.Version5).mustConnect(clientID(t, "holder"), login("device-7", "pw7"))
			c := dialRaw(t, b.addr, v)
			ack := c.connect(clientID(t, strings.ReplaceAll(tc.name, " ", "-")), tc.login)
			if want := refusedCode(v, codec.ServerBusy, codec.ConnRefusedServerUnavailable); ack.ReasonCode != want {
				t.Errorf("%s: CONNACK 0x%02x, want 0x%02x", tc.name, byte(ack.ReasonCode), byte(want))
			}
			c.expectClosed()
		}
	})
}

// Checklist A29 (notes-0003 "Sessions: one owner, one ending"): a CONNECT
// refused by the feature checks - a Will from sensor-1, whom the acl_file
// denies will - naming the client id of a live connection takes nothing
// over, and naming a kept session with Clean Start 1 leaves it as it was.
func TestA29RefusedWillChangesNoSession(t *testing.T) {
	b := authBroker(t, authACL, "")
	versions(t, func(t *testing.T, v byte) {
		id := clientID(t, "held")
		refuse := func(f func(*codec.Connect)) {
			t.Helper()
			want := refusedCode(v, codec.NotAuthorized, codec.ConnRefusedNotAuthorized311)
			if ack := dialRaw(t, b.addr, v).connect(id, both(login("sensor-1", "pws"), will("s/lwt", "gone", 1, false, 0), f)); ack.ReasonCode != want {
				t.Fatalf("a Will from a client denied will: CONNACK 0x%02x, want 0x%02x", byte(ack.ReasonCode), byte(want))
			}
		}
		pub := dialRaw(t, b.addr, v)
		pub.mustConnect(clientID(t, "pub"), login("device-7", "pw7"))

		live := dialRaw(t, b.addr, v)
		live.mustConnect(id, both(login("device-7", "pw7"), freshSession(300)))
		live.mustSubscribe(1, "iot/device-7/held", 1)
		refuse(session(300))
		pub.publish("iot/device-7/held", []byte("still live"), 0, 0)
		if p := live.expectPublish(); string(p.Payload) != "still live" {
			t.Fatalf("the live connection got %q after a refused CONNECT naming its id", p.Payload)
		}

		live.disconnect()
		refuse(func(c *codec.Connect) { c.CleanStart = true })
		again := dialRaw(t, b.addr, v)
		if ack := again.mustConnect(id, both(login("device-7", "pw7"), session(300))); !ack.SessionPresent {
			t.Fatal("a CONNECT refused for its Will, with Clean Start 1, discarded the kept session")
		}
		pub.publish("iot/device-7/held", []byte("kept"), 0, 0)
		if p := again.expectPublish(); string(p.Payload) != "kept" {
			t.Fatalf("the kept subscription delivered %q", p.Payload)
		}
	})
}

// Checklist A29 (notes-0003 "Sessions: one owner, one ending"): a CONNECT
// refused by the Will-room check - its Will finding the session store
// filled by other clients' Wills, 0x97 - naming the client id of a live
// connection takes nothing over: the live one is still served.
func TestA29WillWithNoRoomLeavesALiveSessionAlone(t *testing.T) {
	limits := "limits:\n  max_message_size: 8KiB\n  max_connect_size: 8KiB\n  max_header_bytes: 1KiB"
	b := startSaguin(t, t.TempDir(), saguinYAML(memoryStorage+"\n      max_bytes: 64KiB", limits))
	id, topic := clientID(t, "held"), uniq(t)
	willOf := func(n int) func(*codec.Connect) {
		return func(c *codec.Connect) {
			c.WillFlag, c.WillTopic, c.WillPayload = true, []byte("lwt/"+topic), make([]byte, n)
		}
	}
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	live := dialRaw(t, b.addr, codec.Version5)
	live.mustConnect(id, freshSession(300))
	live.mustSubscribe(1, topic, 1)

	// Clients arming 7 KiB Wills fill the 64 KiB store until one is
	// refused, then 256-byte ones until one is: what is left is far less
	// than a 7 KiB Will.
	for _, size := range []int{7 << 10, 256} {
		full := false
		for i := 0; i < 300 && !full; i++ {
			switch ack := dialRaw(t, b.addr, codec.Version5).connect(clientID(t, fmt.Sprintf("filler-%d-%d", size, i)), willOf(size)); ack.ReasonCode {
			case codec.Success:
			case codec.QuotaExceeded:
				full = true
			default:
				t.Fatalf("filler %d of %d bytes: CONNACK 0x%02x", i, size, byte(ack.ReasonCode))
			}
		}
		if !full {
			t.Fatalf("Wills of %d bytes never filled a 64 KiB session store", size)
		}
	}
	refuse := func(f func(*codec.Connect)) {
		t.Helper()
		if ack := dialRaw(t, b.addr, codec.Version5).connect(id, both(willOf(7<<10), f)); ack.ReasonCode != codec.QuotaExceeded {
			t.Fatalf("a Will the full session store has no room for: CONNACK 0x%02x, want 0x97", byte(ack.ReasonCode))
		}
	}
	refuse(session(300))
	pub.publish(topic, []byte("still live"), 0, 0)
	if p := live.expectPublish(); string(p.Payload) != "still live" {
		t.Fatalf("the live connection got %q after a refused CONNECT naming its id", p.Payload)
	}
}
