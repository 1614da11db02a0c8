package broker

import (
	"testing"

	"github.com/saguin-edge/saguin/netloop"
)

func TestOnlyWritesToADiskProviderLeaveTheLoop(t *testing.T) {
	type call struct {
		c      netloop.Call
		qos    byte
		retain bool
	}
	all := []call{{netloop.CallConnect, 0, false}, {netloop.CallPublish, 0, false}, {netloop.CallPublish, 0, true},
		{netloop.CallPublish, 1, false}, {netloop.CallPublish, 2, true}, {netloop.CallRelease, 0, false},
		{netloop.CallSubscribe, 0, false}, {netloop.CallUnsubscribe, 0, false}, {netloop.CallReceived, 0, false}}
	for _, tc := range []struct {
		name               string
		sessions, retained bool
		offLoop            []call
	}{
		{name: "memory everywhere"},
		{name: "sessions on sqlite", sessions: true, offLoop: []call{{netloop.CallConnect, 0, false},
			{netloop.CallPublish, 1, false}, {netloop.CallPublish, 2, true}, {netloop.CallRelease, 0, false},
			{netloop.CallSubscribe, 0, false}, {netloop.CallUnsubscribe, 0, false}, {netloop.CallReceived, 0, false}}},
		{name: "retained on sqlite", retained: true, offLoop: []call{{netloop.CallPublish, 0, true},
			{netloop.CallPublish, 2, true}, {netloop.CallRelease, 0, false}, {netloop.CallSubscribe, 0, false}}},
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
