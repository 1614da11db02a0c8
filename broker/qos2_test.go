package broker

import (
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// TestAnExactlyOncePublishFromATakenOverConnectionIsAnsweredPubrec0x80 is
// RFC 0002's 0x80 row for a PUBREC: a connection whose client id another
// connection now holds takes ownership of nothing, and the session holds no
// exchange for it.
func TestAnExactlyOncePublishFromATakenOverConnectionIsAnsweredPubrec0x80(t *testing.T) {
	b := newStores(t, 0).broker(t, Options{})
	old := &ackClient{id: "dev"}
	connectAs(t, b, old, true, 60, nil)
	newer := &ackClient{id: "dev"}
	connectAs(t, b, newer, false, 60, nil)
	code, _ := b.Publish(old, &codec.Publish{QoS: 2, PacketID: 9, Topic: []byte("t"), Payload: []byte("late")})
	if code != codec.UnspecifiedError {
		t.Fatalf("PUBREC 0x%02x, want 0x80", byte(code))
	}
	if b.Holds(newer, 9) {
		t.Fatal("the session holds an exchange its old connection started after the takeover")
	}
	if n := b.Counters().QoS2Held.Load(); n != 0 {
		t.Fatalf("qos2 held %d, want 0", n)
	}
}
