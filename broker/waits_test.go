package broker

import (
	"testing"

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
		b := &Broker{opts: Options{SessionsWaitOnDisk: tc.sessions, RetainedWaitOnDisk: tc.retained}}
		for _, c := range all {
			want := false
			for _, o := range tc.offLoop {
				want = want || o == c
			}
			if got := b.Waits(c.c, c.qos, c.retain); got != want {
				t.Errorf("%s: call %d qos %d retain %v: off the loop %v, want %v", tc.name, c.c, c.qos, c.retain, got, want)
			}
		}
	}
}
