package broker

import (
	"testing"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

func TestOnlyWritesToADiskProviderLeaveTheLoop(t *testing.T) {
	type call struct {
		c      delivery.Call
		qos    byte
		retain bool
	}
	all := []call{{delivery.CallConnect, 0, false}, {delivery.CallPublish, 0, false}, {delivery.CallPublish, 0, true},
		{delivery.CallPublish, 1, false}, {delivery.CallPublish, 2, true}, {delivery.CallRelease, 0, false},
		{delivery.CallSubscribe, 0, false}, {delivery.CallUnsubscribe, 0, false}, {delivery.CallReceived, 0, false}}
	for _, tc := range []struct {
		name               string
		sessions, retained bool
		offLoop            []call
	}{
		{name: "memory everywhere"},
		{name: "sessions on sqlite", sessions: true, offLoop: []call{{delivery.CallConnect, 0, false},
			{delivery.CallPublish, 1, false}, {delivery.CallPublish, 2, true}, {delivery.CallRelease, 0, false},
			{delivery.CallSubscribe, 0, false}, {delivery.CallUnsubscribe, 0, false}, {delivery.CallReceived, 0, false}}},
		{name: "retained on sqlite", retained: true, offLoop: []call{{delivery.CallPublish, 0, true},
			{delivery.CallPublish, 2, true}, {delivery.CallRelease, 0, false}, {delivery.CallSubscribe, 0, false}}},
	} {
		b := newStores(t, 0).broker(t, Options{SessionsWaitOnDisk: tc.sessions, RetainedWaitOnDisk: tc.retained})
		// The publishes are to a topic a kept session is subscribed to, so
		// a QoS 1 one is appended to the log, and the PUBREC is of a
		// delivery from the log: every write these calls can make is made.
		kept := &ackClient{id: "kept"}
		connectAs(t, b, kept, true, 60, nil)
		b.Subscribe(kept, []byte("t"), delivery.SubscribeOptions{QoS: 2})
		pub := &ackClient{id: "p"}
		for _, c := range all {
			want := false
			for _, o := range tc.offLoop {
				want = want || o == c
			}
			var p *codec.Publish
			var ref delivery.Ref
			switch c.c {
			case delivery.CallPublish:
				p = &codec.Publish{QoS: c.qos, Retain: c.retain, Topic: []byte("t"), PacketID: 1}
			case delivery.CallReceived:
				ref = logRef(1, "")
			}
			if got := b.Waits(pub, c.c, p, ref); got != want {
				t.Errorf("%s: call %d qos %d retain %v: off the loop %v, want %v", tc.name, c.c, c.qos, c.retain, got, want)
			}
		}
	}
}

// On sqlite a QoS 1 publish waits on storage only when it will be written:
// to the broadcast log, for a session that outlives its connection or a
// shared group with such a member. One whose topic only live sessions, a
// group of them, or nobody, subscribes to stays on the loop, and so does the
// PUBREC of a delivery a shared group handed over from memory (issue 10
// item 4).
func TestAQoS1PublishWaitsOnStorageOnlyWhenItsTopicIsKept(t *testing.T) {
	b := newStores(t, 0).broker(t, Options{SessionsWaitOnDisk: true, RetainedWaitOnDisk: true})
	subscribe := func(id string, expiry uint32, filter string, qos byte, noLocal bool) *ackClient {
		c := &ackClient{id: id}
		connectAs(t, b, c, true, expiry, nil)
		if code, why := b.Subscribe(c, []byte(filter), delivery.SubscribeOptions{QoS: qos, NoLocal: noLocal}); code.IsError() {
			t.Fatalf("SUBACK %s 0x%02x (%s)", filter, byte(code), why)
		}
		return c
	}
	subscribe("live", 0, "live/#", 1, false)
	subscribe("kept", 60, "kept/#", 1, false)
	subscribe("kept-qos0", 60, "kept0/#", 0, false)
	subscribe("kept-nolocal", 60, "mine/#", 1, true)
	subscribe("live-member", 0, "$share/live/group/#", 1, false)
	subscribe("kept-member", 60, "$share/kept/shared/#", 1, false)
	pub := &ackClient{id: "pub"}
	publishWaits := func(from delivery.Client, topic string, qos byte, retain bool) bool {
		return b.Waits(from, delivery.CallPublish, &codec.Publish{QoS: qos, Retain: retain, Topic: []byte(topic), PacketID: 1}, delivery.Ref{})
	}
	for _, tc := range []struct {
		topic string
		want  bool
	}{
		{"nobody/x", false},
		{"live/x", false},
		{"kept0/x", false}, // the kept session takes it at QoS 0: nothing is logged
		{"group/x", false}, // a group of live members: what none takes is dropped, not held
		{"kept/x", true},   // appended to the log for the kept session
		{"shared/x", true}, // a member's session outlives it: the group may hold it
		{"mine/x", true},   // No Local is the publisher's own; another's publish reaches it
	} {
		if got := publishWaits(pub, tc.topic, 1, false); got != tc.want {
			t.Errorf("QoS 1 publish to %s: waits on storage %v, want %v", tc.topic, got, tc.want)
		}
	}
	if publishWaits(&ackClient{id: "kept-nolocal"}, "mine/x", 1, false) {
		t.Error("a publish its only kept subscriber's No Local keeps from it waits on storage")
	}
	if !publishWaits(pub, "nobody/x", 1, true) {
		t.Error("a retained QoS 1 publish does not wait for the retained store on sqlite")
	}
	if !publishWaits(pub, "nobody/x", 2, false) {
		t.Error("a QoS 2 publish does not wait for its hold on sqlite")
	}
	if publishWaits(pub, "kept/x", 0, false) {
		t.Error("a QoS 0 publish that stores nothing waits on storage")
	}
	if b.Waits(pub, delivery.CallReceived, nil, logRef(0, "$share/live/group/#")) {
		t.Error("the PUBREC of a delivery handed from memory waits on storage")
	}
	if !b.Waits(pub, delivery.CallReceived, nil, logRef(7, "")) {
		t.Error("the PUBREC of a delivery from the log does not wait for its write")
	}
}
