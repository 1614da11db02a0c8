package broker

import (
	"strings"
	"testing"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// A write on a full session provider - a session's record at CONNECT, a
// SUBSCRIBE's filter, an exactly-once publish held at its PUBREC, a retained
// value on the same provider - takes its room from the broadcast log's
// oldest messages, counted storage_full, before it is refused (RFC 0002
// "Every session's state": the log gives way to everything else on its
// provider).
func TestWriteAtAFullSessionProviderTakesRoomFromTheBroadcastLogBeforeRefusing(t *testing.T) {
	st := newStores(t, 24_000)
	b := st.broker(t, Options{RetainedWithSessions: true})
	away := &ackClient{id: "away"}
	connectAs(t, b, away, true, 3600, nil)
	b.Subscribe(away, []byte("t/#"), delivery.SubscribeOptions{QoS: 1})
	b.Disconnected(away, 3600, false)
	big := strings.Repeat("x", 1000)
	for range 20 {
		publish(b, "p", "t/x", big, 1, false) // the log fills, then gives way to itself
	}
	dropped := b.Counters().DeliveriesDroppedStorageFull.Load()
	c := &ackClient{id: "newcomer"}
	if _, code, req := connectAs(t, b, c, true, 3600, nil); code != 0 || req.SessionExpiryShortened {
		t.Fatalf("CONNECT at a full provider: 0x%02x, expiry shortened %v; want its session kept", byte(code), req.SessionExpiryShortened)
	}
	for i := range 3 {
		if code, why := b.Subscribe(c, []byte("f/"+strings.Repeat("l/", i)+"#"), delivery.SubscribeOptions{QoS: 1}); code != 1 {
			t.Fatalf("SUBSCRIBE at a full provider: 0x%02x (%s), want the log to give way", byte(code), why)
		}
	}
	fill := func() {
		for range 8 {
			publish(b, "p", "t/x", big, 1, false)
		}
	}
	fill()
	code, why := b.Publish(c, &codec.Publish{QoS: 2, PacketID: 1, Topic: []byte("q/x"), Payload: []byte(big)})
	if code != codec.Success {
		t.Fatalf("QoS 2 PUBLISH at a full provider: 0x%02x (%s), want it held", byte(code), why)
	}
	fill()
	if code := publish(b, "p", "r/x", big, 0, true); code != codec.Success {
		t.Fatalf("retained value at a full provider: 0x%02x, want the log to give way", byte(code))
	}
	if b.Counters().DeliveriesDroppedStorageFull.Load() <= dropped {
		t.Fatal("the log gave no room for the other writes")
	}
}
