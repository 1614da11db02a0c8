package conformance

import (
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// MQTT-3.3.4-6: a PUBLISH a client sends MUST NOT carry a Subscription
// Identifier; the broker answers it as a Protocol Error and routes nothing.
func TestPublishCarryingASubscriptionIdentifierIsAProtocolError(t *testing.T) {
	addr := target(t)
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect(clientID(t, "sub"), nil)
	topic := uniq(t) + "/subid"
	sub.mustSubscribe(1, topic, 1)

	c := dialRaw(t, addr, codec.Version5)
	c.mustConnect(clientID(t, "pub"), nil)
	// PUBLISH QoS 1, topic, packet id 1, properties: Subscription Identifier 5.
	body := append([]byte{0, byte(len(topic))}, topic...)
	body = append(body, 0, 1)                                 // packet identifier
	body = append(body, 2, byte(codec.PropSubscriptionID), 5) // properties
	body = append(body, "forbidden"...)
	c.send(append([]byte{0x32, byte(len(body))}, body...))
	c.expectDisconnect(codec.ProtocolError)

	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "marker"), nil)
	pub.publishQoS1(topic, []byte("marker"), 1)
	if got := sub.readUntil("marker"); len(got) != 0 {
		t.Fatalf("the refused PUBLISH was routed: the subscriber got %q before the marker", got[0].Payload)
	}
}
