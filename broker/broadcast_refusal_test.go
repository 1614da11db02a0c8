package broker

import (
	"errors"
	"strings"
	"testing"

	"github.com/saguin-edge/saguin/broker/brokertest"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// failingLog is a session store whose broadcast log refuses every write for
// a reason other than room: a disk that fails.
type failingLog struct{ store.Sessions }

func (f failingLog) Log() store.BroadcastLog { return failingAppend{f.Sessions.Log()} }

type failingAppend struct{ store.BroadcastLog }

func (failingAppend) Append(store.BroadcastEntry) (store.BroadcastEntry, error) {
	return store.BroadcastEntry{}, errors.New("disk I/O error")
}

// A QoS 1 broadcast owed to an away session whose log write fails is refused
// 0x83 (RFC 0002 "Every reason code": the broadcast log could not keep the
// record), not acknowledged as kept; a connected subscriber was sent it all
// the same, and the refusal is counted once in saguin_publish_refused_total.
func TestBroadcastLogWriteFailureRefusesThePublishOnce(t *testing.T) {
	ss, rs := brokertest.Stores(t, 0)
	b := newTestBroker(t, Options{Sessions: failingLog{ss}, Retained: rs})
	away := &fakeClient{id: "away"}
	connect(b, away, true, 3600)
	subscribe(b, away, "owed/#", delivery.SubscribeOptions{QoS: 1})
	b.Disconnected(away, 3600, true)
	here := &fakeClient{id: "here"}
	connect(b, here, true, 0)
	subscribe(b, here, "owed/#", delivery.SubscribeOptions{QoS: 1})
	publisher := &fakeClient{id: "publisher"}
	connect(b, publisher, true, 0)

	if code := pub(b, publisher, "owed/1", "v", false); code != codec.ImplementationSpecificError {
		t.Fatalf("PUBACK 0x%02x, want 0x83", byte(code))
	}
	if got := here.payloads(); len(got) != 1 {
		t.Fatalf("the connected subscriber got %v, want the message", got)
	}
	if n := b.Counters().PublishRefused.Load(delivery.ReasonOf(codec.ImplementationSpecificError)); n != 1 {
		t.Fatalf("counted %d refusals, want 1", n)
	}
}

// A retained publish the retained store has no room for is refused 0x97 and
// counted once: broadcast's refusals are counted by the caller, as every
// engine's are, not by the route as well.
func TestRetainedRefusalIsCountedOnce(t *testing.T) {
	ss, rs := brokertest.Stores(t, 64)
	b := newTestBroker(t, Options{Sessions: ss, Retained: rs})
	c := &fakeClient{id: "retainer"}
	connect(b, c, true, 0)
	if code := pub(b, c, "r/1", strings.Repeat("x", 200), true); code != codec.QuotaExceeded {
		t.Fatalf("PUBACK 0x%02x, want 0x97", byte(code))
	}
	if n := b.Counters().PublishRefused.Load(delivery.ReasonOf(codec.QuotaExceeded)); n != 1 {
		t.Fatalf("counted %d refusals, want 1", n)
	}
}
