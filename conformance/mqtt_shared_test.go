package conformance

import (
	"fmt"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// RFC 0002 "Shared subscriptions" and "What a shared group is owed:
// broker.share", RFC 0003 "Broadcast" (shared-group backlog, a member's
// session ending), "When a record is too large for a subscriber"; MQTT 5 4.8.2.

// member connects a client named id and subscribes it to $share/group/filter.
func member(t *testing.T, addr, id, group, filter string, qos byte, mutate func(*codec.Connect)) *raw {
	t.Helper()
	m := dialRaw(t, addr, codec.Version5)
	m.mustConnect(id, mutate)
	m.mustSubscribe(1, "$share/"+group+"/"+filter, qos)
	return m
}

func TestMqttSharedSubscriptionDeliversEachMessageToExactlyOneMember(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	a := member(t, addr, clientID(t, "a"), "g", topic+"/#", 1, nil)
	b := member(t, addr, clientID(t, "b"), "g", topic+"/#", 1, nil)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	const n = 10
	for i := 0; i < n; i++ {
		pub.publishQoS1(topic+"/x", []byte(fmt.Sprint(i)), uint16(i+1))
	}
	seen := map[string]int{}
	for deadline := time.Now().Add(waitLong); len(seen) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("the group received %d distinct messages of %d", len(seen), n)
		}
		for _, m := range []*raw{a, b} {
			for _, p := range m.ping() {
				seen[string(p.Payload)]++
				m.ackDelivery(p)
			}
		}
	}
	// Anything a member is still sent after all n were seen is a duplicate.
	for _, m := range []*raw{a, b} {
		for _, p := range m.ping() {
			seen[string(p.Payload)]++
		}
	}
	for k, c := range seen {
		if c != 1 {
			t.Fatalf("message %s delivered %d times across the group, want once (MQTT 5 4.8.2)", k, c)
		}
	}
}

// TestSharedMembersTakeTurnsInClientIDOrder: RFC 0002 "Shared subscriptions"
// - the members that qualify take turns in the order of their client ids.
func TestSharedMembersTakeTurnsInClientIDOrder(t *testing.T) {
	saguinOnly(t, "MQTT leaves the choice of member to the server; RFC 0002 sets turns in client-id order")
	addr := mqttTarget(t)
	topic := uniq(t)
	b := member(t, addr, "turn-b", "g", topic+"/#", 1, nil)
	a := member(t, addr, "turn-a", "g", topic+"/#", 1, nil)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	for i := 1; i <= 4; i++ {
		pub.publishQoS1(topic+"/x", []byte{byte('0' + i)}, uint16(i))
	}
	var ga, gb string
	for deadline := time.Now().Add(waitLong); len(ga)+len(gb) < 4 && time.Now().Before(deadline); {
		for _, p := range a.ping() {
			ga += string(p.Payload)
			a.ackDelivery(p)
		}
		for _, p := range b.ping() {
			gb += string(p.Payload)
			b.ackDelivery(p)
		}
	}
	if len(ga)+len(gb) != 4 || len(ga) != 2 {
		t.Fatalf("turn-a got %q, turn-b got %q: want two each, alternating", ga, gb)
	}
	if !(ga == "13" && gb == "24") && !(ga == "24" && gb == "13") {
		t.Fatalf("turn-a got %q, turn-b got %q: want alternate messages each", ga, gb)
	}
}

func TestMqttSharedSubscriptionWithNoLocalIsAProtocolError(t *testing.T) {
	c := dialRaw(t, mqttTarget(t), codec.Version5)
	c.mustConnect(clientID(t, "nl"), nil)
	s := &codec.Subscribe{PacketID: 1, Subscriptions: []codec.Subscription{{Filter: []byte("$share/g/" + uniq(t)), QoS: 1, NoLocal: true}}}
	c.send(s.Append(nil, codec.Version5))
	c.expectDisconnect(codec.ProtocolError) // MQTT-3.8.3-4
}

func TestMqttSharedAndNonSharedSubscriptionsEachDeliverACopy(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	c := dialRaw(t, addr, codec.Version5)
	c.mustConnect(clientID(t, "both"), nil)
	c.mustSubscribe(1, "$share/g/"+topic+"/#", 1)
	c.mustSubscribe(2, topic+"/#", 1)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.publishQoS1(topic+"/x", []byte("twice"), 1)
	pub.publishQoS1(topic+"/x", []byte("end"), 2)
	// Each subscription is sent "end" after "twice": two markers bound the count.
	got := 0
	for _, round := range [][]*codec.Publish{c.readUntil("end"), c.readUntil("end")} {
		for _, p := range round {
			if string(p.Payload) == "twice" {
				got++
			}
		}
	}
	if got != 2 {
		t.Fatalf("got %d copies, want one for the shared and one for the plain subscription (RFC 0003 \"Broadcast\"; MQTT 5 4.8.2)", got)
	}
}

// TestSharedSubscriptionRefusalsCarryTheirCode is RFC 0002's four refusals
// of a shared subscription, each a SUBACK code, the connection kept.
func TestSharedSubscriptionRefusalsCarryTheirCode(t *testing.T) {
	saguinOnly(t, "MQTT makes $SHARE an ordinary level and lets 3.1.1 brokers share; RFC 0002 refuses these")
	addr := mqttTarget(t)
	cases := []struct {
		name   string
		filter string
		code   codec.ReasonCode
	}{
		{"empty share name", "$share//a/b", codec.TopicFilterInvalid},
		{"wildcard in share name", "$share/g+/a", codec.TopicFilterInvalid},
		{"no filter after the name", "$share/g", codec.TopicFilterInvalid},
		{"filter beginning $share again", "$share/g/$share/h/a", codec.TopicFilterInvalid},
		{"filter beginning $SHARE again", "$share/g/$SHARE/h/a", codec.TopicFilterInvalid},
		{"upper-case $SHARE", "$SHARE/g/a/b", codec.TopicFilterInvalid},
		{"mixed-case $Share", "$Share/g/a/b", codec.TopicFilterInvalid},
		{"SYS inside", "$share/g/$SYS/#", codec.NotAuthorized},
		{"reserved space inside", "$share/g/$saguin/queue/jobs", codec.NotAuthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, addr, codec.Version5)
			c.mustConnect(clientID(t, "share"), nil)
			if got := c.subscribe(1, tc.filter, 1); len(got) != 1 || got[0] != tc.code {
				t.Fatalf("%s: SUBACK %v, want 0x%02x", tc.filter, got, byte(tc.code))
			}
			c.mustSubscribe(2, "fine/after", 1) // the connection stays up
		})
	}
}

func TestSharedSubscriptionFromA311ClientIsRefused0x80(t *testing.T) {
	saguinOnly(t, "3.1.1 gives $share no meaning; Mosquitto shares it anyway, RFC 0002 refuses it 0x80")
	c := dialRaw(t, mqttTarget(t), codec.Version311)
	c.mustConnect(clientID(t, "old"), nil)
	if got := c.subscribe(1, "$share/g/"+uniq(t), 1); got[0] != codec.SubackFailure311 {
		t.Fatalf("SUBACK 0x%02x, want 0x80", byte(got[0]))
	}
}

// TestSharedGroupHoldsABacklogWhileItsDurableMemberIsAway: a group with a
// member whose session outlives its connection keeps QoS 1 deliveries while
// every member is away, and serves them in publish order to the first
// member back (RFC 0003 "Broadcast": shared-group backlog).
func TestSharedGroupHoldsABacklogWhileItsDurableMemberIsAway(t *testing.T) {
	saguinOnly(t, "MQTT does not say what a group is owed while all members are away")
	addr := mqttTarget(t)
	topic := uniq(t)
	id := clientID(t, "m")
	m := member(t, addr, id, "g", topic+"/#", 1, freshSession(60))
	m.disconnect()
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	for i := 1; i <= 3; i++ {
		pub.publishQoS1(topic+"/x", []byte{byte('0' + i)}, uint16(i))
	}
	pub.publish(topic+"/x", []byte("q0"), 0, 0) // QoS 0 is owed to nobody
	pub.ping()
	back := dialRaw(t, addr, codec.Version5)
	back.mustConnect(id, session(60))
	for i := 1; i <= 3; i++ {
		p := back.expectPublish()
		if string(p.Payload) != string([]byte{byte('0' + i)}) {
			t.Fatalf("backlog delivery %d is %q, want publish order", i, p.Payload)
		}
		back.ackDelivery(p)
	}
	back.expectNothing("after the backlog (a QoS 0 delivery is never held)")
}

func TestSharedGroupOfConnectionBoundMembersHoldsNothing(t *testing.T) {
	saguinOnly(t, "RFC 0003 \"Broadcast\": only a group with a durable member holds a backlog")
	addr := mqttTarget(t)
	topic := uniq(t)
	keep := member(t, addr, clientID(t, "keep"), "g", topic+"/#", 1, freshSession(60))
	keep.disconnect()
	// A second group on the same filter whose only member ends with its connection.
	id := clientID(t, "bound")
	m := member(t, addr, id, "h", topic+"/#", 1, nil)
	m.disconnect()
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.publishQoS1(topic+"/x", []byte("nobody"), 1)
	again := member(t, addr, id, "h", topic+"/#", 1, nil)
	again.expectNothing("a group with no durable member held a delivery")
}

// TestSharedQoS1DeliveryGoesBackToTheGroupWhenItsMembersSessionEnds: RFC
// 0003 "Broadcast", a member's session ending with a QoS 1 delivery
// unacknowledged - it is served to another member.
func TestSharedQoS1DeliveryGoesBackToTheGroupWhenItsMembersSessionEnds(t *testing.T) {
	saguinOnly(t, "MQTT 5 4.8.2 allows either; RFC 0003 returns it to the group")
	addr := mqttTarget(t)
	topic := uniq(t)
	first := member(t, addr, "back-a", "g", topic+"/#", 1, nil)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.publishQoS1(topic+"/x", []byte("job"), 1)
	p := first.expectPublish()
	if string(p.Payload) != "job" {
		t.Fatalf("got %q", p.Payload)
	}
	second := member(t, addr, "back-b", "g", topic+"/#", 1, nil)
	first.drop() // session ends with the connection, the delivery unacknowledged
	if got := second.expectPublish(); string(got.Payload) != "job" {
		t.Fatalf("the other member got %q, want the returned delivery", got.Payload)
	}
}

// TestSharedQoS2DeliveryNotYetReceivedIsNotGivenToAnotherMember is
// MQTT-4.8.2-5 as RFC 0003 "Broadcast" states it: a QoS 2 delivery whose
// member ended before its PUBREC is dropped, not handed on.
func TestSharedQoS2DeliveryNotYetReceivedIsNotGivenToAnotherMember(t *testing.T) {
	saguinOnly(t, "needs the member choice in client-id order to know who is sent it")
	addr := mqttTarget(t)
	topic := uniq(t)
	first := member(t, addr, "q2-a", "g", topic+"/#", 2, nil)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.publishQoS2(topic+"/x", []byte("once"), 1)
	if p := first.expectPublish(); p.QoS != 2 {
		t.Fatalf("delivered at QoS %d", p.QoS)
	}
	second := member(t, addr, "q2-b", "g", topic+"/#", 2, nil)
	first.drop()
	second.expectNothing("a QoS 2 delivery handed to another member (MQTT-4.8.2-5)")
}

// TestSharedMemberTheMessageIsTooLargeForIsPassedOver: RFC 0003 "When a
// record is too large for a subscriber" - a member whose Maximum Packet Size
// the message is over is passed over, not disconnected.
func TestSharedMemberTheMessageIsTooLargeForIsPassedOver(t *testing.T) {
	saguinOnly(t, "MQTT only says not to send it; RFC 0003 says who gets it instead")
	addr := mqttTarget(t)
	topic := uniq(t)
	small := member(t, addr, "big-a", "g", topic+"/#", 1, func(c *codec.Connect) {
		c.Properties.MaximumPacketSize = 128
		c.Properties.Present.Set(codec.PropMaximumPacketSize)
	})
	large := member(t, addr, "big-b", "g", topic+"/#", 1, nil)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	for i := 1; i <= 2; i++ {
		pub.publishQoS1(topic+"/x", make([]byte, 1024), uint16(i))
	}
	for i := 0; i < 2; i++ {
		p := large.expectPublish()
		large.ackDelivery(p)
	}
	small.expectNothing("a message over the member's Maximum Packet Size") // and still connected
}

// TestSharedBacklogIsServedBeforeNewDeliveries: RFC 0003 "Broadcast" - while
// a group holds a backlog a new delivery joins its back, even when a member
// could take it now (publisher order, MQTT-4.6.0-6).
func TestSharedBacklogIsServedBeforeNewDeliveries(t *testing.T) {
	saguinOnly(t, "the shared-group backlog is RFC 0003's")
	addr := mqttTarget(t)
	topic := uniq(t)
	away := member(t, addr, clientID(t, "away"), "g", topic+"/#", 1, freshSession(300))
	away.disconnect()
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.publishQoS1(topic+"/x", []byte("1"), 1)
	pub.publishQoS1(topic+"/x", []byte("2"), 2)
	joined := member(t, addr, clientID(t, "joined"), "g", topic+"/#", 1, nil)
	pub.publishQoS1(topic+"/x", []byte("3"), 3)
	var got string
	for len(got) < 3 {
		p := joined.expectPublish()
		got += string(p.Payload)
		joined.ackDelivery(p)
	}
	if got != "123" {
		t.Fatalf("the joining member got %q, want the backlog first: 123", got)
	}
}

// TestSharedMemberAwayIsNotGivenTheGroupsShare: RFC 0002 "Shared
// subscriptions" - a member whose client is away is not given the group's
// share to hold while another member is connected.
func TestSharedMemberAwayIsNotGivenTheGroupsShare(t *testing.T) {
	saguinOnly(t, "MQTT leaves member choice to the server; RFC 0002 sets it")
	addr := mqttTarget(t)
	topic := uniq(t)
	awayID := clientID(t, "away")
	away := member(t, addr, awayID, "g", topic+"/#", 1, freshSession(300))
	away.disconnect()
	here := member(t, addr, clientID(t, "here"), "g", topic+"/#", 1, nil)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	for i := 1; i <= 4; i++ {
		pub.publishQoS1(topic+"/x", []byte{byte('0' + i)}, uint16(i))
	}
	for i := 1; i <= 4; i++ {
		p := here.expectPublish()
		here.ackDelivery(p)
	}
	back := dialRaw(t, addr, codec.Version5)
	back.mustConnect(awayID, session(300))
	pub.publishQoS1(topic+"/y", []byte("end"), 5) // a turn for whichever member is next
	for _, p := range back.collect(0) {
		if string(p.Payload) != "end" {
			t.Fatalf("the returning member was given %q, held for it while it was away", p.Payload)
		}
	}
}

// TestMqttSharedQoS2DeliveryItsMemberReceivedIsNotGivenToAnotherWhenItsSessionEnds:
// RFC 0003 "Broadcast" (a member's session ending, the PUBREC row): a QoS 2
// delivery whose PUBREC the member sent has reached it, so nobody else is
// sent it when the member's session ends (MQTT 5 4.8.2).
func TestMqttSharedQoS2DeliveryItsMemberReceivedIsNotGivenToAnotherWhenItsSessionEnds(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	first := member(t, addr, clientID(t, "rec-a"), "g", topic+"/#", 2, nil)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.publishQoS2(topic+"/x", []byte("once"), 1)
	p := first.expectPublish()
	first.sendAck(codec.TypePubrec, p.PacketID)
	first.expectAck(codec.TypePubrel, p.PacketID)
	second := member(t, addr, clientID(t, "rec-b"), "g", topic+"/#", 2, nil)
	first.drop() // its session ends with the connection, the PUBCOMP never sent
	second.expectNothing("a QoS 2 delivery its member had received was given to another member")
}

// TestMqttSharedDeliveryOfAMemberWhoseSessionIsKeptWaitsForItsResume: RFC
// 0003 "Broadcast" - only an ending gives a group delivery back; a member
// whose connection closes while its session is kept is re-sent it on resume,
// with DUP under its identifier, and no other member is.
func TestMqttSharedDeliveryOfAMemberWhoseSessionIsKeptWaitsForItsResume(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	id := clientID(t, "kept-a")
	first := member(t, addr, id, "g", topic+"/#", 1, freshSession(60))
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.publishQoS1(topic+"/x", []byte("job"), 1)
	p := first.expectPublish() // not acknowledged
	second := member(t, addr, clientID(t, "kept-b"), "g", topic+"/#", 1, nil)
	first.drop()
	second.expectNothing("a kept member's unfinished delivery was given to another member")
	back := dialRaw(t, addr, codec.Version5)
	back.mustConnect(id, session(60))
	again := back.expectPublish()
	if string(again.Payload) != "job" || again.PacketID != p.PacketID || !again.Dup {
		t.Fatalf("on resume got %q id %d DUP %v, want the unfinished delivery under id %d with DUP", again.Payload, again.PacketID, again.Dup, p.PacketID)
	}
}

// TestSharedQoS1DeliveryGoesBackToTheGroupWhenAKeptMembersSessionExpires:
// RFC 0003 "Broadcast" - however a member's session ends, a QoS 1 delivery
// it left unacknowledged goes back to the group, here at its expiry.
func TestSharedQoS1DeliveryGoesBackToTheGroupWhenAKeptMembersSessionExpires(t *testing.T) {
	saguinOnly(t, "MQTT 5 4.8.2 allows either; RFC 0003 returns it to the group")
	addr := mqttTarget(t)
	topic := uniq(t)
	first := member(t, addr, clientID(t, "exp-a"), "g", topic+"/#", 1, freshSession(1))
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.publishQoS1(topic+"/x", []byte("job"), 1)
	first.expectPublish() // not acknowledged
	second := member(t, addr, clientID(t, "exp-b"), "g", topic+"/#", 1, nil)
	first.drop() // kept one second, then it ends
	if got := second.expectPublishWithin(waitLong); string(got.Payload) != "job" {
		t.Fatalf("the other member got %q, want the delivery the expired session left", got.Payload)
	}
}
