package conformance

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// RFC 0002 "Shared subscriptions": each message goes to one member that can
// take it now - with room in the window its Receive Maximum gives - and a
// group with a member whose session outlives its connection holds what none
// can take; notes-0003 "Ordering": while it holds a backlog, a new message
// joins its back.

// receiveMax1 caps the client's in-flight window at one delivery.
func receiveMax1(c *codec.Connect) {
	c.Properties.ReceiveMaximum = 1
	c.Properties.Present.Set(codec.PropReceiveMaximum)
}

// floodGroup publishes n QoS 1 messages to a group of a and b, neither
// acknowledging meanwhile, then has both acknowledge whatever they are sent
// until want distinct messages arrived (or the deadline), and returns what
// each received, in order.
func floodGroup(t *testing.T, topic string, pub, a, b *raw, n, want int) (ga, gb []int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		pub.publishQoS1(topic+"/x", []byte(strconv.Itoa(i)), uint16(i))
	}
	got := map[*raw]*[]int{a: &ga, b: &gb}
	for deadline := time.Now().Add(waitLong); len(ga)+len(gb) < want; {
		if time.Now().After(deadline) {
			t.Fatalf("after the publisher stopped the group received %d of %d messages: a %v, b %v", len(ga)+len(gb), want, ga, gb)
		}
		for _, m := range []*raw{a, b} {
			for _, p := range m.ping() {
				v, _ := strconv.Atoi(string(p.Payload))
				*got[m] = append(*got[m], v)
				m.ackDelivery(p)
			}
		}
	}
	// Anything still sent now is a duplicate.
	for _, m := range []*raw{a, b} {
		for _, p := range m.ping() {
			v, _ := strconv.Atoi(string(p.Payload))
			*got[m] = append(*got[m], v)
			m.ackDelivery(p)
		}
	}
	return ga, gb
}

// onceInOrder fails unless every message in ga and gb appears once across
// them, and each member received its share in publish order.
func onceInOrder(t *testing.T, ga, gb []int) map[int]bool {
	t.Helper()
	seen := map[int]bool{}
	for _, g := range [][]int{ga, gb} {
		for i, v := range g {
			if seen[v] {
				t.Fatalf("message %d reached the group twice: a %v, b %v (MQTT 5 4.8.2)", v, ga, gb)
			}
			seen[v] = true
			if i > 0 && g[i-1] > v {
				t.Fatalf("a member received %v: %d overtook %d (MQTT-4.6.0-6)", g, v, g[i-1])
			}
		}
	}
	return seen
}

func TestSharedGroupBacklogDrainsToMembersAsTheirAcknowledgementsOpenTheirWindows(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	// a's session outlives its connection, so what neither can take is held.
	a := member(t, addr, clientID(t, "a"), "g", topic+"/#", 1, both(freshSession(300), receiveMax1))
	b := member(t, addr, clientID(t, "b"), "g", topic+"/#", 1, receiveMax1)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	const n = 20
	ga, gb := floodGroup(t, topic, pub, a, b, n, n)
	seen := onceInOrder(t, ga, gb)
	for i := 1; i <= n; i++ {
		if !seen[i] {
			t.Fatalf("message %d never reached the group: a %v, b %v", i, ga, gb)
		}
	}
	if len(ga) < 2 || len(gb) < 2 {
		t.Fatalf("the backlog drained to one member only: a %v, b %v", ga, gb)
	}
}

// With no member whose session outlives its connection the group holds
// nothing: what neither window has room for is dropped (RFC 0002), never
// handed to a member that cannot take it, and the group serves again as soon
// as the members have acknowledged.
func TestSharedGroupWithNoKeptSessionDropsWhatNoWindowHasRoomForAndServesAgain(t *testing.T) {
	saguinOnly(t, "MQTT leaves a shared message nobody can take to the server; RFC 0002 drops it without a kept session")
	addr := mqttTarget(t)
	topic := uniq(t)
	a := member(t, addr, clientID(t, "a"), "g", topic+"/#", 1, receiveMax1)
	b := member(t, addr, clientID(t, "b"), "g", topic+"/#", 1, receiveMax1)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	const n = 20
	ga, gb := floodGroup(t, topic, pub, a, b, n, 2)
	onceInOrder(t, ga, gb)
	if len(ga)+len(gb) != 2 {
		t.Fatalf("two windows of one took %d messages: a %v, b %v", len(ga)+len(gb), ga, gb)
	}
	pub.publishQoS1(topic+"/x", []byte(fmt.Sprint(n+1)), n+1)
	ga, gb = floodGroup(t, topic, pub, a, b, 0, 1)
	if len(ga)+len(gb) != 1 || append(ga, gb...)[0] != n+1 {
		t.Fatalf("after both acknowledged the group received a %v, b %v, want only %d", ga, gb, n+1)
	}
}
