package conformance

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// RFC 0002 "Publishing", "How deep a topic may be", "How fast one client may
// publish"; RFC 0003 "The reserved prefix on a client's own packets", "When a
// record is too large for a subscriber", "Broadcast" (expiry); MQTT 5 3.3.

// publishAs sends p at QoS 1 under id and returns the PUBACK's code.
func (c *raw) publishAs(p *codec.Publish, id uint16) codec.ReasonCode {
	c.t.Helper()
	p.QoS, p.PacketID = 1, id
	c.sendPublish(p)
	return c.expectAck(codec.TypePuback, id)
}

func TestPublishDeeperThanMaxTopicLevelsIsRefused0x90(t *testing.T) {
	saguinOnly(t, "limits.max_topic_levels is Sagüin's key")
	b := startBroker(t, brokerConfig{Limits: "max_topic_levels: 3"})
	versions(t, func(t *testing.T, v byte) {
		c := dialRaw(t, b.addr, v)
		c.mustConnect(clientID(t, "deep"), nil)
		c.publishQoS1("a/b/c", []byte("x"), 1) // at the bound
		c.publish("a/b/c/d", []byte("x"), 1, 2)
		if v == codec.Version311 {
			c.expectClosedSilently() // a refusal 3.1.1 cannot be told closes the connection
			return
		}
		if code := c.expectAck(codec.TypePuback, 2); code != codec.TopicNameInvalid {
			t.Fatalf("PUBACK 0x%02x, want 0x90", byte(code))
		}
	})
}

func TestPublishToTheShareFormIsRefused0x90ButSHAREIsATopic(t *testing.T) {
	saguinOnly(t, "MQTT leaves a publish to $share/… to the server; RFC 0002 refuses it")
	addr := mqttTarget(t)
	c := dialRaw(t, addr, codec.Version5)
	c.mustConnect(clientID(t, "share"), nil)
	c.publish("$share/g/a", []byte("x"), 1, 1)
	if code := c.expectAck(codec.TypePuback, 1); code != codec.TopicNameInvalid {
		t.Fatalf("$share/g/a: PUBACK 0x%02x, want 0x90", byte(code))
	}
	c.publish("$SHARE/g/a", []byte("x"), 1, 2)
	if code := c.expectAck(codec.TypePuback, 2); code != codec.Success {
		t.Fatalf("$SHARE/g/a: PUBACK 0x%02x, want 0x00 (an ordinary topic)", byte(code))
	}
}

func TestPublishOverMaxHeaderCountIsRefused0x97(t *testing.T) {
	saguinOnly(t, "limits.max_header_count is Sagüin's key")
	b := startBroker(t, brokerConfig{Limits: "max_header_count: 2"})
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect(clientID(t, "hdr"), nil)
	p := &codec.Publish{Topic: []byte(uniq(t)), Payload: []byte("x")}
	p.Properties.AddUser([]byte("a"), []byte("1"))
	p.Properties.AddUser([]byte("b"), []byte("2"))
	if code := c.publishAs(p, 1); code != codec.Success {
		t.Fatalf("two User Properties at max_header_count 2: PUBACK 0x%02x", byte(code))
	}
	p.Properties.AddUser([]byte("c"), []byte("3"))
	if code := c.publishAs(p, 2); code != codec.QuotaExceeded {
		t.Fatalf("three User Properties: PUBACK 0x%02x, want 0x97", byte(code))
	}
}

func TestPublishOverMaxHeaderBytesIsRefused0x97(t *testing.T) {
	saguinOnly(t, "limits.max_header_bytes is Sagüin's key")
	b := startBroker(t, brokerConfig{Limits: "max_header_bytes: 64"})
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect(clientID(t, "hdrb"), nil)
	p := &codec.Publish{Topic: []byte(uniq(t)), Payload: []byte("x")}
	p.Properties.AddUser([]byte("k"), []byte(strings.Repeat("v", 100)))
	if code := c.publishAs(p, 1); code != codec.QuotaExceeded {
		t.Fatalf("101 bytes of headers at max_header_bytes 64: PUBACK 0x%02x, want 0x97", byte(code))
	}
}

// TestPublishOverPublishRateIsRefused0x97AndTheBudgetOutlivesTheConnection:
// RFC 0002 "How fast one client may publish" - the budget belongs to the
// client id, so reconnecting does not refill it.
func TestPublishOverPublishRateIsRefused0x97AndTheBudgetOutlivesTheConnection(t *testing.T) {
	saguinOnly(t, "limits.publish_rate is Sagüin's key")
	b := startBroker(t, brokerConfig{Limits: "publish_rate: 1"})
	id := clientID(t, "rate")
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect(id, nil)
	topic := uniq(t)
	refused := false
	for i := uint16(1); i <= 10 && !refused; i++ {
		c.publish(topic, []byte("x"), 1, i)
		refused = c.expectAck(codec.TypePuback, i) == codec.QuotaExceeded
	}
	if !refused {
		t.Fatal("ten publishes at once under publish_rate 1 were all accepted")
	}
	c.disconnect()
	again := dialRaw(t, b.addr, codec.Version5)
	again.mustConnect(id, nil)
	again.publish(topic, []byte("x"), 1, 1)
	if code := again.expectAck(codec.TypePuback, 1); code != codec.QuotaExceeded {
		t.Fatalf("the first publish after reconnecting: PUBACK 0x%02x, want 0x97 (the budget is the client id's)", byte(code))
	}
}

func TestPublishOverPublishBytesIsRefused0x97(t *testing.T) {
	saguinOnly(t, "limits.publish_bytes is Sagüin's key")
	b := startBroker(t, brokerConfig{Limits: "publish_bytes: 4KiB"})
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect(clientID(t, "bytes"), nil)
	topic := uniq(t)
	refused := false
	for i := uint16(1); i <= 10 && !refused; i++ {
		c.publish(topic, make([]byte, 2048), 1, i)
		refused = c.expectAck(codec.TypePuback, i) == codec.QuotaExceeded
	}
	if !refused {
		t.Fatal("20 KiB at once under publish_bytes 4KiB was all accepted")
	}
}

func TestPublishRefusalOn311ClosesTheConnection(t *testing.T) {
	saguinOnly(t, "RFC 0002 closes a 3.1.1 connection on a refusal its PUBACK cannot carry")
	b := startBroker(t, brokerConfig{Limits: "publish_rate: 1"})
	c := dialRaw(t, b.addr, codec.Version311)
	c.mustConnect(clientID(t, "old"), nil)
	for i := uint16(1); i <= 10; i++ {
		c.publish(uniq(t), []byte("x"), 1, i)
		h, _, err := c.next(waitLong)
		if err != nil {
			return // closed, never acknowledged
		}
		if h.Type != codec.TypePuback {
			t.Fatalf("got %s", h.Type)
		}
	}
	t.Fatal("ten publishes past publish_rate 1 were all acknowledged to a 3.1.1 client")
}

func TestQoS0PublishRefusalIsASilentCountedDrop(t *testing.T) {
	saguinOnly(t, "$saguin/ is Sagüin's reserved space")
	b := startBroker(t, brokerConfig{})
	versions(t, func(t *testing.T, v byte) {
		id := clientID(t, "q0")
		c := dialRaw(t, b.addr, v)
		c.mustConnect(id, nil)
		c.publish("$saguin/nothing", []byte("x"), 0, 0)
		c.ping() // the connection stays, on 3.1.1 too
		refusal := regexp.MustCompile(`(?i)client_id=` + id + `.*refus|refus.*client_id=` + id)
		if b.log.wait(refusal, waitLong) == "" {
			t.Fatal("no log line names the client's refused QoS 0 publish (RFC 0002: every refusal is logged whatever the QoS)")
		}
	})
}

func TestPublishWithInvalidUTF8UnderPayloadFormatIndicatorIsRefused0x99(t *testing.T) {
	saguinOnly(t, "MQTT 5 3.3.2.3.2 lets a server check; RFC 0002 does")
	c := dialRaw(t, mqttTarget(t), codec.Version5)
	c.mustConnect(clientID(t, "utf8"), nil)
	p := &codec.Publish{Topic: []byte(uniq(t)), Payload: []byte{0xff, 0xfe}}
	p.Properties.PayloadFormat = 1
	p.Properties.Present.Set(codec.PropPayloadFormat)
	if code := c.publishAs(p, 1); code != codec.PayloadFormatInvalid {
		t.Fatalf("PUBACK 0x%02x, want 0x99", byte(code))
	}
}

func TestBroadcastNobodyHearsIsAnsweredSuccess(t *testing.T) {
	saguinOnly(t, "RFC 0002 never sends 0x10; Mosquitto does")
	c := dialRaw(t, mqttTarget(t), codec.Version5)
	c.mustConnect(clientID(t, "alone"), nil)
	c.publish(uniq(t), []byte("x"), 1, 1)
	if code := c.expectAck(codec.TypePuback, 1); code != codec.Success {
		t.Fatalf("PUBACK 0x%02x, want 0x00", byte(code))
	}
}

// TestSaguinPropertiesAClientSetAreStrippedFromEveryDelivery: RFC 0003 "The
// reserved prefix" - on PUBLISH an unrecognised saguin- property is data,
// stripped from live deliveries and from the retained value alike.
func TestSaguinPropertiesAClientSetAreStrippedFromEveryDelivery(t *testing.T) {
	saguinOnly(t, "saguin- User Properties are Sagüin's")
	addr := mqttTarget(t)
	topic := uniq(t)
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect(clientID(t, "sub"), nil)
	sub.mustSubscribe(1, topic+"/#", 1)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	p := &codec.Publish{Retain: true, Topic: []byte(topic + "/a"), Payload: []byte("x")}
	p.Properties.AddUser([]byte("saguin-offset"), []byte("42"))
	p.Properties.AddUser([]byte("plain"), []byte("kept"))
	if code := pub.publishAs(p, 1); code != codec.Success {
		t.Fatalf("PUBACK 0x%02x", byte(code))
	}
	check := func(where string, d *codec.Publish) {
		got := strings.Join(userProps(&d.Properties), ",")
		if got != "plain=kept" {
			t.Fatalf("%s carries %q, want plain=kept alone", where, got)
		}
	}
	live := sub.expectPublish()
	check("the live delivery", live)
	sub.ackDelivery(live)
	late := dialRaw(t, addr, codec.Version5)
	late.mustConnect(clientID(t, "late"), nil)
	late.mustSubscribe(1, topic+"/#", 1)
	check("the retained value", late.expectPublish())
}

func TestMqttBroadcastOverTheSubscribersMaximumPacketSizeIsDroppedForThatSubscriberOnly(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	small := dialRaw(t, addr, codec.Version5)
	small.mustConnect(clientID(t, "small"), func(c *codec.Connect) {
		c.Properties.MaximumPacketSize = 200
		c.Properties.Present.Set(codec.PropMaximumPacketSize)
	})
	small.mustSubscribe(1, topic+"/#", 1)
	big := dialRaw(t, addr, codec.Version5)
	big.mustConnect(clientID(t, "big"), nil)
	big.mustSubscribe(1, topic+"/#", 1)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.publishQoS1(topic+"/x", make([]byte, 1000), 1)
	pub.publishQoS1(topic+"/x", []byte("small"), 2)
	if p := big.expectPublish(); len(p.Payload) != 1000 {
		t.Fatalf("the other subscriber got %d bytes", len(p.Payload))
	}
	p := small.expectPublish() // still connected, and the next one that fits arrives
	if string(p.Payload) != "small" {
		t.Fatalf("got %d bytes, want the packet over its Maximum Packet Size skipped (MQTT-3.1.2-25)", len(p.Payload))
	}
}

func TestMqttMessageExpiryIsDecrementedByTheTimeItWaited(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	id := clientID(t, "sub")
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect(id, freshSession(60))
	sub.mustSubscribe(1, topic+"/#", 1)
	sub.disconnect()
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	p := &codec.Publish{Topic: []byte(topic + "/x"), Payload: []byte("x")}
	p.Properties.MessageExpiry = 30
	p.Properties.Present.Set(codec.PropMessageExpiry)
	if code := pub.publishAs(p, 1); code >= 0x80 {
		t.Fatalf("PUBACK 0x%02x", byte(code))
	}
	<-time.After(2100 * time.Millisecond) // the waiting is the rule's subject
	back := dialRaw(t, addr, codec.Version5)
	back.mustConnect(id, session(60))
	got := back.expectPublish()
	if !got.Properties.Present.Has(codec.PropMessageExpiry) || got.Properties.MessageExpiry > 28 || got.Properties.MessageExpiry == 0 {
		t.Fatalf("Message Expiry Interval %d, want 30 less the 2 s it waited (MQTT-3.3.2-6)", got.Properties.MessageExpiry)
	}
}

func TestMqttMessagePastItsExpiryIsNotDeliveredToAReturningSession(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	id := clientID(t, "sub")
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect(id, freshSession(60))
	sub.mustSubscribe(1, topic+"/#", 1)
	sub.disconnect()
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	p := &codec.Publish{Topic: []byte(topic + "/x"), Payload: []byte("stale")}
	p.Properties.MessageExpiry = 1
	p.Properties.Present.Set(codec.PropMessageExpiry)
	pub.publishAs(p, 1)
	pub.publishQoS1(topic+"/x", []byte("fresh"), 2)
	<-time.After(2500 * time.Millisecond)
	back := dialRaw(t, addr, codec.Version5)
	back.mustConnect(id, session(60))
	got := back.expectPublish()
	if string(got.Payload) != "fresh" {
		t.Fatalf("got %q first, want the expired message skipped (MQTT-3.3.2-5)", got.Payload)
	}
}
