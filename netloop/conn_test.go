package netloop_test

import (
	"testing"

	"saguin/codec"
	"saguin/netloop"
)

func TestPublishReachesSubscriberOnBothProtocols(t *testing.T) {
	s := startServer(t, netloop.Options{})
	for _, v := range []byte{codec.Version311, codec.Version5} {
		sub := dial(t, s, v)
		if ack := sub.connect("sub", nil); ack.ReasonCode != codec.Success {
			t.Fatalf("v%d: CONNACK %s", v, ack.ReasonCode)
		}
		if codes := sub.subscribe(1, "a/+", 1); codes[0] != codec.GrantedQoS1 {
			t.Fatalf("v%d: SUBACK %v", v, codes)
		}
		pub := dial(t, s, v)
		pub.connect("pub", nil)
		pub.publish("a/b", "hi", 1, 7)
		h, body := pub.read()
		var ack codec.Ack
		if err := ack.Decode(h, body, v); err != nil || h.Type != codec.TypePuback || ack.PacketID != 7 {
			t.Fatalf("v%d: want PUBACK 7, got %s %+v %v", v, h.Type, ack, err)
		}
		p := sub.expectPublish()
		if string(p.Topic) != "a/b" || string(p.Payload) != "hi" || p.QoS != 1 {
			t.Fatalf("v%d: got %q %q qos %d", v, p.Topic, p.Payload, p.QoS)
		}
	}
}
