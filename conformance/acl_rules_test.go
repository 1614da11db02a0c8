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

	"github.com/saguin-edge/saguin/codec"
)

// Tests for the rules of checklist-operations section B (the acl_file)
// that the audit of issue 14 found untested or tested in part; each is
// named after its rule.

// aclBroker starts saguin with a password file of users (written by
// mosquitto_passwd), acl as its acl_file, and the extra configuration cfg
// (its MQTT lines are added to the two files' keys).
func aclBroker(t *testing.T, users map[string]string, acl string, cfg brokerConfig) *brokerProc {
	t.Helper()
	saguinOnly(t, "the test needs a saguin started with its own acl_file")
	dir := t.TempDir()
	pw := writePasswd(t, dir, users)
	aclPath := filepath.Join(dir, "acl.yaml")
	if err := os.WriteFile(aclPath, []byte(acl), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.MQTT = "password_file: " + pw + "\nacl_file: " + aclPath + "\n" + cfg.MQTT
	return startBrokerIn(t, dir, cfg)
}

// untilRefused publishes QoS 1 to topic, ten at once, and says how many
// were acknowledged 0x00 before the first 0x97 (10: none refused).
func untilRefused(t *testing.T, c *raw, topic string) int {
	t.Helper()
	return untilQuota(t, c, topic, []byte("x"), codec.Success)
}

// Checklist B30 (RFC 0002 "How fast one client may publish"): an entry's
// limits: replace the broker-wide figures for the users it applies to, up
// as well as down, at run time - not only in what --acl prints - and a
// user whose entry carries none is held to the broker-wide ones.
func TestB30EntryLimitsAreEnforced(t *testing.T) {
	acl := `roles:
  any:
    - topic: "#"
      allow: [write, read]
users:
  slow:
    roles: [any]
    limits: {publish_rate: 1}
  fast:
    roles: [any]
    limits: {publish_rate: 1000}
  plain: [any]
`
	b := aclBroker(t, map[string]string{"slow": "pws", "fast": "pwf", "plain": "pwp"}, acl, brokerConfig{Limits: "publish_rate: 3"})
	for _, tc := range []struct {
		user, pass string
		ok         func(int) bool
		want       string
	}{
		{"slow", "pws", func(n int) bool { return n < 3 }, "fewer than the broker-wide 3 (its entry's 1 a second)"},
		{"fast", "pwf", func(n int) bool { return n == 10 }, "all 10 (its entry's 1000 a second)"},
		{"plain", "pwp", func(n int) bool { return n >= 3 && n < 10 }, "the broker-wide 3 a second, bursting no further"},
	} {
		c := dialRaw(t, b.addr, codec.Version5)
		c.mustConnect(clientID(t, tc.user), login(tc.user, tc.pass))
		if n := untilRefused(t, c, "t/"+tc.user); !tc.ok(n) {
			t.Errorf("%s: %d of ten publishes at once acknowledged before a 0x97, want %s", tc.user, n, tc.want)
		}
	}
}

// reread rewrites b's acl_file as acl, sends SIGUSR1 and waits for the line
// saying the re-read is in force.
func (b *brokerProc) reread(t *testing.T, acl string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(b.dir, "acl.yaml"), []byte(acl), 0o600); err != nil {
		t.Fatal(err)
	}
	seen := len(b.log.snapshot())
	b.signal(syscall.SIGUSR1)
	if b.log.waitFrom(seen, regexp.MustCompile(`credentials re-read and in force`), waitLong) == "" {
		t.Fatalf("the re-read never said it was in force:\n%s", b.log)
	}
}

// Checklist B1 (RFC 0002 "What a client may do"): with no acl_file every
// authenticated client may do anything - publish and subscribe anywhere,
// drain a queue and hang another client up.
func TestB1WithoutAnACLFileEveryAuthenticatedClientMayDoAnything(t *testing.T) {
	saguinOnly(t, "the test needs a saguin started with its own password file")
	dir := t.TempDir()
	pw := writePasswd(t, dir, authUsers)
	b := startBrokerIn(t, dir, brokerConfig{MQTT: "password_file: " + pw, Channels: queueChannel})
	versions(t, func(t *testing.T, v byte) {
		c := dialRaw(t, b.addr, v)
		c.mustConnect(clientID(t, "any"), login("dashboard", "pwd"))
		if got := c.subscribe(1, "#", 1); got[0] != codec.GrantedQoS1 {
			t.Fatalf("SUBSCRIBE #: 0x%02x", byte(got[0]))
		}
		// The PUBACK is read past the delivery to the client's own #.
		c.publish("iot/device-8/anything", []byte("x"), 1, 2)
		for {
			h, body, err := c.next(waitLong)
			if err != nil {
				t.Fatalf("publish anywhere: no PUBACK: %v", err)
			}
			if h.Type == codec.TypePublish {
				continue
			}
			var a codec.Ack
			if h.Type != codec.TypePuback || a.Decode(h, body, v) != nil {
				t.Fatalf("publish anywhere: got %s, want its PUBACK", h.Type)
			}
			if a.ReasonCode != codec.Success {
				t.Fatalf("publish anywhere: PUBACK 0x%02x, want 0x00", byte(a.ReasonCode))
			}
			break
		}
	})
	worker := dialRaw(t, b.addr, codec.Version5)
	worker.mustConnect(clientID(t, "worker"), login("sensor-1", "pws"))
	if got := worker.subscribe(1, queueForm, 1); got[0] != codec.GrantedQoS1 {
		t.Fatalf("the queue's form: SUBACK 0x%02x", byte(got[0]))
	}
	prod := dialRaw(t, b.addr, codec.Version5)
	prod.mustConnect(clientID(t, "prod"), login("north", "pwn"))
	prod.publishQoS1("work/1/inspect", []byte("job"), 1)
	if o := worker.expectPublishWithin(waitLong); string(o.Payload) != "job" {
		t.Fatalf("the worker was offered %q", o.Payload)
	}
	targetID := clientID(t, "target")
	target := dialRaw(t, b.addr, codec.Version5)
	target.mustConnect(targetID, login("device-7", "pw7"))
	op := dialRaw(t, b.addr, codec.Version5)
	op.mustConnect(clientID(t, "op"), login("dashboard", "pwd"))
	op.sendPublish(hangUpRequest(targetID, "ops/replies"))
	if reply, code := replyAndAck(op); code != codec.Success || string(reply.Payload) != "hung-up" {
		t.Fatalf("hang-up with no acl_file: PUBACK 0x%02x, reply %q", byte(code), reply.Payload)
	}
	target.expectDisconnect(codec.AdministrativeAction)
}

// Checklist B5 (RFC 0002 "What a refused client sees"): the acl_file is
// read at startup and re-read on SIGUSR1 - an edit alone changes nothing,
// the signal applies it to open connections and logs the roles it holds.
func TestB5ACLFileReadAtStartAndOnSIGUSR1(t *testing.T) {
	const one = "roles:\n  a:\n    - topic: a/#\n      allow: [write]\nusers:\n  dashboard: [a]\n"
	const two = "roles:\n  a:\n    - topic: a/#\n      allow: [write]\n  b:\n    - topic: b/#\n      allow: [write]\nusers:\n  dashboard: [a, b]\n"
	b := aclBroker(t, authUsers, one, brokerConfig{})
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect(clientID(t, "dash"), login("dashboard", "pwd"))
	try := func(topic string, id uint16, want codec.ReasonCode) {
		t.Helper()
		c.publish(topic, []byte("x"), 1, id)
		if got := c.expectPuback(id); got != want {
			t.Fatalf("%s: PUBACK 0x%02x, want 0x%02x", topic, byte(got), byte(want))
		}
	}
	try("a/1", 1, codec.Success)
	try("b/1", 2, codec.NotAuthorized)
	os.WriteFile(filepath.Join(b.dir, "acl.yaml"), []byte(two), 0o600)
	// A new connection reads the held copy, not the edited file.
	d := dialRaw(t, b.addr, codec.Version5)
	d.mustConnect(clientID(t, "dash2"), login("dashboard", "pwd"))
	d.publish("b/1", []byte("x"), 1, 1)
	if got := d.expectPuback(1); got != codec.NotAuthorized {
		t.Fatalf("an edit without the signal was applied: PUBACK 0x%02x", byte(got))
	}
	seen := len(b.log.snapshot())
	b.signal(syscall.SIGUSR1)
	if b.log.waitFrom(seen, regexp.MustCompile(`credentials re-read and in force.*acl_file=\S+acl.yaml roles=2 entries=1`), waitLong) == "" {
		t.Fatalf("the re-read does not say the acl_file now holds 2 roles:\n%s", b.log)
	}
	try("b/1", 3, codec.Success)
}

// Checklist B25 (RFC 0002 "Roles, and users matched by pattern"): a rule
// whose %u would insert a name holding / grants nothing, the entry's other
// rules still do, and the broker says so once, at connect - not at each
// publish the rule would have granted.
func TestB25WithheldRuleIsSaidOnceAtConnect(t *testing.T) {
	acl := "roles:\n  own:\n    - topic: iot/%u/#\n      allow: [write]\n  shared:\n    - topic: shared/#\n      allow: [write]\nusers:\n  \"site*\": [own, shared]\n"
	b := aclBroker(t, map[string]string{"site/7": "pw"}, acl, brokerConfig{})
	id := clientID(t, "site")
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect(id, login("site/7", "pw"))
	for i, tc := range []struct {
		topic string
		want  codec.ReasonCode
	}{
		{"shared/x", codec.Success},
		{"iot/site/7/x", codec.NotAuthorized},
		{"iot/site/7/y", codec.NotAuthorized},
	} {
		c.publish(tc.topic, []byte("x"), 1, uint16(i+1))
		if got := c.expectPuback(uint16(i + 1)); got != tc.want {
			t.Fatalf("%s: PUBACK 0x%02x, want 0x%02x", tc.topic, byte(got), byte(tc.want))
		}
	}
	withheld := regexp.MustCompile(`level=WARN msg="an acl_file rule grants this client nothing: the name it would put in holds \+, # or /" .*client_id=` + regexp.QuoteMeta(id) + ` user=site/7 role=own rule=iot/%u/# line=3`)
	if b.log.wait(withheld, waitLong) == "" {
		t.Fatalf("no warning at connect names the withheld rule:\n%s", b.log)
	}
	// The second refusal's line is written after the publish is answered.
	b.log.wait(regexp.MustCompile(`publish refused .*client_id=`+regexp.QuoteMeta(id)+` topic=iot/site/7/y`), waitLong)
	n := 0
	for _, l := range b.log.snapshot() {
		if withheld.MatchString(l) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the withheld rule was said %d times for one connection, want once", n)
	}
}

// Checklist B33 (RFC 0002 "Which devices may carry a name"): client_ids:
// may be a list, each pattern with * and %u; a user name holding * is
// never put in, so a %u pattern admits no client id for it.
func TestB33ClientIDsListWildcardAndPercentU(t *testing.T) {
	acl := `roles:
  r:
    - topic: r/#
      allow: [write]
users:
  north:
    roles: [r]
    client_ids: ["%u-*", spare-1]
  "st*":
    roles: [r]
    client_ids: "%u-1"
`
	b := aclBroker(t, map[string]string{"north": "pwn", "st*r": "pws", "stor": "pwo"}, acl, brokerConfig{})
	versions(t, func(t *testing.T, v byte) {
		refused := refusedCode(v, codec.BadUserNameOrPassword, codec.ConnRefusedBadUserNamePassword)
		for _, tc := range []struct {
			user, pass, id string
			admitted       bool
		}{
			{"north", "pwn", "north-" + uniq(t), true},
			{"north", "pwn", "spare-1", true},
			{"north", "pwn", "south-" + uniq(t), false},
			{"north", "pwn", "%u-" + uniq(t), false}, // the id is not a pattern
			{"stor", "pwo", "stor-1", true},
			{"st*r", "pws", "st*r-1", false}, // * in the name: never substituted
			{"st*r", "pws", "stor-1", false},
		} {
			ack := dialRaw(t, b.addr, v).connect(tc.id, login(tc.user, tc.pass))
			if got := ack.ReasonCode == codec.Success; got != tc.admitted {
				want := "admitted"
				if !tc.admitted {
					want = fmt.Sprintf("refused 0x%02x", byte(refused))
				}
				t.Errorf("%s as %s: CONNACK 0x%02x, want %s", tc.user, tc.id, byte(ack.ReasonCode), want)
			} else if !got && ack.ReasonCode != refused {
				t.Errorf("%s as %s: CONNACK 0x%02x, want 0x%02x", tc.user, tc.id, byte(ack.ReasonCode), byte(refused))
			}
		}
	})
}

// featuresACL denies one feature each to noret and noq2; full is denied
// nothing. Each may write and read every broadcast topic and the state
// channel.
const featuresACL = `roles:
  all:
    - topic: "#"
      allow: [write, read]
    - channel: state
      allow: [write, read]
  noret:
    - broker: features
      deny: [retained]
  noq2:
    - broker: features
      deny: [qos2]
users:
  noret: [all, noret]
  noq2: [all, noq2]
  full: [all]
`

var featureUsers = map[string]string{"noret": "pwr", "noq2": "pwq", "full": "pwf"}

// Checklist B45 (RFC 0002 "Taking a feature away"): retained denied, a
// retained Will aimed at a broadcast topic is refused at CONNECT 0x9A
// (3.1.1 0x05); one aimed at a channel topic and one not retained are
// admitted, and Retain Available is not written (it stays 1).
func TestB45RetainedWillAtABroadcastTopicIs0x9A(t *testing.T) {
	b := aclBroker(t, featureUsers, featuresACL, brokerConfig{Channels: latestChannel})
	versions(t, func(t *testing.T, v byte) {
		ack := dialRaw(t, b.addr, v).connect(clientID(t, "ret-will"), both(login("noret", "pwr"), will("lwt/x", "gone", 1, true, 0)))
		if want := refusedCode(v, codec.RetainNotSupported, codec.ConnRefusedNotAuthorized311); ack.ReasonCode != want {
			t.Errorf("retained Will on a broadcast topic: CONNACK 0x%02x, want 0x%02x", byte(ack.ReasonCode), byte(want))
		}
		ack = dialRaw(t, b.addr, v).mustConnect(clientID(t, "chan-will"), both(login("noret", "pwr"), will("state/x", "gone", 1, true, 0)))
		if v == codec.Version5 && ack.Properties.Present.Has(codec.PropRetainAvailable) {
			t.Error("Retain Available written for a client denied retained; it stays 1")
		}
		dialRaw(t, b.addr, v).mustConnect(clientID(t, "plain-will"), both(login("noret", "pwr"), will("lwt/x", "gone", 1, false, 0)))
	})
}

// Checklist B46 (RFC 0002 "Taking a feature away"): qos2 denied, a QoS 2
// Will is refused at CONNECT 0x9B (3.1.1 0x05), a QoS 1 Will admitted; a
// QoS 2 subscription is granted 1 and a QoS 2 publish reaches it at QoS 1.
func TestB46QoS2WillIs0x9BAndDeliveriesAreAtMostQoS1(t *testing.T) {
	b := aclBroker(t, featureUsers, featuresACL, brokerConfig{Channels: latestChannel})
	versions(t, func(t *testing.T, v byte) {
		ack := dialRaw(t, b.addr, v).connect(clientID(t, "q2-will"), both(login("noq2", "pwq"), will("lwt/x", "gone", 2, false, 0)))
		if want := refusedCode(v, codec.QoSNotSupported, codec.ConnRefusedNotAuthorized311); ack.ReasonCode != want {
			t.Errorf("QoS 2 Will: CONNACK 0x%02x, want 0x%02x", byte(ack.ReasonCode), byte(want))
		}
		dialRaw(t, b.addr, v).mustConnect(clientID(t, "q1-will"), both(login("noq2", "pwq"), will("lwt/x", "gone", 1, false, 0)))
		sub := dialRaw(t, b.addr, v)
		sub.mustConnect(clientID(t, "q2-sub"), login("noq2", "pwq"))
		topic := "d/" + uniq(t)
		if got := sub.subscribe(1, topic, 2); got[0] != codec.GrantedQoS1 {
			t.Fatalf("QoS 2 subscription: SUBACK 0x%02x, want 0x01", byte(got[0]))
		}
		pub := dialRaw(t, b.addr, v)
		pub.mustConnect(clientID(t, "q2-pub"), login("full", "pwf"))
		pub.publishQoS2(topic, []byte("x"), 1)
		if p := sub.expectPublish(); p.QoS != 1 {
			t.Fatalf("a QoS 2 publish reached a client denied qos2 at QoS %d, want 1", p.QoS)
		}
	})
}

// Checklist B48 (RFC 0002 "What a refused client sees"): a QoS 0 publish
// the acl_file refuses is dropped in silence - the connection kept, nothing
// delivered - and still counted and logged; a QoS 2 one is refused 0x87 on
// the PUBREC, and a 3.1.1 client is closed, never acknowledged.
func TestB48RefusedPublishQoS0IsDroppedCountedAndLogged(t *testing.T) {
	dir := t.TempDir()
	pw := writePasswd(t, dir, authUsers)
	aclPath := filepath.Join(dir, "acl.yaml")
	os.WriteFile(aclPath, []byte(authACL), 0o600)
	ob := startOps(t, dir, opsTCP+"\nmin_scrape_interval: 60s", brokerConfig{MQTT: "password_file: " + pw + "\nacl_file: " + aclPath})
	watch := dialRaw(t, ob.addr, codec.Version5)
	watch.mustConnect(clientID(t, "watch"), login("oncall", "pwo"))
	watch.mustSubscribe(1, "iot/#", 0)
	devID := clientID(t, "dev")
	dev := dialRaw(t, ob.addr, codec.Version5)
	dev.mustConnect(devID, login("device-7", "pw7"))
	dev.publish("iot/device-8/t", []byte("refused"), 0, 0)
	dev.publish("iot/device-7/t", []byte("after"), 0, 0)
	if p := watch.expectPublish(); string(p.Payload) != "after" {
		t.Fatalf("the watcher got %q first, want only the granted publish", p.Payload)
	}
	dev.ping() // the connection is kept
	if ob.log.wait(regexp.MustCompile(`msg="publish refused" .*client_id=`+regexp.QuoteMeta(devID)+` topic=iot/device-8/t qos=0 code="Not authorized"`), waitLong) == "" {
		t.Fatalf("no line says the QoS 0 publish was refused:\n%s", ob.log)
	}
	dev.sendPublish(&codec.Publish{QoS: 2, PacketID: 9, Topic: []byte("iot/device-8/t"), Payload: []byte("x")})
	if code := dev.expectAck(codec.TypePubrec, 9); code != codec.NotAuthorized {
		t.Fatalf("QoS 2: PUBREC 0x%02x, want 0x87", byte(code))
	}
	_, body := ob.get(t, "GET", "/metrics")
	if v, ok := value(parseScrape(t, body)["saguin_publish_refused_total"], "reason", "not authorized"); !ok || v != 2 {
		t.Fatalf(`saguin_publish_refused_total{reason="not authorized"} = %v %v, want 2 (the QoS 0 and the QoS 2)`, v, ok)
	}
	old := dialRaw(t, ob.addr, codec.Version311)
	old.mustConnect(clientID(t, "old"), login("device-7", "pw7"))
	old.sendPublish(&codec.Publish{QoS: 2, PacketID: 1, Topic: []byte("iot/device-8/t"), Payload: []byte("x")})
	old.expectClosedSilently()
}

// Checklist B51 (RFC 0002 "What a refused client sees", RFC 0005 "The
// catalogue"): a Will the acl_file no longer grants when it fires is not
// published, is counted in saguin_publish_refused_total{reason="not
// authorized"}, and is not counted in saguin_wills_published_total.
func TestB51WillRefusedAtFireIsCountedAsRefusedNotPublished(t *testing.T) {
	dir := t.TempDir()
	pw := writePasswd(t, dir, authUsers)
	aclPath := filepath.Join(dir, "acl.yaml")
	os.WriteFile(aclPath, []byte(authACL), 0o600)
	ob := startOps(t, dir, opsTCP+"\nmin_scrape_interval: 60s", brokerConfig{MQTT: "password_file: " + pw + "\nacl_file: " + aclPath})
	id := clientID(t, "dying")
	dev := dialRaw(t, ob.addr, codec.Version5)
	dev.mustConnect(id, both(login("device-7", "pw7"), will("iot/device-7/lwt", "gone", 0, false, 0)))
	ob.reread(t, strings.Replace(authACL, "    - topic: iot/%u/#\n      allow: [write, read]\n", "    - topic: iot/%u/#\n      allow: [read]\n", 1))
	dev.drop()
	if ob.log.wait(regexp.MustCompile(`msg="Will not published" .*client_id=`+regexp.QuoteMeta(id)), waitLong) == "" {
		t.Fatalf("no line says the Will was not published:\n%s", ob.log)
	}
	_, body := ob.get(t, "GET", "/metrics")
	fams := parseScrape(t, body)
	if v, ok := value(fams["saguin_publish_refused_total"], "reason", "not authorized"); !ok || v != 1 {
		t.Errorf(`saguin_publish_refused_total{reason="not authorized"} = %v %v, want 1`, v, ok)
	}
	if f := fams["saguin_wills_published_total"]; f != nil {
		for _, m := range f.GetMetric() {
			if m.GetCounter().GetValue() != 0 {
				t.Errorf("saguin_wills_published_total %v = %v, want the refused Will counted nowhere there", m.GetLabel(), m.GetCounter().GetValue())
			}
		}
	}
}

// channelACL grants writer write on the append channel events (ev/#) and
// the latest channel state (state/#), and reader read on both - narrowed to
// ev/ok/# and state/ok/# when narrowed is true.
func channelACL(narrowed bool) string {
	ev, st := "", ""
	if narrowed {
		ev, st = "      filter: ev/ok/#\n", "      filter: state/ok/#\n"
	}
	return "roles:\n  writer:\n    - channel: events\n      allow: [write]\n    - channel: state\n      allow: [write]\n" +
		"  reader:\n    - channel: events\n" + ev + "      allow: [read]\n    - channel: state\n" + st + "      allow: [read]\n" +
		"users:\n  writer: [writer]\n  reader: [reader]\n"
}

const bothChannels = "events:\n  type: append\n  filter: ev/#\n" + latestChannel

// Checklist B53 (RFC 0002 "What a refused client sees", invariant 16): an
// append consumer refused a record mid-channel is stalled at it, not moved
// past it - the records behind it wait too - and the re-read granting it
// back is itself what delivers them, with no publish after it.
func TestB53AppendConsumerRefusedIsStalledAndTheReloadWakesIt(t *testing.T) {
	b := aclBroker(t, map[string]string{"writer": "pww", "reader": "pwr"}, channelACL(false), brokerConfig{Channels: bothChannels})
	w := dialRaw(t, b.addr, codec.Version5)
	w.mustConnect("writer-1", login("writer", "pww"))
	r := dialRaw(t, b.addr, codec.Version5)
	r.mustConnect("reader-1", both(login("reader", "pwr"), freshSession(600)))
	r.mustSubscribe(1, "ev/#", 1)
	w.publishQoS1("ev/ok/1", []byte("one"), 1)
	first := r.expectPublish()
	if string(first.Payload) != "one" {
		t.Fatalf("got %q", first.Payload)
	}
	r.ackDelivery(first)
	b.reread(t, channelACL(true))
	w.publishQoS1("ev/no/2", []byte("two"), 2)
	w.publishQoS1("ev/ok/3", []byte("three"), 3)
	r.expectNothing("a record behind a refused one waits with it: the consumer is stalled, not moved past it")
	b.reread(t, channelACL(false))
	got := r.collect(2)
	if strings.Join(payloads(got), ",") != "two,three" {
		t.Fatalf("after the grant came back: %v, want two,three in order", payloads(got))
	}
}

// Checklist B53 for a latest channel: a value refused on the live
// connection is sent to it when a re-read grants it back, with no new
// value and no reconnect; what was delivered meanwhile is not sent again.
func TestB53LatestValueRefusedIsSentWhenTheGrantReturns(t *testing.T) {
	b := aclBroker(t, map[string]string{"writer": "pww", "reader": "pwr"}, channelACL(false), brokerConfig{Channels: bothChannels})
	w := dialRaw(t, b.addr, codec.Version5)
	w.mustConnect("writer-1", login("writer", "pww"))
	r := dialRaw(t, b.addr, codec.Version5)
	r.mustConnect("reader-1", both(login("reader", "pwr"), freshSession(600)))
	r.mustSubscribe(1, "state/#", 1)
	b.reread(t, channelACL(true))
	w.set("state/no/a", "refused", 1)
	w.set("state/ok/b", "granted", 2)
	granted := r.expectPublish()
	if string(granted.Payload) != "granted" {
		t.Fatalf("got %q on %s, want the granted value", granted.Payload, granted.Topic)
	}
	r.ackDelivery(granted)
	b.reread(t, channelACL(false))
	p := r.expectPublishWithin(waitLong)
	if string(p.Topic) != "state/no/a" || string(p.Payload) != "refused" {
		t.Fatalf("after the grant came back: %q on %s, want the value it was refused", p.Payload, p.Topic)
	}
	r.ackDelivery(p)
	r.expectNothing("a value delivered before the re-read is not sent again")
}

// Checklist B54 (notes-0003 "latest": undelivered values hold the mark
// back): a value the acl_file refuses a latest subscriber is logged with
// the reason and held below its mark, so the session resumed after the
// grant returns is sent it.
func TestB54LatestRefusedValueIsLoggedAndHeldBelowTheMark(t *testing.T) {
	b := aclBroker(t, map[string]string{"writer": "pww", "reader": "pwr"}, channelACL(false), brokerConfig{Channels: bothChannels})
	w := dialRaw(t, b.addr, codec.Version5)
	w.mustConnect("writer-1", login("writer", "pww"))
	r := dialRaw(t, b.addr, codec.Version5)
	r.mustConnect("reader-1", both(login("reader", "pwr"), freshSession(600)))
	r.mustSubscribe(1, "state/#", 1)
	// Narrowed after the SUBSCRIBE, which is granted whole or refused.
	b.reread(t, channelACL(true))
	w.set("state/no/a", "refused", 1)
	if b.log.wait(regexp.MustCompile(`level=WARN msg="latest value not delivered" .*client_id=reader-1 topic=state/no/a .*why="the acl_file grants this client no read on the topic"`), waitLong) == "" {
		t.Fatalf("no line says the refused value was not delivered, and why:\n%s", b.log)
	}
	w.set("state/ok/b", "granted", 2)
	granted := r.expectPublish()
	if string(granted.Payload) != "granted" {
		t.Fatalf("got %q", granted.Payload)
	}
	r.ackDelivery(granted)
	r.disconnect()
	b.reread(t, channelACL(false))
	back := dialRaw(t, b.addr, codec.Version5)
	if ack := back.mustConnect("reader-1", both(login("reader", "pwr"), session(600))); !ack.SessionPresent {
		t.Fatal("the session was not kept")
	}
	p := back.expectPublishWithin(waitLong)
	if string(p.Topic) != "state/no/a" || string(p.Payload) != "refused" {
		t.Fatalf("the resume sent %q on %s, want the value held below the mark", p.Payload, p.Topic)
	}
}

// Checklist B59 (RFC 0002 "Hanging up a client: broker: sessions"), the
// parts TestHangUpAnswersHungUpOrNoSuchClient leaves: a 3.1.1 target is
// closed (it has no DISCONNECT to be sent); a request at QoS 0 is answered
// too; a refused one at QoS 0 is dropped in silence; and a session kept
// with no connection is no-such-client, left as it was.
func TestB59HangUpOf311TargetsQoS0AndSessionsAway(t *testing.T) {
	b := authBroker(t, authACL, "")
	op := dialRaw(t, b.addr, codec.Version5)
	op.mustConnect(clientID(t, "op"), login("oncall", "pwo"))
	op.mustSubscribe(1, "ops/replies", 0)
	ask := func(target string, qos byte) *codec.Publish {
		p := hangUpRequest(target, "ops/replies")
		p.QoS = qos
		if qos == 0 {
			p.PacketID = 0
		}
		return p
	}

	oldID := clientID(t, "old")
	old := dialRaw(t, b.addr, codec.Version311)
	old.mustConnect(oldID, login("device-7", "pw7"))
	op.sendPublish(ask(oldID, 0))
	if p := op.expectPublish(); string(p.Payload) != "hung-up" {
		t.Fatalf("a QoS 0 request: reply %q, want hung-up", p.Payload)
	}
	old.expectClosedSilently()

	awayID := clientID(t, "away")
	away := dialRaw(t, b.addr, codec.Version5)
	away.mustConnect(awayID, both(login("device-7", "pw7"), freshSession(600)))
	away.mustSubscribe(1, "iot/device-7/away", 1)
	away.disconnect()
	op.sendPublish(ask(awayID, 1))
	if reply, code := replyAndAck(op); code != codec.Success || string(reply.Payload) != "no-such-client" {
		t.Fatalf("a session with no connection: PUBACK 0x%02x, reply %q; want no-such-client", byte(code), reply.Payload)
	}
	back := dialRaw(t, b.addr, codec.Version5)
	if ack := back.mustConnect(awayID, both(login("device-7", "pw7"), session(600))); !ack.SessionPresent {
		t.Fatal("asking to hang up a session away ended it")
	}

	dash := dialRaw(t, b.addr, codec.Version5)
	dash.mustConnect(clientID(t, "dash"), login("dashboard", "pwd"))
	dash.mustSubscribe(1, "alerts/#", 0)
	q0 := ask(awayID, 0)
	q0.Properties.ResponseTopic = []byte("alerts/replies")
	dash.sendPublish(q0)
	dash.expectNothing("a QoS 0 request refused for want of disconnect is dropped: no reply, no acknowledgement")
	back.publish("iot/device-7/away", []byte("still connected"), 1, 1)
	if code := back.expectPuback(1); code != codec.Success {
		t.Fatalf("the named client was touched: 0x%02x", byte(code))
	}
}

// Checklist B41 (RFC 0002 "Hanging up a client: broker: sessions"): only a
// broker: sessions rule grants a hang-up - a user granted topic "#" with
// every verb is refused 0x87 on $saguin/sessions/disconnect, and the named
// client stays connected.
func TestB41TopicHashWithEveryVerbCannotHangAnybodyUp(t *testing.T) {
	acl := "roles:\n  all:\n    - topic: \"#\"\n      allow: [write, read]\nusers:\n  root: [all]\n  dev: [all]\n"
	b := aclBroker(t, map[string]string{"root": "pwr", "dev": "pwd"}, acl, brokerConfig{})
	targetID := clientID(t, "target")
	target := dialRaw(t, b.addr, codec.Version5)
	target.mustConnect(targetID, login("dev", "pwd"))
	op := dialRaw(t, b.addr, codec.Version5)
	op.mustConnect(clientID(t, "op"), login("root", "pwr"))
	op.sendPublish(hangUpRequest(targetID, "ops/replies"))
	if code := op.expectAck(codec.TypePuback, 7); code != codec.NotAuthorized {
		t.Fatalf("a hang-up by a user granted # for write and read: PUBACK 0x%02x, want 0x87", byte(code))
	}
	target.publish("t/still", []byte("x"), 1, 1)
	if code := target.expectPuback(1); code != codec.Success {
		t.Fatalf("the named client was touched: PUBACK 0x%02x", byte(code))
	}
}

// Checklist B49 (RFC 0005 "The catalogue"): a SUBSCRIBE filter the
// acl_file refuses - not a structural refusal - is counted in
// saguin_subscriptions_refused_total{reason="not authorized"}, from a 3.1.1
// client as from an MQTT 5 one.
func TestB49ACLRefusedFiltersAreCountedNotAuthorized(t *testing.T) {
	dir := t.TempDir()
	pw := writePasswd(t, dir, authUsers)
	aclPath := filepath.Join(dir, "acl.yaml")
	if err := os.WriteFile(aclPath, []byte(authACL), 0o600); err != nil {
		t.Fatal(err)
	}
	ob := startOps(t, dir, opsTCP+"\nmin_scrape_interval: 60s", brokerConfig{MQTT: "password_file: " + pw + "\nacl_file: " + aclPath})
	versions(t, func(t *testing.T, v byte) {
		c := dialRaw(t, ob.addr, v)
		c.mustConnect(clientID(t, "dev"), login("device-7", "pw7"))
		if got := c.subscribe(1, "iot/device-8/#", 1); got[0] != refusedCode(v, codec.NotAuthorized, codec.SubackFailure311) {
			t.Fatalf("a filter the acl_file refuses: SUBACK 0x%02x", byte(got[0]))
		}
	})
	_, body := ob.get(t, "GET", "/metrics")
	if v, ok := value(parseScrape(t, body)["saguin_subscriptions_refused_total"], "reason", "not authorized"); !ok || v != 2 {
		t.Fatalf(`saguin_subscriptions_refused_total{reason="not authorized"} = %v %v, want 2 (one 3.1.1, one MQTT 5)`, v, ok)
	}
}

// Checklist B66 (RFC 0002 "Checking what a user may do"): saguin --acl
// reads users from standard input, one a line, the client id after a tab
// or a space - the space form resolves a %c rule as the tab form does.
func TestB66ACLStdinListTakesTheClientIDAfterASpace(t *testing.T) {
	dir := t.TempDir()
	acl := "roles:\n  cohort:\n    - topic: c/%c/#\n      allow: [write]\nusers:\n  \"cohort-*\": [cohort]\n"
	aclPath := filepath.Join(dir, "acl.yaml")
	if err := os.WriteFile(aclPath, []byte(acl), 0o600); err != nil {
		t.Fatal(err)
	}
	pw := writePasswd(t, dir, map[string]string{"cohort-x": "pw"})
	conf := filepath.Join(dir, "saguin.yaml")
	if err := os.WriteFile(conf, []byte(brokerConfig{MQTT: "password_file: " + pw + "\nacl_file: " + aclPath}.yaml(dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	list := func(in string) string {
		t.Helper()
		cmd := exec.Command(binPath, "--acl", conf)
		cmd.Stdin = strings.NewReader(in)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("saguin --acl with %q on standard input: %v\n%s", in, err, out)
		}
		return string(out)
	}
	space, tab := list("cohort-x c1\n"), list("cohort-x\tc1\n")
	if !strings.Contains(space, "c/c1/#") {
		t.Fatalf("the space form did not resolve %%c to c1:\n%s", space)
	}
	if space != tab {
		t.Fatalf("the space form printed\n%s\nthe tab form\n%s", space, tab)
	}
}

// Checklist B40 (RFC 0002 "Three rule kinds"): a filter crossing two
// channels and the broadcast topics beside them is granted whole when the
// user holds read on every channel it touches and a topic: rule covering
// it; without the topic: rule the same filter is refused.
func TestB40FilterCrossingChannelsIsGrantedWithEveryReadAndATopicRule(t *testing.T) {
	channels := "water-ev:\n  type: append\n  filter: iot/water/+/events/#\nwater-st:\n  type: latest\n  filter: iot/water/+/state/#"
	acl := `roles:
  channels:
    - channel: water-ev
      allow: [read]
    - channel: water-st
      allow: [read]
  topics:
    - topic: iot/water/#
      allow: [read]
users:
  full: [channels, topics]
  chanonly: [channels]
`
	b := aclBroker(t, map[string]string{"full": "pwf", "chanonly": "pwc"}, acl, brokerConfig{Channels: channels})
	full := dialRaw(t, b.addr, codec.Version5)
	full.mustConnect(clientID(t, "full"), login("full", "pwf"))
	if got := full.subscribe(1, "iot/water/w-7/#", 1); got[0] != codec.GrantedQoS1 {
		t.Fatalf("iot/water/w-7/# with read on both channels and a topic: rule: SUBACK 0x%02x, want 0x01", byte(got[0]))
	}
	part := dialRaw(t, b.addr, codec.Version5)
	part.mustConnect(clientID(t, "chanonly"), login("chanonly", "pwc"))
	if got := part.subscribe(1, "iot/water/w-7/#", 1); got[0] != codec.NotAuthorized {
		t.Fatalf("iot/water/w-7/# with read on both channels and no topic: rule: SUBACK 0x%02x, want 0x87", byte(got[0]))
	}
}

// untilQuota publishes payload at QoS 1 to topic, ten at once, and says
// how many were answered before the first 0x97 (10: none was). Each answer
// before it must be one of ok: the rate is asked before the acl_file, so a
// client the file grants nothing is answered 0x87 until its budget is out.
func untilQuota(t *testing.T, c *raw, topic string, payload []byte, ok codec.ReasonCode) int {
	t.Helper()
	for i := uint16(1); i <= 10; i++ {
		c.publish(topic, payload, 1, i)
		switch code := c.expectPuback(i); code {
		case ok:
		case codec.QuotaExceeded:
			return int(i - 1)
		default:
			t.Fatalf("%s: PUBACK 0x%02x, want 0x%02x or 0x97", topic, byte(code), byte(ok))
		}
	}
	return 10
}

// Checklist B30 (RFC 0002 "How fast one client may publish"), the part
// TestB30EntryLimitsAreEnforced leaves: an entry's publish_bytes replaces
// the broker-wide figure at run time, down and up, and a client no pattern
// matches is held to the broker-wide bound. Each publish is about 400
// bytes: a budget of 800 admits two or three, the broker-wide 2000 five or
// six.
func TestB30EntryPublishBytesAndTheUnmatchedClientsBound(t *testing.T) {
	acl := `roles:
  any:
    - topic: "#"
      allow: [write, read]
users:
  small:
    roles: [any]
    limits: {publish_bytes: 800}
  big:
    roles: [any]
    limits: {publish_bytes: 1MiB}
  plain: [any]
`
	b := aclBroker(t, map[string]string{"small": "pws", "big": "pwb", "plain": "pwp", "stranger": "pwx"}, acl, brokerConfig{Limits: "publish_bytes: 2000"})
	payload := []byte(strings.Repeat("x", 400))
	for _, tc := range []struct {
		user, pass string
		answer     codec.ReasonCode
		ok         func(int) bool
		want       string
	}{
		{"small", "pws", codec.Success, func(n int) bool { return n < 4 }, "two or three (its entry's 800 bytes a second)"},
		{"big", "pwb", codec.Success, func(n int) bool { return n == 10 }, "all 10 (its entry's 1 MiB a second)"},
		{"plain", "pwp", codec.Success, func(n int) bool { return n >= 4 && n < 10 }, "the broker-wide 2000 bytes a second"},
		{"stranger", "pwx", codec.NotAuthorized, func(n int) bool { return n >= 4 && n < 10 }, "the broker-wide 2000 bytes a second (no pattern matches it)"},
	} {
		c := dialRaw(t, b.addr, codec.Version5)
		c.mustConnect(clientID(t, tc.user), login(tc.user, tc.pass))
		if n := untilQuota(t, c, "t/"+tc.user, payload, tc.answer); !tc.ok(n) {
			t.Errorf("%s: %d of ten 400-byte publishes at once answered before a 0x97, want %s", tc.user, n, tc.want)
		}
	}
}

// Checklist B29 (RFC 0002 "Which entry applies", "How fast one client may
// publish"): an entry without limits: takes the broker-wide figures at run
// time, not those of a broader entry it shadows - device-7 publishes at
// the broker-wide 3 a second although device-* carries 1.
func TestB29EntryWithoutLimitsTakesTheBrokerWideFiguresNotAShadowedEntrys(t *testing.T) {
	acl := `roles:
  dev:
    - topic: "#"
      allow: [write]
users:
  "device-*":
    roles: [dev]
    limits: {publish_rate: 1}
  device-7: [dev]
`
	b := aclBroker(t, map[string]string{"device-7": "pw7", "device-8": "pw8"}, acl, brokerConfig{Limits: "publish_rate: 3"})
	for _, tc := range []struct {
		user, pass string
		ok         func(int) bool
		want       string
	}{
		{"device-7", "pw7", func(n int) bool { return n >= 3 && n < 10 }, "the broker-wide 3 a second, not device-*'s 1"},
		{"device-8", "pw8", func(n int) bool { return n < 3 }, "fewer than 3 (device-*'s 1 a second)"},
	} {
		c := dialRaw(t, b.addr, codec.Version5)
		c.mustConnect(clientID(t, tc.user), login(tc.user, tc.pass))
		if n := untilRefused(t, c, "t/"+tc.user); !tc.ok(n) {
			t.Errorf("%s: %d of ten publishes at once acknowledged before a 0x97, want %s", tc.user, n, tc.want)
		}
	}
}

// broadcastACL grants writer write on b/#, and reader read on b/# -
// narrowed to b/ok/# when narrowed is true.
func broadcastACL(narrowed bool) string {
	read := "b/#"
	if narrowed {
		read = "b/ok/#"
	}
	return "roles:\n  writer:\n    - topic: b/#\n      allow: [write]\n  reader:\n    - topic: " + read + "\n      allow: [read]\n" +
		"users:\n  writer: [writer]\n  reader: [reader]\n"
}

// Checklist B55 (notes-0003 "Broadcast: What a delivery carries"): a QoS 1
// broadcast delivery the acl_file disallows at that moment is not sent and
// the session releases it as if acknowledged - three refused ones do not
// fill a Receive Maximum of 2, so the granted ones behind them are sent,
// and after the grant returns and the session reconnects nothing refused
// is sent again.
func TestB55RefusedBroadcastDeliveryIsReleasedAsIfAcknowledged(t *testing.T) {
	b := aclBroker(t, map[string]string{"writer": "pww", "reader": "pwr"}, broadcastACL(false), brokerConfig{})
	w := dialRaw(t, b.addr, codec.Version5)
	w.mustConnect("writer-1", login("writer", "pww"))
	rm2 := func(c *codec.Connect) {
		c.Properties.ReceiveMaximum = 2
		c.Properties.Present.Set(codec.PropReceiveMaximum)
	}
	r := dialRaw(t, b.addr, codec.Version5)
	r.mustConnect("reader-1", both(login("reader", "pwr"), freshSession(600), rm2))
	r.mustSubscribe(1, "b/#", 1)
	// Narrowed after the SUBSCRIBE, which is granted whole or refused.
	b.reread(t, broadcastACL(true))
	for i := uint16(1); i <= 3; i++ {
		w.publishQoS1(fmt.Sprintf("b/no/%d", i), []byte("refused"), i)
	}
	w.publishQoS1("b/ok/1", []byte("one"), 4)
	w.publishQoS1("b/ok/2", []byte("two"), 5)
	for _, want := range []string{"one", "two"} {
		p := r.expectPublishWithin(waitLong)
		if string(p.Payload) != want {
			t.Fatalf("got %q on %s, want %q: a refused delivery was sent", p.Payload, p.Topic, want)
		}
		r.ackDelivery(p)
	}
	// Refused while away: asked again when the resumed session sends it.
	r.disconnect()
	w.publishQoS1("b/no/4", []byte("refused"), 6)
	back := dialRaw(t, b.addr, codec.Version5)
	if ack := back.mustConnect("reader-1", both(login("reader", "pwr"), session(600), rm2)); !ack.SessionPresent {
		t.Fatal("the session was not kept")
	}
	w.publishQoS1("b/ok/3", []byte("three"), 7)
	if p := back.expectPublishWithin(waitLong); string(p.Payload) != "three" {
		t.Fatalf("the resumed session got %q on %s, want three: a refused delivery was sent", p.Payload, p.Topic)
	} else {
		back.ackDelivery(p)
	}
	back.disconnect()
	b.reread(t, broadcastACL(false))
	again := dialRaw(t, b.addr, codec.Version5)
	if ack := again.mustConnect("reader-1", both(login("reader", "pwr"), session(600), rm2)); !ack.SessionPresent {
		t.Fatal("the session was not kept")
	}
	again.expectNothing("a refused delivery is released as if acknowledged: the grant returning sends nothing again")
	w.publishQoS1("b/ok/end", []byte("end"), 8)
	if got := again.readUntil("end"); len(got) != 0 {
		t.Fatalf("before a publish after the reconnect: %d PUBLISH (first %q on %s), want none", len(got), got[0].Payload, got[0].Topic)
	}
}

// Checklist B4 (RFC 0002 "What a client may do"): beside an acl_file, a
// door with no password file that requires no client certificate - a
// pure-certificate estate's unix socket, a plain ws door - is warned about,
// at WARN when the broker starts and by --check-config, which still
// accepts the file; the tls door requiring a certificate is not named.
func TestB4DoorNothingIdentifiesBesideAnACLFileIsWarnedAbout(t *testing.T) {
	saguinOnly(t, "the test starts saguin with its own doors")
	dir := t.TempDir()
	p := newPKI(t, dir)
	acl := filepath.Join(dir, "acl.yaml")
	if err := os.WriteFile(acl, []byte(authACL), 0o600); err != nil {
		t.Fatal(err)
	}
	listen := "tcp:\n  - name: devices\n    address: 127.0.0.1:0\n    tls:\n      cert_file: " + p.serverCert + "\n      key_file: " + p.serverKey + "\n      client_ca_file: " + p.caFile + "\n" +
		"unix:\n  path: $DIR/mqtt.sock\n" +
		"ws:\n  address: 127.0.0.1:0\n"
	b := startBrokerIn(t, dir, brokerConfig{MQTT: "acl_file: " + acl, Listen: listen})
	for _, door := range []string{"broker.mqtt.listen.unix", "broker.mqtt.listen.ws"} {
		if b.log.wait(regexp.MustCompile(`level=WARN.*`+regexp.QuoteMeta(door)+`.*no password file and requires no client certificate`), waitLong) == "" {
			t.Errorf("the start gives no warning naming %s:\n%s", door, b.log)
		}
	}
	// The warnings are one pass over the doors, said before the ones above.
	for _, line := range b.log.snapshot() {
		if regexp.MustCompile(`broker\.mqtt\.listen\.tcp.*requires no client certificate`).MatchString(line) {
			t.Errorf("the tls door requiring a certificate is warned about: %s", line)
		}
	}
	out, errs, code := runCLI(t, "--check-config", filepath.Join(dir, "saguin.yaml"))
	if code != 0 {
		t.Fatalf("--check-config: exit %d, want 0 (a warning, not an error): %s%s", code, out, errs)
	}
	for _, door := range []string{"broker.mqtt.listen.unix", "broker.mqtt.listen.ws"} {
		if !regexp.MustCompile(regexp.QuoteMeta(door) + `.*no password file and requires no client certificate`).MatchString(out + errs) {
			t.Errorf("--check-config gives no warning naming %s:\n%s%s", door, out, errs)
		}
	}
}

// Checklist B32 (RFC 0002 "How fast one client may publish"): a publish
// over its client's budget is refused 0x97 and logged at debug, not warn -
// one line a refused publish would flood the log under load - naming the
// client, the topic and why.
func TestB32OverBudgetRefusalIsLoggedAtDebug(t *testing.T) {
	saguinOnly(t, "the test needs a saguin started with its own limits")
	b := startBroker(t, brokerConfig{Limits: "publish_rate: 1"})
	id, topic := clientID(t, "over"), "t/"+uniq(t)
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect(id, nil)
	if n := untilRefused(t, c, topic); n == 10 {
		t.Fatal("ten publishes at once at publish_rate 1 were all acknowledged")
	}
	line := b.log.wait(regexp.MustCompile(`msg="publish refused" .*client_id=`+regexp.QuoteMeta(id)+` topic=`+regexp.QuoteMeta(topic)+` .*why="publish rate exceeded"`), waitLong)
	if line == "" {
		t.Fatalf("no line says the publish was refused for its rate:\n%s", b.log)
	}
	if !strings.Contains(line, "level=DEBUG") {
		t.Errorf("the over-budget refusal is logged %q, want at debug", line)
	}
}
