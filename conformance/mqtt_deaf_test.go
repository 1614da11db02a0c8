package conformance

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// Issue 6 "Done when": a subscriber that stops reading costs no other client
// anything (notes-0001 invariants 13 and 16; RFC 0002 "How long a delivery
// may wait on a consumer").

// deafTarget is the broker a deaf-subscriber test aims at: saguin with
// limits.write_timeout none, so the deaf client is never hung up on and stays
// deaf for the whole test, or the peer as it comes.
func deafTarget(t *testing.T) string {
	t.Helper()
	if *peerFlag != "" || *brokerFlag != "" {
		return mqttTarget(t)
	}
	return startBroker(t, brokerConfig{Limits: "write_timeout: none"}).addr
}

// TestMqttDeafSubscriberCostsNoOtherClientAnything: one subscriber stops
// reading with its window full (QoS 1 unacknowledged, Receive Maximum 4 on
// MQTT 5) and its socket full (QoS 0 megabytes it never reads). Another
// subscriber of the same topic receives every message, and the publisher is
// answered every PUBACK.
func TestMqttDeafSubscriberCostsNoOtherClientAnything(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := deafTarget(t)
		topic := uniq(t)
		deaf := dialRaw(t, addr, v)
		deaf.mustConnect(clientID(t, "deaf"), func(p *codec.Connect) {
			if v == codec.Version5 {
				p.Properties.ReceiveMaximum = 4
				p.Properties.Present.Set(codec.PropReceiveMaximum)
			}
		})
		deaf.mustSubscribe(1, topic+"/#", 1)
		deafen(t, deaf)
		listener := dialRaw(t, addr, v)
		listener.mustConnect(clientID(t, "listener"), nil)
		listener.mustSubscribe(1, topic+"/#", 1)
		pub := dialRaw(t, addr, v)
		pub.mustConnect(clientID(t, "pub"), nil)

		const n = 2000 // every other one at QoS 0: 4 MiB a deaf socket never takes
		got := make(chan error, 1)
		go func() { got <- listenFor(listener, n) }()
		payload := make([]byte, 4<<10)
		for i := 1; i <= n; i++ {
			copy(payload, fmt.Sprintf("%06d", i))
			qos := byte(i % 2) // odd at QoS 1: PUBACKs to wait for
			pub.publish(topic+"/x", payload, qos, uint16(i))
			if qos == 1 {
				if code := pub.expectPuback(uint16(i)); code >= 0x80 {
					t.Fatalf("PUBACK %d: 0x%02x, want success beside a deaf subscriber", i, byte(code))
				}
			}
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
	})
}

// listenFor reads c until it has received messages 1..n, each once,
// acknowledging QoS 1; it returns what went wrong, off the test's goroutine.
func listenFor(c *raw, n int) error {
	seen := make(map[int]bool, n)
	for len(seen) < n {
		h, body, err := c.next(waitLong)
		if err != nil {
			return fmt.Errorf("the listening subscriber received %d of %d messages: %v", len(seen), n, err)
		}
		if h.Type != codec.TypePublish {
			return fmt.Errorf("the listening subscriber got %s, want PUBLISH", h.Type)
		}
		var p codec.Publish
		if err := p.Decode(h, body, c.version); err != nil {
			return err
		}
		i, err := strconv.Atoi(string(p.Payload[:6]))
		if err != nil || i < 1 || i > n || seen[i] {
			return fmt.Errorf("the listening subscriber got message %q (seen before: %v)", p.Payload[:6], seen[i])
		}
		seen[i] = true
		if p.QoS == 1 {
			c.nc.Write((&codec.Ack{Type: codec.TypePuback, PacketID: p.PacketID}).Append(nil, c.version))
		}
	}
	return nil
}
