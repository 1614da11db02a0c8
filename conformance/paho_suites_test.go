package conformance

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	pahov3 "github.com/eclipse/paho.mqtt.golang"

	"github.com/saguin-edge/saguin/codec"
)

// The cases of the Eclipse Paho interoperability suites (paho.mqtt.testing's
// interoperability/client_test.py for 3.1.1 and client_test5.py for MQTT 5),
// run with Eclipse Paho's Go clients - paho.mqtt.golang on 3.1.1, paho.golang
// on 5 - against the binary started as docs/authentication.md "Running the
// Paho suites" says: examples/paho-acl.yaml as the acl_file, the suites'
// door checking no name, a second door with a password file. Each test is
// one case of the suites, on the suites' own topics and client ids.

// pahoTopics are the suites' topics and wildcards (paho.mqtt.testing's
// topics, wildtopics and nosubscribe_topics).
var (
	pahoTopics      = []string{"TopicA", "TopicA/B", "Topic/C", "TopicA/C", "/TopicA"}
	pahoWildTopics  = []string{"TopicA/+", "+/C", "#", "/#", "/+", "+/+", "TopicA/#"}
	pahoNoSubscribe = "test/nosubscribe"
)

// pahoBroker starts saguin as the doc's Paho configuration does.
func pahoBroker(t *testing.T) *brokerProc {
	t.Helper()
	saguinOnly(t, "the suites run against a saguin started with examples/paho-acl.yaml")
	acl, err := filepath.Abs("../examples/paho-acl.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pw := writePasswd(t, dir, map[string]string{"admin": "pwa"})
	listen := "tcp:\n  - name: paho\n    address: 127.0.0.1:0\n  - name: guarded\n    address: 127.0.0.1:0\n    password_file: " + pw + "\n"
	return startBrokerIn(t, dir, brokerConfig{MQTT: "acl_file: " + acl, Listen: listen})
}

// pahoV3 connects a paho.mqtt.golang 3.1.1 client as the suites' clients
// connect (no user name), handing every message it is sent to got.
func pahoV3(t *testing.T, addr, id string, clean bool, got chan<- pahov3.Message) pahov3.Client {
	t.Helper()
	o := pahov3.NewClientOptions().AddBroker("tcp://" + addr).SetClientID(id).SetCleanSession(clean).
		SetProtocolVersion(4).SetAutoReconnect(false).SetConnectTimeout(waitLong)
	if got != nil {
		o.SetDefaultPublishHandler(func(_ pahov3.Client, m pahov3.Message) { got <- m })
	}
	c := pahov3.NewClient(o)
	pahoWait(t, c.Connect(), "connect "+id)
	t.Cleanup(func() { c.Disconnect(50) })
	return c
}

func pahoWait(t *testing.T, tok pahov3.Token, what string) {
	t.Helper()
	if !tok.WaitTimeout(waitLong) || tok.Error() != nil {
		t.Fatalf("%s: %v", what, tok.Error())
	}
}

// pahoV5 connects a paho.golang MQTT 5 client, handing every message it is
// sent to got.
func pahoV5(t *testing.T, addr, id string, got chan<- *paho.Publish) *paho.Client {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	cfg := paho.ClientConfig{Conn: conn}
	if got != nil {
		cfg.OnPublishReceived = []func(paho.PublishReceived) (bool, error){
			func(pr paho.PublishReceived) (bool, error) { got <- pr.Packet; return true, nil },
		}
	}
	c := paho.NewClient(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if _, err := c.Connect(ctx, &paho.Connect{ClientID: id, CleanStart: true, KeepAlive: 30}); err != nil {
		t.Fatalf("connect %s: %v", id, err)
	}
	t.Cleanup(func() { c.Disconnect(&paho.Disconnect{}) })
	return c
}

// nextV3 is the next message got was handed.
func nextV3(t *testing.T, got <-chan pahov3.Message, what string) pahov3.Message {
	t.Helper()
	select {
	case m := <-got:
		return m
	case <-time.After(waitLong):
		t.Fatalf("%s: nothing delivered", what)
		return nil
	}
}

// test_subscribe_failure: a SUBSCRIBE to test/nosubscribe is refused -
// 0x80 on 3.1.1, as the suite asserts; 0x87 Not authorized on MQTT 5, where
// client_test5.py still asserts 0x80 (a code meaning "unspecified error",
// which Sagüin keeps for what is not an authorization refusal).
func TestPahoSuitesSubscribeFailureOnTestNosubscribe(t *testing.T) {
	b := pahoBroker(t)
	c := pahoV3(t, b.addr, "myclientid", true, nil)
	tok := c.Subscribe(pahoNoSubscribe, 2, nil)
	pahoWait(t, tok, "subscribe")
	if got := tok.(*pahov3.SubscribeToken).Result()[pahoNoSubscribe]; got != 0x80 {
		t.Fatalf("3.1.1 SUBACK 0x%02x for %s, want 0x80", got, pahoNoSubscribe)
	}
	c5 := pahoV5(t, b.addr, "myclientid2", nil)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	sa, err := c5.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: pahoNoSubscribe, QoS: 2}}})
	if sa == nil || len(sa.Reasons) != 1 || sa.Reasons[0] != byte(codec.NotAuthorized) {
		t.Fatalf("MQTT 5 SUBACK %+v (%v) for %s, want 0x87", sa, err, pahoNoSubscribe)
	}
}

// test_basic: a subscription at QoS 2 is sent a publish at each QoS once,
// at that QoS, on both protocols.
func TestPahoSuitesBasicDeliversEachQoS(t *testing.T) {
	b := pahoBroker(t)
	got := make(chan pahov3.Message, 8)
	c := pahoV3(t, b.addr, "myclientid", true, got)
	pahoWait(t, c.Subscribe(pahoTopics[0], 2, nil), "subscribe")
	for q := byte(0); q <= 2; q++ {
		pahoWait(t, c.Publish(pahoTopics[0], q, false, []byte{'q', '0' + q}), "publish")
	}
	for q := byte(0); q <= 2; q++ {
		if m := nextV3(t, got, "3.1.1"); string(m.Payload()) != string([]byte{'q', '0' + q}) || m.Qos() != q {
			t.Fatalf("3.1.1 got %q at QoS %d, want q%d at %d", m.Payload(), m.Qos(), q, q)
		}
	}

	got5 := make(chan *paho.Publish, 8)
	c5 := pahoV5(t, b.addr, "myclientid2", got5)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if _, err := c5.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: pahoTopics[1], QoS: 2}}}); err != nil {
		t.Fatal(err)
	}
	for q := byte(0); q <= 2; q++ {
		if _, err := c5.Publish(ctx, &paho.Publish{Topic: pahoTopics[1], QoS: q, Payload: []byte{'q', '0' + q}}); err != nil {
			t.Fatal(err)
		}
	}
	for q := byte(0); q <= 2; q++ {
		select {
		case m := <-got5:
			if string(m.Payload) != string([]byte{'q', '0' + q}) || m.QoS != q {
				t.Fatalf("MQTT 5 got %q at QoS %d, want q%d at %d", m.Payload, m.QoS, q, q)
			}
		case <-ctx.Done():
			t.Fatalf("MQTT 5: q%d not delivered", q)
		}
	}
}

// test_overlapping_subscriptions: a publish matching two of a client's
// filters (TopicA/+ at 2, TopicA/# at 1) is sent once, at the higher QoS -
// the suite takes one message or one per filter; Sagüin sends one.
func TestPahoSuitesOverlappingSubscriptionsAreOneMessageAtTheHigherQoS(t *testing.T) {
	b := pahoBroker(t)
	got := make(chan pahov3.Message, 8)
	c := pahoV3(t, b.addr, "myclientid", true, got)
	pahoWait(t, c.SubscribeMultiple(map[string]byte{pahoWildTopics[6]: 2, pahoWildTopics[0]: 1}, nil), "subscribe")
	pahoWait(t, c.Publish(pahoTopics[3], 2, false, "overlapping topic filters"), "publish")
	// A second publish reaching both filters: what comes after the first
	// message shows whether the first was sent twice.
	pahoWait(t, c.Publish(pahoTopics[1], 1, false, "marker"), "publish")
	if m := nextV3(t, got, "overlap"); string(m.Payload()) != "overlapping topic filters" || m.Qos() != 2 {
		t.Fatalf("got %q at QoS %d, want the publish at QoS 2", m.Payload(), m.Qos())
	}
	if m := nextV3(t, got, "marker"); string(m.Payload()) != "marker" {
		t.Fatalf("got %q, want the marker: the overlapping publish was sent twice", m.Payload())
	}
}

// test_will_message: a client whose connection drops without DISCONNECT
// has its Will published to a subscriber (of the suite's other client id).
func TestPahoSuitesWillIsPublishedWhenTheClientDies(t *testing.T) {
	b := pahoBroker(t)
	got := make(chan pahov3.Message, 4)
	sub := pahoV3(t, b.addr, "myclientid2", false, got)
	pahoWait(t, sub.Subscribe(pahoTopics[2], 2, nil), "subscribe")
	dying := dialRaw(t, b.addr, codec.Version311)
	dying.mustConnect("myclientid", func(c *codec.Connect) {
		c.WillFlag, c.WillTopic, c.WillPayload, c.KeepAlive = true, []byte(pahoTopics[2]), []byte("client not disconnected"), 2
	})
	dying.nc.Close() // the suite's terminate(): the socket closed, no DISCONNECT
	if m := nextV3(t, got, "will"); string(m.Payload()) != "client not disconnected" || m.Topic() != pahoTopics[2] {
		t.Fatalf("got %q on %s, want the Will", m.Payload(), m.Topic())
	}
}

// test_unsubscribe: of three subscriptions, the one unsubscribed is sent
// nothing and the other two are sent theirs.
func TestPahoSuitesUnsubscribeStopsThatFilterAlone(t *testing.T) {
	b := pahoBroker(t)
	got := make(chan pahov3.Message, 8)
	c := pahoV3(t, b.addr, "myclientid2", true, got)
	for _, f := range pahoTopics[:3] {
		pahoWait(t, c.Subscribe(f, 2, nil), "subscribe "+f)
	}
	pahoWait(t, c.Unsubscribe(pahoTopics[0]), "unsubscribe")
	pub := pahoV3(t, b.addr, "myclientid", true, nil)
	for _, p := range pahoTopics[:3] {
		pahoWait(t, pub.Publish(p, 1, false, p), "publish "+p)
	}
	// One publisher's messages arrive in order: TopicA's would come first.
	for _, want := range pahoTopics[1:3] {
		if m := nextV3(t, got, want); m.Topic() != want {
			t.Fatalf("got %q on %s, want %s's (the unsubscribed TopicA is sent nothing)", m.Payload(), m.Topic(), want)
		}
	}
}

// test_zero_length_clientid: an empty client id is refused with a kept
// session (3.1.1 0x02) and admitted with a clean one.
func TestPahoSuitesZeroLengthClientID(t *testing.T) {
	b := pahoBroker(t)
	if ack := dialRaw(t, b.addr, codec.Version311).connect("", func(c *codec.Connect) { c.CleanStart = false }); ack.ReasonCode != codec.ConnRefusedIdentifier311 {
		t.Fatalf("empty id, kept session: CONNACK 0x%02x, want 0x02", byte(ack.ReasonCode))
	}
	pahoV3(t, b.addr, "", true, nil)
}

// The suites' wildcard cases that also reach test/nosubscribe (# in
// cleanRetained, +/+ in test_retained_message, test_offline_message_queueing
// and test_dollar_topics) are refused under examples/paho-acl.yaml: the
// acl_file only grants, and a subscription is granted whole. The doc says
// those cases fail by design; this holds the broker to it.
func TestPahoSuitesWildcardsReachingTestNosubscribeAreRefused(t *testing.T) {
	b := pahoBroker(t)
	c := pahoV3(t, b.addr, "myclientid", true, nil)
	for _, f := range []string{pahoWildTopics[2], pahoWildTopics[5]} {
		tok := c.Subscribe(f, 2, nil)
		pahoWait(t, tok, "subscribe "+f)
		if got := tok.(*pahov3.SubscribeToken).Result()[f]; got != 0x80 {
			t.Fatalf("SUBACK 0x%02x for %s, want 0x80", got, f)
		}
	}
	// The suites' other wildcards lie inside the granted trees.
	for _, f := range []string{pahoWildTopics[0], pahoWildTopics[1], pahoWildTopics[3], pahoWildTopics[4], pahoWildTopics[6]} {
		tok := c.Subscribe(f, 2, nil)
		pahoWait(t, tok, "subscribe "+f)
		if got := tok.(*pahov3.SubscribeToken).Result()[f]; got != 2 {
			t.Fatalf("SUBACK 0x%02x for %s, want 0x02", got, f)
		}
	}
}
