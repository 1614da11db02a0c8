package conformance

import (
	"strings"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// RFC 0003 "Last Will", RFC 0002 "Every reason code, in one place" (CONNACK
// 0x90), MQTT 5 3.1.2.5 and 3.1.3.2, MQTT 3.1.1 3.1.2.5.

// will arms a Will on topic with payload; delay is MQTT 5's Will Delay
// Interval in seconds (ignored on 3.1.1).
func will(topic, payload string, qos byte, retain bool, delay uint32) func(*codec.Connect) {
	return func(c *codec.Connect) {
		c.WillFlag = true
		c.WillTopic = []byte(topic)
		c.WillPayload = []byte(payload)
		c.WillQoS = qos
		c.WillRetain = retain
		if c.Version == codec.Version5 && delay > 0 {
			c.WillProperties.WillDelay = delay
			c.WillProperties.Present.Set(codec.PropWillDelay)
		}
	}
}

// watcher connects a subscriber to filter at QoS 1.
func watcher(t *testing.T, addr string, v byte, filter string) *raw {
	t.Helper()
	w := dialRaw(t, addr, v)
	w.mustConnect(clientID(t, "watch"), nil)
	w.mustSubscribe(1, filter, 1)
	return w
}

func TestMqttWillIsPublishedWhenTheConnectionDropsWithoutDisconnect(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := mqttTarget(t)
		topic := uniq(t)
		w := watcher(t, addr, v, topic+"/#")
		c := dialRaw(t, addr, v)
		c.mustConnect(clientID(t, "dev"), will(topic+"/status", "offline", 1, false, 0))
		c.drop()
		p := w.expectPublish()
		if string(p.Topic) != topic+"/status" || string(p.Payload) != "offline" || p.QoS != 1 {
			t.Fatalf("got %s %q at QoS %d, want the Will (MQTT-3.1.2-8)", p.Topic, p.Payload, p.QoS)
		}
	})
}

func TestMqttWillIsDiscardedByANormalDisconnect(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := mqttTarget(t)
		topic := uniq(t)
		w := watcher(t, addr, v, topic+"/#")
		c := dialRaw(t, addr, v)
		c.mustConnect(clientID(t, "dev"), will(topic+"/status", "offline", 1, false, 0))
		c.disconnect()
		w.expectNothing("a Will after DISCONNECT 0x00 (MQTT-3.1.2-10)")
	})
}

func TestMqttDisconnectWithWillMessagePublishesTheWill(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	w := watcher(t, addr, codec.Version5, topic+"/#")
	c := dialRaw(t, addr, codec.Version5)
	c.mustConnect(clientID(t, "dev"), will(topic+"/status", "offline", 1, false, 0))
	c.send((&codec.Disconnect{ReasonCode: codec.DisconnectWithWillMessage}).Append(nil, codec.Version5))
	if p := w.expectPublish(); string(p.Payload) != "offline" {
		t.Fatalf("got %q, want the Will after DISCONNECT 0x04 (MQTT 5 3.14.2.1)", p.Payload)
	}
}

func TestMqttWillWaitsOutItsWillDelayInterval(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	w := watcher(t, addr, codec.Version5, topic+"/#")
	c := dialRaw(t, addr, codec.Version5)
	c.mustConnect(clientID(t, "dev"), both(freshSession(60), will(topic+"/status", "late", 1, false, 3)))
	c.drop()
	w.quietFor(1500*time.Millisecond, "inside the Will Delay Interval (MQTT 5 3.1.3.2.2)")
	if p := w.expectPublishWithin(5 * time.Second); string(p.Payload) != "late" {
		t.Fatalf("got %q, want the delayed Will", p.Payload)
	}
}

func TestMqttWillDelayIsCancelledByTheSessionResuming(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	id := clientID(t, "dev")
	w := watcher(t, addr, codec.Version5, topic+"/#")
	c := dialRaw(t, addr, codec.Version5)
	c.mustConnect(id, both(freshSession(60), will(topic+"/status", "flap", 1, false, 2)))
	c.drop()
	back := dialRaw(t, addr, codec.Version5)
	if ack := back.mustConnect(id, session(60)); !ack.SessionPresent {
		t.Fatal("Session Present 0")
	}
	w.quietFor(3500*time.Millisecond, "a delayed Will after its session resumed (MQTT-3.1.3-9)")
}

func TestMqttWillIsDueAtSessionEndWhenThatComesBeforeItsDelay(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	w := watcher(t, addr, codec.Version5, topic+"/#")
	c := dialRaw(t, addr, codec.Version5)
	c.mustConnect(clientID(t, "dev"), both(freshSession(1), will(topic+"/status", "ended", 1, false, 600)))
	c.drop()
	if p := w.expectPublishWithin(5 * time.Second); string(p.Payload) != "ended" {
		t.Fatalf("got %q, want the Will at the session's end, one second in (MQTT 5 3.1.3.2.2)", p.Payload)
	}
}

func TestMqttWillOfAConnectionBoundSessionIsPublishedAtDisconnectWhateverItsDelay(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	w := watcher(t, addr, codec.Version5, topic+"/#")
	c := dialRaw(t, addr, codec.Version5)
	c.mustConnect(clientID(t, "dev"), will(topic+"/status", "now", 1, false, 600)) // no Session Expiry
	c.drop()
	if p := w.expectPublishWithin(3 * time.Second); string(p.Payload) != "now" {
		t.Fatalf("got %q, want the Will as the session ends with its connection", p.Payload)
	}
}

func TestMqttWillCarriesItsPublishProperties(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	w := watcher(t, addr, codec.Version5, topic+"/#")
	c := dialRaw(t, addr, codec.Version5)
	c.mustConnect(clientID(t, "dev"), both(will(topic+"/status", "gone", 1, false, 0), func(p *codec.Connect) {
		wp := &p.WillProperties
		wp.ContentType = []byte("text/plain")
		wp.Present.Set(codec.PropContentType)
		wp.PayloadFormat = 1
		wp.Present.Set(codec.PropPayloadFormat)
		wp.MessageExpiry = 300
		wp.Present.Set(codec.PropMessageExpiry)
		wp.ResponseTopic = []byte(topic + "/r")
		wp.Present.Set(codec.PropResponseTopic)
		wp.CorrelationData = []byte("cd")
		wp.Present.Set(codec.PropCorrelationData)
		wp.AddUser([]byte("site"), []byte("depot"))
	}))
	c.drop()
	p := w.expectPublish()
	pr := &p.Properties
	if string(pr.ContentType) != "text/plain" || pr.PayloadFormat != 1 || string(pr.ResponseTopic) != topic+"/r" || string(pr.CorrelationData) != "cd" {
		t.Fatalf("content type %q format %d response %q correlation %q: want the Will's own (MQTT 5 3.1.3.2)", pr.ContentType, pr.PayloadFormat, pr.ResponseTopic, pr.CorrelationData)
	}
	if !pr.Present.Has(codec.PropMessageExpiry) || pr.MessageExpiry == 0 || pr.MessageExpiry > 300 {
		t.Fatalf("Message Expiry %d (present %v), want at most 300", pr.MessageExpiry, pr.Present.Has(codec.PropMessageExpiry))
	}
	if got := strings.Join(userProps(pr), ","); got != "site=depot" {
		t.Fatalf("user properties %q, want site=depot", got)
	}
}

func TestMqttRetainedWillIsKeptAsTheTopicsRetainedValue(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := mqttTarget(t)
		topic := uniq(t)
		w := watcher(t, addr, v, topic+"/#")
		c := dialRaw(t, addr, v)
		c.mustConnect(clientID(t, "dev"), will(topic+"/status", "offline", 1, true, 0))
		c.drop()
		w.expectPublish()
		late := dialRaw(t, addr, v)
		late.mustConnect(clientID(t, "late"), nil)
		late.mustSubscribe(1, topic+"/#", 1)
		if p := late.expectPublish(); !p.Retain || string(p.Payload) != "offline" {
			t.Fatalf("got %q retain %v, want the Will as the retained value (MQTT-3.1.2-17)", p.Payload, p.Retain)
		}
	})
}

func TestMqttTakenOverConnectionsWillIsPublished(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := mqttTarget(t)
		topic := uniq(t)
		id := clientID(t, "dev")
		w := watcher(t, addr, v, topic+"/#")
		old := dialRaw(t, addr, v)
		old.mustConnect(id, will(topic+"/status", "replaced", 1, false, 0))
		dialRaw(t, addr, v).mustConnect(id, nil)
		if p := w.expectPublish(); string(p.Payload) != "replaced" {
			t.Fatalf("got %q, want the replaced connection's Will (RFC 0003 \"Sessions\": published if its delay is 0)", p.Payload)
		}
	})
}

// TestWillIsPublishedAsTheClientThatArmedIt: a No Local subscription of the
// Will's own client id, on the session that resumes, is not sent that
// client's Will (RFC 0003 "No Local": Wills are published as the client that
// armed them).
func TestWillIsPublishedAsTheClientThatArmedIt(t *testing.T) {
	saguinOnly(t, "MQTT does not say whose publish a Will is; RFC 0003 \"No Local\" does")
	addr := mqttTarget(t)
	topic := uniq(t)
	id := clientID(t, "dev")
	w := watcher(t, addr, codec.Version5, topic+"/#")
	c := dialRaw(t, addr, codec.Version5)
	c.mustConnect(id, both(freshSession(60), will(topic+"/status", "mine", 1, false, 0)))
	c.subscribeWith(1, nil, codec.Subscription{Filter: []byte(topic + "/#"), QoS: 1, NoLocal: true})
	old := c
	newer := dialRaw(t, addr, codec.Version5)
	newer.mustConnect(id, session(60)) // takes over: the old connection's Will fires
	old.expectClosed()
	if p := w.expectPublish(); string(p.Payload) != "mine" {
		t.Fatalf("the watcher got %q, want the Will", p.Payload)
	}
	newer.expectNothing("its own Will on a No Local subscription")
}

// TestWillThatCouldNeverBeDeliveredIsRefused0x90 holds RFC 0002's CONNACK
// 0x90 row and RFC 0003 "Last Will - What is refused": each topic below is
// one nothing may publish to. 3.1.1 is told 0x05.
func TestWillThatCouldNeverBeDeliveredIsRefused0x90(t *testing.T) {
	saguinOnly(t, "MQTT does not refuse these Will topics at CONNECT; RFC 0002 does")
	b := startBroker(t, brokerConfig{Limits: "max_topic_levels: 4\nmax_topic_length: 64"})
	cases := map[string]string{
		"reserved space": "$saguin/anything",
		"plus wildcard":  "a/+/c",
		"hash wildcard":  "a/#",
		"SYS tree":       "$SYS/broker/x",
		"share form":     "$share/g/a",
		"too deep":       "a/b/c/d/e",
		"too long":       strings.Repeat("x", 65),
	}
	for name, topic := range cases {
		t.Run(name, func(t *testing.T) {
			versions(t, func(t *testing.T, v byte) {
				c := dialRaw(t, b.addr, v)
				ack := c.connect(clientID(t, "will"), will(topic, "x", 0, false, 0))
				want := codec.TopicNameInvalid
				if v == codec.Version311 {
					want = codec.ConnRefusedNotAuthorized311
				}
				if ack.ReasonCode != want {
					t.Fatalf("Will on %q: CONNACK 0x%02x, want 0x%02x", topic, byte(ack.ReasonCode), byte(want))
				}
				c.expectClosed()
			})
		})
	}
}

func TestMqttTakenOverConnectionsDelayedWillIsNotPublished(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	id := clientID(t, "dev")
	w := watcher(t, addr, codec.Version5, topic+"/#")
	old := dialRaw(t, addr, codec.Version5)
	old.mustConnect(id, both(freshSession(60), will(topic+"/status", "flap", 1, false, 2)))
	newer := dialRaw(t, addr, codec.Version5)
	if ack := newer.mustConnect(id, session(60)); !ack.SessionPresent {
		t.Fatal("Session Present 0")
	}
	old.expectClosed()
	w.quietFor(3500*time.Millisecond, "the replaced connection's delayed Will after a new connection took the session (MQTT-3.1.3-9)")
}

// TestCleanStartEndingASessionPublishesItsWaitingWill: RFC 0003 "Last Will -
// The delay is Sagüin's": a Clean Start CONNECT ends the session, which
// publishes the waiting Will. MQTT-3.1.2-8 can be read as deleting a Will
// whenever a new connection for the client id opens inside the delay, which
// is what Mosquitto does; RFC 0003 settles the reading.
func TestCleanStartEndingASessionPublishesItsWaitingWill(t *testing.T) {
	saguinOnly(t, "MQTT-3.1.2-8 is read either way; RFC 0003 publishes the Will, Mosquitto drops it")
	addr := mqttTarget(t)
	topic := uniq(t)
	id := clientID(t, "dev")
	w := watcher(t, addr, codec.Version5, topic+"/#")
	c := dialRaw(t, addr, codec.Version5)
	c.mustConnect(id, both(freshSession(600), will(topic+"/status", "ended", 1, false, 600)))
	c.drop()
	w.expectNothing("a Will inside its delay")
	dialRaw(t, addr, codec.Version5).mustConnect(id, nil) // Clean Start ends the session
	if p := w.expectPublishWithin(5 * time.Second); string(p.Payload) != "ended" {
		t.Fatalf("got %q, want the waiting Will published as Clean Start ends its session (MQTT 5 3.1.3.2.2)", p.Payload)
	}
}

// TestRefusedConnectTouchesNothing: RFC 0003 "Sessions" - every check that
// can refuse a CONNECT runs before the session is looked at, so a refused
// CONNECT for a connected client id neither takes it over nor ends it.
func TestRefusedConnectTouchesNothing(t *testing.T) {
	saguinOnly(t, "the refusal used (a Will on $saguin/) is RFC 0002's")
	addr := mqttTarget(t)
	topic := uniq(t)
	id := clientID(t, "owner")
	owner := dialRaw(t, addr, codec.Version5)
	owner.mustConnect(id, freshSession(60))
	owner.mustSubscribe(1, topic+"/#", 1)
	bad := dialRaw(t, addr, codec.Version5)
	if ack := bad.connect(id, will("$saguin/x", "x", 0, false, 0)); ack.ReasonCode != codec.TopicNameInvalid {
		t.Fatalf("CONNACK 0x%02x, want 0x90", byte(ack.ReasonCode))
	}
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.publishQoS1(topic+"/x", []byte("still"), 1)
	if p := owner.expectPublish(); string(p.Payload) != "still" {
		t.Fatalf("the owner got %q, want it still connected and subscribed", p.Payload)
	}
}

// TestWillIsDueAtTheGrantedSessionExpiryNotTheRequested: RFC 0003 "Last
// Will" - a session shorter than the delay makes the Will due at session
// end, using the granted expiry (limits.max_session_expiry caps it).
func TestWillIsDueAtTheGrantedSessionExpiryNotTheRequested(t *testing.T) {
	saguinOnly(t, "limits.max_session_expiry is Sagüin's key")
	b := startBroker(t, brokerConfig{Limits: "max_session_expiry: 2s"})
	topic := uniq(t)
	w := watcher(t, b.addr, codec.Version5, topic+"/#")
	c := dialRaw(t, b.addr, codec.Version5)
	ack := c.mustConnect(clientID(t, "dev"), both(freshSession(3600), will(topic+"/status", "capped", 1, false, 3600)))
	if ack.Properties.SessionExpiry != 2 {
		t.Fatalf("granted Session Expiry %d, want 2", ack.Properties.SessionExpiry)
	}
	c.drop()
	w.quietFor(time.Second, "a Will inside the granted two seconds")
	if p := w.expectPublishWithin(5 * time.Second); string(p.Payload) != "capped" {
		t.Fatalf("got %q, want the Will at the granted expiry", p.Payload)
	}
}
