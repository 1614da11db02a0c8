package netloop_test

import (
	"net"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
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

func TestSlotIsGivenBackWhenTheClientHangsUpWithoutDisconnect(t *testing.T) {
	s := startServer(t, netloop.Options{})
	c := dial(t, s, codec.Version5)
	c.connect("leaver", nil)
	if n := s.Connections(); n != 1 {
		t.Fatalf("%d slots held, want 1", n)
	}
	c.nc.Close()
	deadline := time.Now().Add(5 * time.Second)
	for s.Connections() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d slots still held after the client hung up", s.Connections())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestShutdownAdmitsNothingMore(t *testing.T) {
	s := startServer(t, netloop.Options{})
	addr := s.Addr("tcp").String()
	if err := s.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if nc, err := net.Dial("tcp", addr); err == nil {
		nc.Close()
		t.Fatal("a stopped server still accepts")
	}
}
