package conformance

import (
	"sort"
	"strings"
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// Wills, No Local, shared groups and 3.1.1 consumers on append channels
// (checklist-channels.md A1.25, A8, A12, A13). Each test starts its own broker
// with the append channel "events" on ev/#.

// A1.25, A8.4: a Will into an append channel is written at once, its QoS 2
// never held, and stored as its arming client's: that client's No Local
// subscription is not served it when it comes back.
func TestAppendWillIsStoredAsItsArmingClients(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	publishAll(t, b, "ev/x", "before")
	dev := dialRaw(t, b.addr, codec.Version5)
	dev.mustConnect("dev", both(freshSession(300), will("ev/will", "gone", 2, false, 0)))
	dev.drop() // no DISCONNECT: the Will is published
	reader := dialRaw(t, b.addr, codec.Version5)
	reader.mustConnect("reader", nil)
	reader.mustSubscribe(1, "ev/will", 1)
	if got := reader.collect(1); len(got) != 1 || string(got[0].Payload) != "gone" {
		t.Fatalf("the channel holds %v on ev/will, want the QoS 2 Will written", payloads(got))
	}
	back := dialRaw(t, b.addr, codec.Version5)
	back.mustConnect("dev", freshSession(300))
	back.subscribeWith(1, nil, codec.Subscription{Filter: []byte("ev/#"), QoS: 1, NoLocal: true})
	publishAll(t, b, "ev/x", "end")
	if got := payloads(back.readUntil("end")); strings.Join(got, ",") != "before" {
		t.Fatalf("the arming client's No Local subscription was served %v, want before only (not its own Will)", got)
	}
}

// A8.2: on append, No Local is taken from the subscription that matched: a
// client's own record matching both its No Local subscription and another
// of its subscriptions without it is delivered, once.
func TestAppendNoLocalIsTakenFromTheMatchingSubscription(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	me := dialRaw(t, b.addr, codec.Version5)
	me.mustConnect("me", nil)
	me.subscribeWith(1, nil, codec.Subscription{Filter: []byte("ev/#"), QoS: 1, NoLocal: true})
	me.subscribeWith(2, nil, codec.Subscription{Filter: []byte("ev/both"), QoS: 1})
	me.publishQoS1("ev/only", []byte("own-withheld"), 1)
	me.publishQoS1("ev/both", []byte("own-delivered"), 2)
	publishAll(t, b, "ev/only", "end")
	var got []string
	for {
		p := me.expectPublishWithin(waitLong)
		me.ackDelivery(p)
		if string(p.Payload) == "end" {
			break
		}
		got = append(got, string(p.Payload))
	}
	if strings.Join(got, ",") != "own-delivered" {
		t.Fatalf("served %v, want own-delivered once (ev/both also matches a subscription without No Local)", got)
	}
}

// A13.1, A13.6: a shared subscription over append never moves a stored
// position, not even its own client's: what a member acknowledged through
// its group is replayed to its ordinary subscription; and a member also
// subscribed ordinarily gets a record twice, once by each.
func TestSharedSubscriptionNeverMovesTheMembersPosition(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	m := dialRaw(t, b.addr, codec.Version5)
	m.mustConnect("member", freshSession(300))
	m.mustSubscribe(1, "ev/a", 1)
	publishAll(t, b, "ev/a", "r1", "m1")
	m.readUntil("m1")
	m.mustSubscribe(2, "$share/g/ev/#", 1)
	publishAll(t, b, "ev/a", "twice")
	var got []string
	for len(got) < 2 {
		p := m.expectPublishWithin(waitLong)
		m.ackDelivery(p)
		got = append(got, string(p.Payload))
	}
	if strings.Join(got, ",") != "twice,twice" {
		t.Fatalf("served %v, want twice once by each subscription", got)
	}
	m.unsubscribe(3, "ev/a")
	publishAll(t, b, "ev/a", "shared1", "shared2")
	for _, want := range []string{"shared1", "shared2"} {
		p := m.expectPublishWithin(waitLong)
		m.ackDelivery(p) // acknowledged through the group
		if string(p.Payload) != want {
			t.Fatalf("the group served %q, want %s", p.Payload, want)
		}
	}
	m.unsubscribe(4, "$share/g/ev/#")
	m.mustSubscribe(5, "ev/a", 1)
	publishAll(t, b, "ev/a", "m2")
	got = payloads(m.readUntil("m2"))
	sort.Strings(got)
	if strings.Join(got, ",") != "shared1,shared2" {
		t.Fatalf("the ordinary subscription resumed with %v, want shared1,shared2: the group's acknowledgements moved the position", got)
	}
}

// A12.3, A6.24: a 3.1.1 consumer has no Response Topic: subscribed to its
// seek reply topic, a seek's reply reaches it there - the stored offset -
// before the PUBACK, and the channel is served again from there.
func TestA311ConsumerSeeksThroughTheSeekReplyTopic(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	publishAll(t, b, "ev/o", "r1", "r2", "m1")
	c := dialRaw(t, b.addr, codec.Version311)
	c.mustConnect("old-seeker", session(0))
	c.mustSubscribe(1, "ev/o", 1)
	c.readUntil("m1")
	if got := c.subscribe(2, "$saguin/consumer/events/seek/reply", 1); got[0] != codec.GrantedQoS1 {
		t.Fatalf("SUBSCRIBE to the seek reply topic: SUBACK 0x%02x", byte(got[0]))
	}
	reply, code, early := c.seekSeeing("events", "2", "", 3)
	if code != codec.Success || reply == nil || string(reply.Topic) != "$saguin/consumer/events/seek/reply" || string(reply.Payload) != "2" {
		t.Fatalf("3.1.1 seek 2: PUBACK 0x%02x, reply %v; want 2 on the seek reply topic before the PUBACK", byte(code), reply)
	}
	publishAll(t, b, "ev/o", "m2")
	if got := payloads(append(early, c.readUntil("m2")...)); strings.Join(got, ",") != "r2,m1" {
		t.Fatalf("after the seek: %v, want r2,m1", got)
	}
}
