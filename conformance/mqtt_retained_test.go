package conformance

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// RFC 0003 "Retained messages" (on a broadcast topic: MQTT's rules exactly),
// RFC 0002 "Retained messages on a broadcast topic"; MQTT 5 3.3.1.3, 3.8.3.1.

// retain publishes a retained value at QoS 1 on c.
func (c *raw) retain(topic string, payload []byte, id uint16, props func(*codec.Properties)) {
	c.t.Helper()
	p := &codec.Publish{QoS: 1, PacketID: id, Retain: true, Topic: []byte(topic), Payload: payload}
	if props != nil {
		props(&p.Properties)
	}
	c.sendPublish(p)
	if code := c.expectAck(codec.TypePuback, id); code >= 0x80 {
		c.t.Fatalf("PUBACK 0x%02x for a retained publish", byte(code))
	}
}

func TestMqttRetainedValueIsSentOnSubscribeWithRetainSet(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := mqttTarget(t)
		topic := uniq(t)
		pub := dialRaw(t, addr, v)
		pub.mustConnect(clientID(t, "pub"), nil)
		pub.retain(topic+"/a", []byte("state"), 1, nil)
		sub := dialRaw(t, addr, v)
		sub.mustConnect(clientID(t, "sub"), nil)
		sub.mustSubscribe(1, topic+"/#", 1)
		p := sub.expectPublish()
		if !p.Retain || string(p.Payload) != "state" || string(p.Topic) != topic+"/a" {
			t.Fatalf("got %s %q retain %v, want the retained value with RETAIN set (MQTT-3.3.1-9)", p.Topic, p.Payload, p.Retain)
		}
		if p.QoS != 1 {
			t.Fatalf("served at QoS %d, want 1", p.QoS)
		}
	})
}

func TestMqttRetainedPublishIsDeliveredLiveWithRetainCleared(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := mqttTarget(t)
		topic := uniq(t)
		sub := dialRaw(t, addr, v)
		sub.mustConnect(clientID(t, "sub"), nil)
		sub.mustSubscribe(1, topic+"/#", 1)
		pub := dialRaw(t, addr, v)
		pub.mustConnect(clientID(t, "pub"), nil)
		pub.retain(topic+"/a", []byte("live"), 1, nil)
		p := sub.expectPublish()
		if string(p.Payload) != "live" || p.Retain {
			t.Fatalf("live delivery %q retain %v, want it with RETAIN 0 (MQTT-3.3.1-12)", p.Payload, p.Retain)
		}
	})
}

func TestMqttRetainAsPublishedKeepsTheFlagOnLiveDelivery(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect(clientID(t, "sub"), nil)
	sub.subscribeWith(1, nil, codec.Subscription{Filter: []byte(topic + "/#"), QoS: 1, RetainAsPublished: true})
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.retain(topic+"/a", []byte("rap"), 1, nil)
	pub.publishQoS1(topic+"/a", []byte("plain"), 2)
	if p := sub.expectPublish(); !p.Retain || string(p.Payload) != "rap" {
		t.Fatalf("%q retain %v, want RETAIN 1 under Retain As Published (MQTT-3.3.1-13)", p.Payload, p.Retain)
	}
	if p := sub.expectPublish(); p.Retain {
		t.Fatal("a publish without RETAIN delivered with it")
	}
}

func TestMqttZeroLengthRetainedPublishDeletesTheValue(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := mqttTarget(t)
		topic := uniq(t)
		pub := dialRaw(t, addr, v)
		pub.mustConnect(clientID(t, "pub"), nil)
		pub.retain(topic+"/a", []byte("there"), 1, nil)
		pub.retain(topic+"/a", nil, 2, nil)
		sub := dialRaw(t, addr, v)
		sub.mustConnect(clientID(t, "sub"), nil)
		sub.mustSubscribe(1, topic+"/#", 1)
		sub.expectNothing("a retained value deleted by a zero-length publish (MQTT-3.3.1-10)")
	})
}

func TestMqttRetainedStoreHoldsOneValuePerTopicTheLatest(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := mqttTarget(t)
		topic := uniq(t)
		pub := dialRaw(t, addr, v)
		pub.mustConnect(clientID(t, "pub"), nil)
		pub.retain(topic+"/a", []byte("a1"), 1, nil)
		pub.retain(topic+"/a", []byte("a2"), 2, nil)
		pub.retain(topic+"/b", []byte("b1"), 3, nil)
		sub := dialRaw(t, addr, v)
		sub.mustConnect(clientID(t, "sub"), nil)
		sub.mustSubscribe(1, topic+"/#", 0)
		got := map[string]string{}
		for _, p := range sub.collect(2) {
			if _, dup := got[string(p.Topic)]; dup {
				t.Fatalf("two retained values for %s", p.Topic)
			}
			got[string(p.Topic)] = string(p.Payload)
		}
		if len(got) != 2 || got[topic+"/a"] != "a2" || got[topic+"/b"] != "b1" {
			t.Fatalf("retained values %v, want a2 on /a and b1 on /b", got)
		}
	})
}

func TestMqttRetainHandling1SendsOnlyForANewSubscription(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.retain(topic+"/a", []byte("v"), 1, nil)
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect(clientID(t, "sub"), nil)
	s := codec.Subscription{Filter: []byte(topic + "/#"), QoS: 1, RetainHandling: 1}
	sub.subscribeWith(1, nil, s)
	if p := sub.expectPublish(); !p.Retain {
		t.Fatal("a new subscription with Retain Handling 1 was not sent the retained value")
	} else {
		sub.ackDelivery(p)
	}
	sub.subscribeWith(2, nil, s)
	sub.expectNothing("Retain Handling 1 on a subscription that already existed (MQTT-3.3.1-10)")
}

func TestMqttRetainHandling2SendsNothing(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.retain(topic+"/a", []byte("v"), 1, nil)
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect(clientID(t, "sub"), nil)
	sub.subscribeWith(1, nil, codec.Subscription{Filter: []byte(topic + "/#"), QoS: 1, RetainHandling: 2})
	sub.expectNothing("Retain Handling 2 (MQTT-3.3.1-11)")
}

func TestMqttRetainedValueIsNotSentToASharedSubscription(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.retain(topic+"/a", []byte("v"), 1, nil)
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect(clientID(t, "sub"), nil)
	sub.mustSubscribe(1, "$share/g/"+topic+"/#", 1)
	sub.expectNothing("a retained value on a shared subscription (MQTT 5 3.3.1.3: retained values go to a new Non-shared Subscription; RFC 0003 \"Retained messages\" point 4)")
}

func TestMqttRetainedValueIsServedAtTheLowerOfItsQoSAndTheGranted(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := mqttTarget(t)
		topic := uniq(t)
		pub := dialRaw(t, addr, v)
		pub.mustConnect(clientID(t, "pub"), nil)
		pub.retain(topic+"/a", []byte("q1"), 1, nil)
		sub := dialRaw(t, addr, v)
		sub.mustConnect(clientID(t, "sub"), nil)
		sub.mustSubscribe(1, topic+"/#", 0)
		if p := sub.expectPublish(); p.QoS != 0 {
			t.Fatalf("a QoS 1 retained value served at QoS %d on a QoS 0 subscription", p.QoS)
		}
	})
}

func TestMqttRetainedValueGoesBackOutWithItsProperties(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.retain(topic+"/a", []byte(`{"on":true}`), 1, func(p *codec.Properties) {
		p.ContentType = []byte("application/json")
		p.Present.Set(codec.PropContentType)
		p.PayloadFormat = 1
		p.Present.Set(codec.PropPayloadFormat)
		p.ResponseTopic = []byte(topic + "/reply")
		p.Present.Set(codec.PropResponseTopic)
		p.CorrelationData = []byte{9, 8}
		p.Present.Set(codec.PropCorrelationData)
		p.AddUser([]byte("unit"), []byte("C"))
		p.AddUser([]byte("unit"), []byte("K"))
	})
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect(clientID(t, "sub"), nil)
	sub.mustSubscribe(1, topic+"/#", 1)
	p := sub.expectPublish()
	pr := &p.Properties
	if string(pr.ContentType) != "application/json" || pr.PayloadFormat != 1 || string(pr.ResponseTopic) != topic+"/reply" || string(pr.CorrelationData) != "\x09\x08" {
		t.Fatalf("content type %q format %d response %q correlation % x: want the publisher's, forwarded unaltered (MQTT 5 3.3.2.3)",
			pr.ContentType, pr.PayloadFormat, pr.ResponseTopic, pr.CorrelationData)
	}
	if got := strings.Join(userProps(pr), ","); got != "unit=C,unit=K" {
		t.Fatalf("user properties %q, want unit=C,unit=K in order (MQTT-3.3.2-18)", got)
	}
}

// TestRetainedValueCarriesNoSaguinHeaders: a broadcast's retained value goes
// back out as published, with no saguin-id or saguin-offset (RFC 0002
// "Retained messages on a broadcast topic").
func TestRetainedValueCarriesNoSaguinHeaders(t *testing.T) {
	saguinOnly(t, "saguin- User Properties are Sagüin's")
	addr := mqttTarget(t)
	topic := uniq(t)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.retain(topic+"/a", []byte("v"), 1, nil)
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect(clientID(t, "sub"), nil)
	sub.mustSubscribe(1, topic+"/#", 1)
	p := sub.expectPublish()
	for _, u := range userProps(&p.Properties) {
		if strings.HasPrefix(u, "saguin-") {
			t.Fatalf("the retained value carries %s", u)
		}
	}
}

func TestMqttRetainedValuePastItsMessageExpiryIsNotServed(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.retain(topic+"/a", []byte("brief"), 1, func(p *codec.Properties) {
		p.MessageExpiry = 1
		p.Present.Set(codec.PropMessageExpiry)
	})
	<-time.After(2500 * time.Millisecond) // the rule's subject is the one second passing
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect(clientID(t, "sub"), nil)
	sub.mustSubscribe(1, topic+"/#", 1)
	sub.expectNothing("a retained value past its Message Expiry Interval (MQTT-3.3.2-5)")
}

func TestMqttRetainedValueCarriesTheRemainingExpiry(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.retain(topic+"/a", []byte("v"), 1, func(p *codec.Properties) {
		p.MessageExpiry = 60
		p.Present.Set(codec.PropMessageExpiry)
	})
	<-time.After(2100 * time.Millisecond) // two whole seconds waited
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect(clientID(t, "sub"), nil)
	sub.mustSubscribe(1, topic+"/#", 1)
	p := sub.expectPublish()
	if !p.Properties.Present.Has(codec.PropMessageExpiry) || p.Properties.MessageExpiry > 58 || p.Properties.MessageExpiry == 0 {
		t.Fatalf("Message Expiry Interval %d (present %v), want 60 less the 2 s waited (MQTT-3.3.2-6)",
			p.Properties.MessageExpiry, p.Properties.Present.Has(codec.PropMessageExpiry))
	}
}

func TestMqttResumedSessionIsNotSentRetainedValuesWithoutSubscribing(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	id := clientID(t, "sub")
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect(id, freshSession(60))
	sub.mustSubscribe(1, topic+"/#", 0)
	sub.disconnect()
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.publish(topic+"/a", []byte("v"), 0, 0)
	// A retained QoS 0 publish while away: owed nobody, kept only as the value.
	r := &codec.Publish{Retain: true, Topic: []byte(topic + "/a"), Payload: []byte("v")}
	pub.sendPublish(r)
	pub.ping()
	back := dialRaw(t, addr, codec.Version5)
	back.mustConnect(id, session(60))
	pub.publish(topic+"/b", []byte("end"), 0, 0)
	if got := back.readUntil("end"); len(got) != 0 {
		t.Fatalf("the resumed session was sent %q before a live publish: retained values are sent at SUBSCRIBE, not at a resume (RFC 0003 \"Retained messages\" point 2)", got[0].Payload)
	}
}

// TestNoLocalWithholdsTheClientsOwnRetainedValue: RFC 0003 "No Local" - a
// retained value carries the client id that published it, so that client's
// No Local subscription is not served it.
func TestNoLocalWithholdsTheClientsOwnRetainedValue(t *testing.T) {
	saguinOnly(t, "MQTT does not apply No Local to retained values; RFC 0003 does")
	addr := mqttTarget(t)
	topic := uniq(t)
	id := clientID(t, "self")
	c := dialRaw(t, addr, codec.Version5)
	c.mustConnect(id, nil)
	c.retain(topic+"/mine", []byte("mine"), 1, nil)
	other := dialRaw(t, addr, codec.Version5)
	other.mustConnect(clientID(t, "other"), nil)
	other.retain(topic+"/theirs", []byte("theirs"), 1, nil)
	c.subscribeWith(1, nil, codec.Subscription{Filter: []byte(topic + "/#"), QoS: 1, NoLocal: true})
	got := c.collect(1)
	if len(got) != 1 || string(got[0].Payload) != "theirs" {
		var ps []string
		for _, p := range got {
			ps = append(ps, string(p.Payload))
		}
		t.Fatalf("served %q, want only the other client's retained value", ps)
	}
}

// TestRetainAsPublishedFromAnyMatchingSubscriptionSetsTheFlag: RFC 0003
// "What a delivery carries" - one copy, RETAIN set when the publisher set it
// and any matching subscription asked for Retain As Published, whatever the
// order the subscriptions were made in.
func TestRetainAsPublishedFromAnyMatchingSubscriptionSetsTheFlag(t *testing.T) {
	saguinOnly(t, "the one-copy rule for overlapping subscriptions is RFC 0003's")
	addr := mqttTarget(t)
	topic := uniq(t)
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect(clientID(t, "sub"), nil)
	sub.subscribeWith(1, nil, codec.Subscription{Filter: []byte(topic + "/#"), QoS: 1, RetainAsPublished: true})
	sub.subscribeWith(2, nil, codec.Subscription{Filter: []byte(topic + "/+"), QoS: 1})
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.retain(topic+"/a", []byte("r"), 1, nil)
	pub.publishQoS1(topic+"/a", []byte("end"), 2)
	got := sub.readUntil("end")
	if len(got) != 1 || !got[0].Retain {
		t.Fatalf("%d copies (first RETAIN %v), want one with RETAIN set", len(got), len(got) > 0 && got[0].Retain)
	}
}

// TestRetainedValueQuietLongerThanRetentionPeriodIsDeleted: RFC 0002
// "Retained messages on a broadcast topic" - broker.retained.retention_period
// deletes the value of a topic quiet for longer, silently.
func TestRetainedValueQuietLongerThanRetentionPeriodIsDeleted(t *testing.T) {
	b := startSaguin(t, t.TempDir(), saguinYAML(memoryStorage, "retained:\n  retention_period: 1s"))
	topic := uniq(t)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.retain(topic+"/a", []byte("old"), 1, nil)
	<-time.After(2500 * time.Millisecond) // the quiet second is the rule's subject
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect(clientID(t, "sub"), nil)
	sub.mustSubscribe(1, topic+"/#", 1)
	pub.publishQoS1(topic+"/a", []byte("end"), 2)
	if got := sub.readUntil("end"); len(got) != 0 {
		t.Fatalf("served %q, a retained value quiet past retention_period 1s", got[0].Payload)
	}
}

// TestRetainedStoreAtItsProvidersMaxBytesRefuses0x97: RFC 0003 "Retained
// messages" - the store is bounded by its provider's max_bytes and refuses
// rather than evicts at the bound.
func TestRetainedStoreAtItsProvidersMaxBytesRefuses0x97(t *testing.T) {
	storage := `storage:
  default: mem
  default_retention_period: none
  default_retention_bytes: none
  providers:
    mem:
      type: memory
      snapshot_dir: none
    ret:
      type: memory
      snapshot_dir: none
      max_bytes: 16KiB`
	broker := `retained:
  storage: ret
limits:
  max_message_size: 4KiB
  max_connect_size: 4KiB
  max_header_bytes: 1KiB
  session_queue_bytes: 256KiB`
	// session_queue_bytes is roomy so that every accepted value fits the
	// subscriber's queue at once: the bound under test is the retained
	// store's provider, not the subscriber's.
	b := startSaguin(t, t.TempDir(), saguinYAML(storage, broker))
	topic := uniq(t)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	kept := 0
	for i := 1; i <= 20; i++ {
		p := &codec.Publish{Retain: true, Topic: []byte(fmt.Sprintf("%s/%02d", topic, i)), Payload: make([]byte, 3000)}
		code := pub.publishAs(p, uint16(i))
		if code == codec.QuotaExceeded {
			break
		}
		if code != codec.Success {
			t.Fatalf("retained publish %d: PUBACK 0x%02x", i, byte(code))
		}
		kept++
	}
	if kept == 20 {
		t.Fatal("60 KB of retained values fit a 16KiB provider")
	}
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect(clientID(t, "sub"), nil)
	sub.mustSubscribe(1, topic+"/#", 0)
	if got := sub.collect(kept); len(got) != kept {
		t.Fatalf("%d retained values served, want the %d accepted before the refusal (refuse, never evict)", len(got), kept)
	}
}

// TestRetainedQoS2ReleaseWithNoRoomIsRefusedWithDisconnect0x97: RFC 0003
// "Exactly once" - a retained broadcast's release whose value the retained
// store's provider has no room for is refused with DISCONNECT 0x97, the
// message stays held, and the PUBREL sent again once there is room completes.
func TestRetainedQoS2ReleaseWithNoRoomIsRefusedWithDisconnect0x97(t *testing.T) {
	storage := `storage:
  default: mem
  default_retention_period: none
  default_retention_bytes: none
  providers:
    mem:
      type: memory
      snapshot_dir: none
    ret:
      type: memory
      snapshot_dir: none
      max_bytes: 16KiB`
	broker := `retained:
  storage: ret
limits:
  max_message_size: 4KiB
  max_connect_size: 4KiB
  max_header_bytes: 1KiB
  session_queue_bytes: 8KiB`
	b := startSaguin(t, t.TempDir(), saguinYAML(storage, broker))
	topic := uniq(t)
	id := clientID(t, "q2")
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect(id, freshSession(300))
	c.sendPublish(&codec.Publish{QoS: 2, PacketID: 5, Retain: true, Topic: []byte(topic + "/held"), Payload: make([]byte, 3000)})
	if code := c.expectAck(codec.TypePubrec, 5); code != codec.Success {
		t.Fatalf("PUBREC 0x%02x while the store had room", byte(code))
	}
	filler := dialRaw(t, b.addr, codec.Version5)
	filler.mustConnect(clientID(t, "fill"), nil)
	var filled []string
	for i := 1; i <= 20; i++ {
		tp := fmt.Sprintf("%s/fill/%02d", topic, i)
		if filler.publishAs(&codec.Publish{Retain: true, Topic: []byte(tp), Payload: make([]byte, 3000)}, uint16(i)) == codec.QuotaExceeded {
			break
		}
		filled = append(filled, tp)
	}
	if len(filled) == 20 {
		t.Fatal("the retained store never filled")
	}
	c.sendAck(codec.TypePubrel, 5)
	c.expectDisconnect(codec.QuotaExceeded)
	// Make room, and finish the exchange on the resumed session.
	filler.publishAs(&codec.Publish{Retain: true, Topic: []byte(filled[0])}, 30)
	back := dialRaw(t, b.addr, codec.Version5)
	if ack := back.mustConnect(id, session(300)); !ack.SessionPresent {
		t.Fatal("Session Present 0: the held exchange went with the session")
	}
	back.sendAck(codec.TypePubrel, 5)
	if code := back.expectAck(codec.TypePubcomp, 5); code != codec.Success {
		t.Fatalf("PUBCOMP 0x%02x once there is room, want 0x00", byte(code))
	}
}

// RFC 0002 "Retained messages on a broadcast topic": the values a SUBSCRIBE
// reaches are served from the store, paced by the subscriber - never shed at
// limits.session_queue_bytes - so every one arrives however many there are:
// 1,000 values of 100 bytes, about ten times the 16 KiB bound, to a QoS 0
// subscriber, a QoS 1 one with a Receive Maximum of 10, and a QoS 1 session
// that outlives its connection (the values kept in the broadcast log for
// it), on memory and on sqlite.
func TestRetainedCatchUpDeliversEveryValuePastTheSessionQueueBound(t *testing.T) {
	const n = 1000
	for _, st := range []struct{ name, storage string }{{"memory", memoryStorage}, {"sqlite", sqliteStorage}} {
		t.Run(st.name, func(t *testing.T) {
			dir := t.TempDir()
			b := startSaguin(t, dir, saguinYAML(st.storage, "limits:\n  max_message_size: 1KiB\n  max_connect_size: 1KiB\n  session_queue_bytes: 16KiB"))
			pub := dialRaw(t, b.addr, codec.Version5)
			pub.mustConnect("pub", nil)
			payload := []byte(strings.Repeat("v", 100))
			for i := 0; i < n; i++ {
				pub.retain(fmt.Sprintf("ret/%d", i), payload, uint16(i+1), nil)
			}
			for _, sc := range []struct {
				name    string
				qos     byte
				connect func(*codec.Connect)
			}{
				{"qos0", 0, nil},
				{"qos1", 1, func(c *codec.Connect) {
					c.Properties.ReceiveMaximum = 10
					c.Properties.Present.Set(codec.PropReceiveMaximum)
				}},
				{"qos1-kept", 1, session(300)},
			} {
				sub := dialRaw(t, b.addr, codec.Version5)
				sub.mustConnect("sub-"+sc.name, sc.connect)
				sub.mustSubscribe(1, "ret/#", sc.qos)
				seen := map[string]bool{}
				for len(seen) < n {
					p := sub.expectPublish()
					sub.ackDelivery(p)
					if !p.Retain || p.QoS != sc.qos {
						t.Fatalf("%s: %s retain %v QoS %d, want RETAIN at QoS %d", sc.name, p.Topic, p.Retain, p.QoS, sc.qos)
					}
					seen[string(p.Topic)] = true
				}
				sub.expectNothing(sc.name + ": a value twice")
			}
		})
	}
}
