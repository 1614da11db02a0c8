package conformance

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// RFC 0002 "What each channel type admits: the SUBACK codes", "How many
// topic filters one client may hold", "How deep a topic may be"; RFC 0003
// "Broadcast" (what a delivery carries), "No Local", "The reserved prefix on
// a client's own packets"; MQTT 5 3.8, 4.7.

func TestMqttSubackGrantsTheQoSAskedFor(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		c := dialRaw(t, mqttTarget(t), v)
		c.mustConnect(clientID(t, "qos"), nil)
		topic := uniq(t)
		ack := c.subscribeWith(1, nil,
			codec.Subscription{Filter: []byte(topic + "/0"), QoS: 0},
			codec.Subscription{Filter: []byte(topic + "/1"), QoS: 1},
			codec.Subscription{Filter: []byte(topic + "/2"), QoS: 2})
		if len(ack.ReasonCodes) != 3 || ack.ReasonCodes[0] != 0 || ack.ReasonCodes[1] != 1 || ack.ReasonCodes[2] != 2 {
			t.Fatalf("SUBACK %v, want one code per filter, [0 1 2] (MQTT-3.9.3-1)", ack.ReasonCodes)
		}
	})
}

func TestMqttDeliveryQoSIsTheLowerOfThePublishAndTheSubscription(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := mqttTarget(t)
		topic := uniq(t)
		sub := dialRaw(t, addr, v)
		sub.mustConnect(clientID(t, "sub"), nil)
		sub.mustSubscribe(1, topic+"/#", 1)
		pub := dialRaw(t, addr, v)
		pub.mustConnect(clientID(t, "pub"), nil)
		pub.publishQoS2(topic+"/x", []byte("2"), 1)
		pub.publish(topic+"/x", []byte("0"), 0, 0)
		if p := sub.expectPublish(); p.QoS != 1 {
			t.Fatalf("QoS 2 publish on a QoS 1 subscription delivered at %d", p.QoS)
		} else {
			sub.ackDelivery(p)
		}
		if p := sub.expectPublish(); p.QoS != 0 {
			t.Fatalf("QoS 0 publish delivered at %d", p.QoS)
		}
	})
}

func TestMqttResubscribingReplacesTheSubscriptionsOptions(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := mqttTarget(t)
		topic := uniq(t)
		sub := dialRaw(t, addr, v)
		sub.mustConnect(clientID(t, "sub"), nil)
		sub.mustSubscribe(1, topic+"/#", 1)
		sub.mustSubscribe(2, topic+"/#", 0)
		pub := dialRaw(t, addr, v)
		pub.mustConnect(clientID(t, "pub"), nil)
		pub.publishQoS1(topic+"/x", []byte("x"), 1)
		got := sub.ping()
		for len(got) == 0 {
			got = append(got, sub.expectPublish())
		}
		if len(got) != 1 || got[0].QoS != 0 {
			t.Fatalf("%d deliveries, first at QoS %d: want one at QoS 0, the replaced subscription's (MQTT-3.8.4-3)", len(got), got[0].QoS)
		}
	})
}

// TestOverlappingSubscriptionsDeliverOneCopyAtTheHighestGrantedQoS: RFC 0003
// "Broadcast - What a delivery carries": one copy per message per client,
// at min(message QoS, highest granted), carrying every Subscription
// Identifier of every matching subscription.
func TestOverlappingSubscriptionsDeliverOneCopyAtTheHighestGrantedQoS(t *testing.T) {
	saguinOnly(t, "MQTT 5 3.3.4 allows a copy per subscription (Mosquitto's choice); RFC 0003 sends one")
	versions(t, func(t *testing.T, v byte) {
		addr := mqttTarget(t)
		topic := uniq(t)
		sub := dialRaw(t, addr, v)
		sub.mustConnect(clientID(t, "sub"), nil)
		sub.mustSubscribe(1, topic+"/#", 0)
		sub.mustSubscribe(2, topic+"/+", 1)
		pub := dialRaw(t, addr, v)
		pub.mustConnect(clientID(t, "pub"), nil)
		pub.publishQoS2(topic+"/x", []byte("one"), 1)
		pub.publishQoS1(topic+"/x", []byte("end"), 2)
		got := sub.readUntil("end")
		if len(got) != 1 {
			t.Fatalf("%d copies for two overlapping subscriptions, want one", len(got))
		}
		if got[0].QoS != 1 {
			t.Fatalf("delivered at QoS %d, want 1 (the highest granted)", got[0].QoS)
		}
	})
}

func TestMqttOneCopyForOverlappingSubscriptionsCarriesEveryIdentifier(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect(clientID(t, "sub"), nil)
	for i, f := range []string{topic + "/#", topic + "/+"} {
		id := uint32(i + 5)
		sub.subscribeWith(uint16(i+1), func(p *codec.Properties) {
			p.SubscriptionIDs = []uint32{id}
			p.Present.Set(codec.PropSubscriptionID)
		}, codec.Subscription{Filter: []byte(f), QoS: 1})
	}
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.publishQoS1(topic+"/x", []byte("x"), 1)
	pub.publishQoS1(topic+"/x", []byte("end"), 2)
	var ids []int
	copies := sub.readUntil("end")
	for _, p := range copies {
		for _, id := range p.Properties.SubscriptionIDs {
			ids = append(ids, int(id))
		}
	}
	sort.Ints(ids)
	if fmt.Sprint(ids) != "[5 6]" {
		t.Fatalf("Subscription Identifiers %v across %d copies, want 5 and 6 (MQTT-3.3.4-3, -4, -5)", ids, len(copies))
	}
}

func TestMqttNoLocalWithholdsTheClientsOwnPublishes(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	c := dialRaw(t, addr, codec.Version5)
	c.mustConnect(clientID(t, "self"), nil)
	c.subscribeWith(1, nil, codec.Subscription{Filter: []byte(topic + "/#"), QoS: 1, NoLocal: true})
	c.publishQoS1(topic+"/x", []byte("mine"), 1)
	other := dialRaw(t, addr, codec.Version5)
	other.mustConnect(clientID(t, "other"), nil)
	other.publishQoS1(topic+"/x", []byte("theirs"), 1)
	p := c.expectPublish()
	if string(p.Payload) != "theirs" {
		t.Fatalf("got %q first, want only the other client's (MQTT-3.8.3-3)", p.Payload)
	}
	c.ackDelivery(p)
}

// TestNoLocalIsTakenFromTheSubscriptionThatMatched: RFC 0003 "No Local" - a
// client holding a No Local and a plain subscription that both match is
// delivered its own publish, the plain one being owed it.
func TestNoLocalIsTakenFromTheSubscriptionThatMatched(t *testing.T) {
	saguinOnly(t, "MQTT does not settle overlapping subscriptions that disagree on No Local; RFC 0003 does")
	addr := mqttTarget(t)
	topic := uniq(t)
	c := dialRaw(t, addr, codec.Version5)
	c.mustConnect(clientID(t, "self"), nil)
	c.subscribeWith(1, nil, codec.Subscription{Filter: []byte(topic + "/#"), QoS: 1, NoLocal: true})
	c.mustSubscribe(2, topic+"/+", 1)
	c.publishQoS1(topic+"/x", []byte("mine"), 1)
	if p := c.expectPublish(); string(p.Payload) != "mine" {
		t.Fatalf("got %q", p.Payload)
	}
}

func TestMqttRetainHandling3IsAProtocolError(t *testing.T) {
	c := dialRaw(t, mqttTarget(t), codec.Version5)
	c.mustConnect(clientID(t, "rh3"), nil)
	// Subscription Options byte 0x31: QoS 1, Retain Handling 3.
	topic := uniq(t)
	body := []byte{0, 1, 0, 0, byte(len(topic))}
	body = append(body, topic...)
	body = append(body, 0x31)
	c.send(append([]byte{0x82, byte(len(body))}, body...))
	c.expectDisconnect(codec.ProtocolError) // MQTT 5 3.8.3.1
}

func TestMqttSubscribeWithNoFiltersIsAProtocolError(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		c := dialRaw(t, mqttTarget(t), v)
		c.mustConnect(clientID(t, "none"), nil)
		if v == codec.Version5 {
			c.send([]byte{0x82, 3, 0, 1, 0}) // packet id 1, no properties, no filter
			c.expectDisconnect(codec.ProtocolError)
			return
		}
		c.send([]byte{0x82, 2, 0, 1}) // MQTT-3.8.3-3
		c.expectClosedSilently()
	})
}

func TestMqttWildcardsMatchWholeLevelsAndHashIncludesTheParent(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect(clientID(t, "wild"), nil)
	sub.mustSubscribe(1, topic+"/+/b", 0)
	sub.mustSubscribe(2, topic+"/h/#", 0)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	for _, tp := range []string{"/a/b", "/a/c", "/a/b/c", "//b", "/h", "/h/x/y", "/hh"} {
		pub.publish(topic+tp, []byte(tp), 0, 0)
	}
	pub.ping()
	var got []string
	for _, p := range sub.ping() {
		got = append(got, string(p.Payload))
	}
	sort.Strings(got)
	want := []string{"/a/b", "//b", "/h", "/h/x/y"}
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("delivered %v, want %v (MQTT 4.7.1)", got, want)
	}
}

func TestMqttHashDoesNotMatchTopicsBeginningWithDollar(t *testing.T) {
	addr := mqttTarget(t)
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect(clientID(t, "dollar"), nil)
	sub.mustSubscribe(1, "#", 0)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.publish("$SHARE/"+uniq(t), []byte("dollar"), 0, 0) // an ordinary topic beginning $ (RFC 0002)
	pub.ping()
	for _, p := range sub.ping() {
		if strings.HasPrefix(string(p.Topic), "$") {
			t.Fatalf("# matched %s (MQTT-4.7.2-1)", p.Topic)
		}
	}
}

func TestSubscribeDeeperThanMaxTopicLevelsIsRefused0x8F(t *testing.T) {
	saguinOnly(t, "limits.max_topic_levels is Sagüin's key")
	b := startBroker(t, brokerConfig{Limits: "max_topic_levels: 3"})
	versions(t, func(t *testing.T, v byte) {
		c := dialRaw(t, b.addr, v)
		c.mustConnect(clientID(t, "deep"), nil)
		ack := c.subscribeWith(1, nil,
			codec.Subscription{Filter: []byte("a/b/c/d"), QoS: 1},
			codec.Subscription{Filter: []byte("a/b/c"), QoS: 1},
			codec.Subscription{Filter: []byte("$share/g/a/b/c"), QoS: 1})
		want := []codec.ReasonCode{codec.TopicFilterInvalid, codec.GrantedQoS1, codec.GrantedQoS1}
		if v == codec.Version311 {
			want = []codec.ReasonCode{codec.SubackFailure311, codec.GrantedQoS1, codec.SubackFailure311}
		}
		if fmt.Sprint(ack.ReasonCodes) != fmt.Sprint(want) {
			t.Fatalf("SUBACK %v, want %v (a shared filter is measured after $share/<name>/)", ack.ReasonCodes, want)
		}
	})
}

func TestSubscribePastMaxSubscriptionsIsRefused0x97AndSaidOnceAtWarn(t *testing.T) {
	saguinOnly(t, "limits.max_subscriptions is Sagüin's key")
	b := startBroker(t, brokerConfig{Limits: "max_subscriptions: 2"})
	versions(t, func(t *testing.T, v byte) {
		c := dialRaw(t, b.addr, v)
		id := clientID(t, "many")
		c.mustConnect(id, nil)
		refused := codec.QuotaExceeded
		if v == codec.Version311 {
			refused = codec.SubackFailure311
		}
		ack := c.subscribeWith(1, nil,
			codec.Subscription{Filter: []byte("a"), QoS: 0},
			codec.Subscription{Filter: []byte("a"), QoS: 1}, // named twice: one filter
			codec.Subscription{Filter: []byte("b"), QoS: 0},
			codec.Subscription{Filter: []byte("c"), QoS: 0})
		if fmt.Sprint(ack.ReasonCodes) != fmt.Sprint([]codec.ReasonCode{0, 1, 0, refused}) {
			t.Fatalf("SUBACK %v, want [0 1 0 0x%02x]", ack.ReasonCodes, byte(refused))
		}
		// A filter it holds is replaced and adds nothing; a refusal keeps the connection.
		c.mustSubscribe(2, "b", 1)
		if got := c.subscribe(3, "d", 0); got[0] != refused {
			t.Fatalf("a second filter past the bound: 0x%02x", byte(got[0]))
		}
		warn := regexp.MustCompile(`level=WARN .*max_subscriptions.*client_id=` + id + `|level=WARN .*client_id=` + id + `.*max_subscriptions`)
		if b.log.wait(warn, waitLong) == "" {
			t.Fatal("no WARN naming max_subscriptions and the client")
		}
		// UNSUBSCRIBE makes room.
		u := &codec.Unsubscribe{PacketID: 4, Filters: [][]byte{[]byte("a")}}
		c.send(u.Append(nil, v))
		if h, _ := c.read(); h.Type != codec.TypeUnsuback {
			t.Fatalf("want UNSUBACK, got %s", h.Type)
		}
		if n := strings.Count(matchAll(warn, b.log.String()), "\n"); n != 1 {
			t.Fatalf("%d WARN lines for one episode of refusals, want 1 (RFC 0002 \"How many topic filters one client may hold\")", n)
		}
		c.mustSubscribe(5, "d", 0)
	})
}

// matchAll returns the lines of s matching re, each ending in a newline.
func matchAll(re *regexp.Regexp, s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if re.MatchString(line) {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

func TestSubscribeUnderTheReservedSpaceIsNotAuthorized(t *testing.T) {
	saguinOnly(t, "$saguin/ is Sagüin's reserved space")
	versions(t, func(t *testing.T, v byte) {
		c := dialRaw(t, mqttTarget(t), v)
		c.mustConnect(clientID(t, "res"), nil)
		want := codec.NotAuthorized
		if v == codec.Version311 {
			want = codec.SubackFailure311
		}
		for _, f := range []string{"$saguin/sessions/disconnect", "$saguin/kv/get", "$saguin/#"} {
			if got := c.subscribe(1, f, 1); got[0] != want {
				t.Errorf("%s: SUBACK 0x%02x, want 0x%02x", f, byte(got[0]), byte(want))
			}
		}
	})
}

func TestSubscribeCarryingAnUnknownSaguinPropertyIsRefused0x83OnEveryFilter(t *testing.T) {
	saguinOnly(t, "RFC 0003 \"The reserved prefix on a client's own packets\"")
	c := dialRaw(t, mqttTarget(t), codec.Version5)
	c.mustConnect(clientID(t, "prop"), nil)
	topic := uniq(t)
	ack := c.subscribeWith(1, func(p *codec.Properties) { p.AddUser([]byte("saguin-slice"), []byte("1")) },
		codec.Subscription{Filter: []byte(topic + "/a"), QoS: 1},
		codec.Subscription{Filter: []byte(topic + "/b"), QoS: 0})
	if fmt.Sprint(ack.ReasonCodes) != fmt.Sprint([]codec.ReasonCode{0x83, 0x83}) {
		t.Fatalf("SUBACK %v, want 0x83 on every filter", ack.ReasonCodes)
	}
}

func TestUnsubscribeCarryingAnUnknownSaguinPropertyIsPerformedAndReported(t *testing.T) {
	saguinOnly(t, "RFC 0003 \"The reserved prefix on a client's own packets\"")
	addr := mqttTarget(t)
	topic := uniq(t)
	c := dialRaw(t, addr, codec.Version5)
	c.mustConnect(clientID(t, "unsub"), nil) // Request Problem Information absent: 1
	c.mustSubscribe(1, topic+"/#", 1)
	u := &codec.Unsubscribe{PacketID: 2, Filters: [][]byte{[]byte(topic + "/#")}}
	u.Properties.AddUser([]byte("saguin-whatever"), []byte("x"))
	c.send(u.Append(nil, codec.Version5))
	h, body := c.read()
	var ack codec.Unsuback
	if h.Type != codec.TypeUnsuback || ack.Decode(h, body, codec.Version5) != nil {
		t.Fatalf("want UNSUBACK, got %s", h.Type)
	}
	if len(ack.ReasonCodes) != 1 || ack.ReasonCodes[0] != codec.Success {
		t.Fatalf("UNSUBACK %v, want [0x00]: the unsubscribe is performed", ack.ReasonCodes)
	}
	var unread string
	for _, kv := range userProps(&ack.Properties) {
		if strings.HasPrefix(kv, "saguin-unread=") {
			unread = kv
		}
		if strings.HasPrefix(kv, "saguin-whatever") {
			t.Fatalf("the client's own property was echoed: %s", kv)
		}
	}
	if !strings.Contains(unread, "saguin-whatever") {
		t.Fatalf("UNSUBACK user properties %v, want saguin-unread naming saguin-whatever", userProps(&ack.Properties))
	}
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.publishQoS1(topic+"/x", []byte("after"), 1)
	c.expectNothing("a delivery after the UNSUBSCRIBE was performed")
}

func TestConnectCarryingAnUnknownSaguinPropertyIsRefused0x83(t *testing.T) {
	saguinOnly(t, "RFC 0003 \"The reserved prefix on a client's own packets\"")
	c := dialRaw(t, mqttTarget(t), codec.Version5)
	ack := c.connect(clientID(t, "conn"), func(p *codec.Connect) {
		p.Properties.AddUser([]byte("saguin-anything"), []byte("1"))
	})
	if ack.ReasonCode != codec.ImplementationSpecificError {
		t.Fatalf("CONNACK 0x%02x, want 0x83", byte(ack.ReasonCode))
	}
}

// TestEveryMalformedFilterShapeIs0x8F: RFC 0002 SUBACK table, 0x8F row - a
// string that is not a topic filter at all is refused on MQTT 5 with the
// rest of the packet answered and the connection kept.
func TestEveryMalformedFilterShapeIs0x8F(t *testing.T) {
	saguinOnly(t, "MQTT lets a server close instead; RFC 0002 answers 0x8F on the SUBACK")
	c := dialRaw(t, mqttTarget(t), codec.Version5)
	c.mustConnect(clientID(t, "shapes"), nil)
	shapes := []string{"a/b#", "a/#/b", "#/a", "a+", "+a/b", "a/b+/c", "a/++"}
	subs := []codec.Subscription{{Filter: []byte("fine/" + uniq(t)), QoS: 1}}
	for _, f := range shapes {
		subs = append(subs, codec.Subscription{Filter: []byte(f), QoS: 1})
	}
	ack := c.subscribeWith(1, nil, subs...)
	if len(ack.ReasonCodes) != len(subs) || ack.ReasonCodes[0] != codec.GrantedQoS1 {
		t.Fatalf("SUBACK %v, want one code per filter, the first granted", ack.ReasonCodes)
	}
	for i, f := range shapes {
		if ack.ReasonCodes[i+1] != codec.TopicFilterInvalid {
			t.Errorf("%q: 0x%02x, want 0x8f", f, byte(ack.ReasonCodes[i+1]))
		}
	}
	c.ping() // still connected
}

func TestMqttRetainedValueCarriesTheSubscriptionIdentifier(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.retain(topic+"/a", []byte("v"), 1, nil)
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect(clientID(t, "sub"), nil)
	sub.subscribeWith(1, func(p *codec.Properties) {
		p.SubscriptionIDs = []uint32{77}
		p.Present.Set(codec.PropSubscriptionID)
	}, codec.Subscription{Filter: []byte(topic + "/#"), QoS: 1})
	p := sub.expectPublish()
	if !p.Retain || fmt.Sprint(p.Properties.SubscriptionIDs) != "[77]" {
		t.Fatalf("retain %v Subscription Identifiers %v, want the retained value carrying [77] (MQTT-3.3.4-3)", p.Retain, p.Properties.SubscriptionIDs)
	}
}
