package conformance

import (
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// RFC 0002 "Publishing" and "What each channel type admits: the SUBACK codes"
// for what a broadcast-only broker already refuses.

func TestPublishIntoTheReservedSpaceIsRefused(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		c := dialRaw(t, target(t), v)
		c.mustConnect("reserved", nil)
		c.publish("$saguin/nothing/here", []byte("x"), 1, 1)
		if v == codec.Version311 {
			// 3.1.1's PUBACK has no code: a refusal closes rather than
			// acknowledging a discarded record.
			c.expectClosedSilently()
			return
		}
		if code := c.expectPuback(1); code != codec.TopicNameInvalid {
			t.Fatalf("PUBACK 0x%02x, want 0x90", byte(code))
		}
	})
}

func TestPublishIntoSYSIsNotAuthorized(t *testing.T) {
	c := dialRaw(t, target(t), codec.Version5)
	c.mustConnect("sys", nil)
	c.publish("$SYS/broker/x", []byte("x"), 1, 1)
	if code := c.expectPuback(1); code != codec.NotAuthorized {
		t.Fatalf("PUBACK 0x%02x, want 0x87", byte(code))
	}
}

func TestPublishOverMaxTopicLengthIsRefused(t *testing.T) {
	b := startBroker(t, brokerConfig{Limits: "max_topic_length: 16"})
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect("long", nil)
	c.publish("aaaaaaaaaaaaaaaaaaaa", []byte("x"), 1, 1)
	if code := c.expectPuback(1); code != codec.TopicNameInvalid {
		t.Fatalf("PUBACK 0x%02x, want 0x90", byte(code))
	}
}

func TestSubscribeRefusalsCarryTheirCodeAnd0x80To311(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		c := dialRaw(t, target(t), v)
		c.mustConnect("subref", nil)
		want := map[string]codec.ReasonCode{"$SYS/#": codec.NotAuthorized, "$saguin/queue/nope": codec.TopicFilterInvalid}
		for filter, code := range want {
			if v == codec.Version311 {
				code = codec.SubackFailure311
			}
			if got := c.subscribe(1, filter, 1); got[0] != code {
				t.Errorf("%s: SUBACK 0x%02x, want 0x%02x", filter, byte(got[0]), byte(code))
			}
		}
		// The connection stays up after a refused filter.
		if got := c.subscribe(2, "fine/#", 1); got[0] != codec.GrantedQoS1 {
			t.Fatalf("SUBACK 0x%02x after a refusal, want granted", byte(got[0]))
		}
	})
}

func TestMalformedFilterIs0x8FOr311Closes(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		c := dialRaw(t, target(t), v)
		c.mustConnect("badfilter", nil)
		s := &codec.Subscribe{PacketID: 1, Subscriptions: []codec.Subscription{{Filter: []byte("a/b#"), QoS: 0}}}
		c.send(s.Append(nil, v))
		if v == codec.Version311 {
			c.expectClosedSilently()
			return
		}
		h, body := c.read()
		var ack codec.Suback
		if err := ack.Decode(h, body, v); err != nil || ack.ReasonCodes[0] != codec.TopicFilterInvalid {
			t.Fatalf("SUBACK %v %v, want 0x8f", ack.ReasonCodes, err)
		}
	})
}

func TestUnsubscribeStopsDeliveryAndAnswersEachFilter(t *testing.T) {
	addr := target(t)
	c := dialRaw(t, addr, codec.Version5)
	c.mustConnect("unsub", nil)
	c.subscribe(1, "u/#", 0)
	u := &codec.Unsubscribe{PacketID: 2, Filters: [][]byte{[]byte("u/#"), []byte("never")}}
	c.send(u.Append(nil, codec.Version5))
	h, body := c.read()
	var ack codec.Unsuback
	if err := ack.Decode(h, body, codec.Version5); err != nil {
		t.Fatal(err)
	}
	if len(ack.ReasonCodes) != 2 || ack.ReasonCodes[0] != codec.Success || ack.ReasonCodes[1] != codec.NoSubscriptionExisted {
		t.Fatalf("UNSUBACK %v, want [0x00 0x11]", ack.ReasonCodes)
	}
	p := dialRaw(t, addr, codec.Version5)
	p.mustConnect("unsub-pub", nil)
	p.publish("u/x", []byte("gone"), 1, 1)
	p.expectPuback(1)
	// A PINGRESP arriving first shows nothing was delivered before it.
	c.send([]byte{0xC0, 0})
	if h, _ := c.read(); h.Type != codec.TypePingresp {
		t.Fatalf("got %s after UNSUBSCRIBE, want nothing but PINGRESP", h.Type)
	}
}

func TestRefusalCarriesAReasonStringUnlessTheClientAskedNotTo(t *testing.T) {
	addr := target(t)
	for _, quiet := range []bool{false, true} {
		c := dialRaw(t, addr, codec.Version5)
		c.mustConnect("why", func(p *codec.Connect) {
			if quiet {
				p.Properties.RequestProblemInfo = 0
				p.Properties.Present.Set(codec.PropRequestProblemInfo)
			}
		})
		c.publish("$SYS/x", []byte("x"), 1, 1)
		a := c.expectAckPacket(codec.TypePuback, 1)
		has := a.Properties.Present.Has(codec.PropReasonString)
		if has == quiet {
			t.Fatalf("Request Problem Information 0 = %v: Reason String present %v (%q)", quiet, has, a.Properties.ReasonString)
		}
	}
}
