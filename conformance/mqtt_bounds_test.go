package conformance

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// Invariant 13 on sessions: RFC 0002 "How much a session may hold:
// limits.session_queue_bytes", "Every session's state: broker.session" (a
// full session store answers in MQTT's own signals), "What a shared group is
// owed: broker.share" (expires_after).

// seqPayload is size bytes whose first four carry i.
func seqPayload(i, size int) []byte {
	b := make([]byte, size)
	binary.BigEndian.PutUint32(b, uint32(i))
	return b
}

func seqOf(p *codec.Publish) int { return int(binary.BigEndian.Uint32(p.Payload)) }

// boundedSessions is a broker whose sessions hold at most 32KiB each.
const boundedSessions = `limits:
  max_message_size: 16KiB
  max_connect_size: 16KiB
  session_queue_bytes: 32KiB`

// TestAwaySessionPastSessionQueueBytesGivesUpTheOldest: full means the
// oldest goes and the publisher is never refused; a device that comes back
// is sent the most recent of what it missed, in order.
func TestAwaySessionPastSessionQueueBytesGivesUpTheOldest(t *testing.T) {
	b := startSaguin(t, t.TempDir(), saguinYAML(memoryStorage, boundedSessions))
	topic := uniq(t)
	id := awaySubscriber(t, b.addr, topic+"/#")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	const n = 40 // 160 KiB owed against a 32 KiB bound
	for i := 0; i < n; i++ {
		pub.publishQoS1(topic+"/x", seqPayload(i, 4096), uint16(i+1)) // never refused
	}
	back := dialRaw(t, b.addr, codec.Version5)
	back.mustConnect(id, session(300))
	pub.publishQoS1(topic+"/x", []byte("end"), n+1)
	var got []int
	for _, p := range back.readUntil("end") {
		got = append(got, seqOf(p))
	}
	if len(got) == 0 || len(got) >= n {
		t.Fatalf("the returning session was sent %d of %d: want the bound to have given up the oldest", len(got), n)
	}
	if len(got) > 0 && got[len(got)-1] != n-1 {
		t.Fatalf("the last delivery is %d, want the newest (%d)", got[len(got)-1], n-1)
	}
	for i := 1; i < len(got); i++ {
		if got[i] != got[i-1]+1 {
			t.Fatalf("deliveries %v: want the most recent run, in order", got)
		}
	}
	if len(got)*4096 > 32<<10 {
		t.Fatalf("%d messages of 4 KiB kept for a 32 KiB bound", len(got))
	}
}

// TestNoMoreThanHalfTheSessionQueueBoundIsOnTheWireUnacknowledged: a client
// that reads and never acknowledges holds at most half its bound written.
func TestNoMoreThanHalfTheSessionQueueBoundIsOnTheWireUnacknowledged(t *testing.T) {
	b := startSaguin(t, t.TempDir(), saguinYAML(memoryStorage, boundedSessions))
	topic := uniq(t)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect(clientID(t, "sub"), freshSession(300))
	sub.mustSubscribe(1, topic+"/#", 1)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	const n = 20
	for i := 0; i < n; i++ {
		pub.publishQoS1(topic+"/x", seqPayload(i, 4096), uint16(i+1))
	}
	onWire := sub.ping()
	if len(onWire) == 0 {
		onWire = append(onWire, sub.expectPublish())
	}
	if len(onWire)*4096 > 16<<10 {
		t.Fatalf("%d unacknowledged 4 KiB deliveries written: more than half of session_queue_bytes 32KiB", len(onWire))
	}
	// Acknowledging makes room; what was not written can be given up, so the
	// newest is among what arrives before the marker published last.
	for _, p := range onWire {
		sub.ackDelivery(p)
	}
	pub.publishQoS1(topic+"/x", []byte("end"), n+1)
	rest := sub.readUntil("end")
	last := seqOf(onWire[len(onWire)-1])
	if len(rest) > 0 {
		last = seqOf(rest[len(rest)-1])
	}
	if last != n-1 {
		t.Fatalf("the last delivery was %d, want the newest (%d)", last, n-1)
	}
}

// TestFullSessionStoreAnswersInMQTTsOwnSignals: RFC 0002 "Every session's
// state" - a session asking to outlive its connection is accepted with
// Session Expiry 0, a SUBSCRIBE is refused 0x97 on every filter, a Will
// refuses the CONNECT 0x97.
func TestFullSessionStoreAnswersInMQTTsOwnSignals(t *testing.T) {
	storage := memoryStorage + "\n      max_bytes: 40KiB"
	limits := `limits:
  max_message_size: 8KiB
  max_connect_size: 8KiB
  max_header_bytes: 1KiB
  session_queue_bytes: 8KiB`
	b := startSaguin(t, t.TempDir(), saguinYAML(storage, limits))
	// Fill the provider with sessions that outlive their connections, each
	// holding a few filters (about 3.5 KB and 800 B a filter as RFC 0002 counts).
	var full *codec.Connack
	for i := 0; i < 60 && full == nil; i++ {
		c := dialRaw(t, b.addr, codec.Version5)
		ack := c.mustConnect(clientID(t, "fill"), freshSession(300))
		if ack.Properties.Present.Has(codec.PropSessionExpiry) && ack.Properties.SessionExpiry == 0 {
			full = ack
			break
		}
		for j := 0; j < 4; j++ {
			c.subscribe(uint16(j+1), uniq(t)+"/a/b/c", 1)
		}
		c.disconnect()
	}
	if full == nil {
		t.Fatal("60 kept sessions fit a 40KiB memory provider: sessions are not counted against max_bytes")
	}
	t.Run("SUBSCRIBE", func(t *testing.T) {
		for _, v := range []byte{codec.Version5, codec.Version311} {
			c := dialRaw(t, b.addr, v)
			c.mustConnect(clientID(t, "sub"), nil)
			want := codec.QuotaExceeded
			if v == codec.Version311 {
				want = codec.SubackFailure311
			}
			ack := c.subscribeWith(1, nil, codec.Subscription{Filter: []byte("x/1"), QoS: 1}, codec.Subscription{Filter: []byte("x/2"), QoS: 0})
			if len(ack.ReasonCodes) != 2 || ack.ReasonCodes[0] != want || ack.ReasonCodes[1] != want {
				t.Errorf("protocol %d: SUBACK %v, want 0x%02x on every filter", v, ack.ReasonCodes, byte(want))
			}
		}
	})
	t.Run("Will", func(t *testing.T) {
		c := dialRaw(t, b.addr, codec.Version5)
		ack := c.connect(clientID(t, "will"), will("x/status", "offline", 1, false, 0))
		if ack.ReasonCode != codec.QuotaExceeded {
			t.Fatalf("CONNACK 0x%02x, want 0x97 for a Will the store has no room for", byte(ack.ReasonCode))
		}
	})
}

func TestSharedBacklogOlderThanShareExpiresAfterIsDropped(t *testing.T) {
	b := startSaguin(t, t.TempDir(), saguinYAML(memoryStorage, "share:\n  expires_after: 1s"))
	topic := uniq(t)
	id := clientID(t, "m")
	m := member(t, b.addr, id, "g", topic+"/#", 1, freshSession(300))
	m.disconnect()
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.publishQoS1(topic+"/x", []byte("stale"), 1)
	<-time.After(2500 * time.Millisecond) // the rule's subject is the second passing
	pub.publishQoS1(topic+"/x", []byte("fresh"), 2)
	back := dialRaw(t, b.addr, codec.Version5)
	back.mustConnect(id, session(300))
	if p := back.expectPublish(); string(p.Payload) != "fresh" {
		t.Fatalf("got %q first, want the backlogged delivery past broker.share.expires_after dropped", p.Payload)
	}
}

// TestBroadcastLogAtItsProvidersMaxBytesGivesUpTheOldestNeverThePublisher:
// RFC 0002 "Every session's state" full-store table, broadcast row - the
// log's oldest messages go to make room and the publisher is answered 0x00.
func TestBroadcastLogAtItsProvidersMaxBytesGivesUpTheOldestNeverThePublisher(t *testing.T) {
	storage := memoryStorage + "\n      max_bytes: 64KiB"
	limits := `limits:
  max_message_size: 8KiB
  max_connect_size: 8KiB
  max_header_bytes: 1KiB
  session_queue_bytes: 1MiB`
	b := startSaguin(t, t.TempDir(), saguinYAML(storage, limits))
	topic := uniq(t)
	id := awaySubscriber(t, b.addr, topic+"/#")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	const n = 40 // 160 KiB owed against a 64KiB provider
	for i := 0; i < n; i++ {
		p := &codec.Publish{Topic: []byte(topic + "/x"), Payload: seqPayload(i, 4096)}
		if code := pub.publishAs(p, uint16(i+1)); code != codec.Success {
			t.Fatalf("publish %d: PUBACK 0x%02x, want 0x00: the loss is the session's, not the publisher's", i, byte(code))
		}
	}
	pub.publishQoS1(topic+"/x", []byte("end"), n+1)
	back := dialRaw(t, b.addr, codec.Version5)
	back.mustConnect(id, session(300))
	var got []int
	for _, p := range back.readUntil("end") {
		got = append(got, seqOf(p))
	}
	if len(got) == 0 || len(got) >= n || got[len(got)-1] != n-1 {
		t.Fatalf("the session was sent %v: want the newest run, the oldest given up for room", got)
	}
}

// TestSharedMemberWithNoRoomInItsWindowIsPassedOver: RFC 0002 "Shared
// subscriptions" - a member whose Receive Maximum is used up is not given
// the group's next message.
func TestSharedMemberWithNoRoomInItsWindowIsPassedOver(t *testing.T) {
	b := startSaguin(t, t.TempDir(), saguinYAML(memoryStorage, ""))
	topic := uniq(t)
	full := member(t, b.addr, "room-a", "g", topic+"/#", 1, func(c *codec.Connect) {
		c.Properties.ReceiveMaximum = 1
		c.Properties.Present.Set(codec.PropReceiveMaximum)
	})
	other := member(t, b.addr, "room-b", "g", topic+"/#", 1, nil)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.publishQoS1(topic+"/x", []byte("first"), 1) // room-a's turn; never acknowledged
	if p := full.expectPublish(); string(p.Payload) != "first" {
		t.Fatalf("room-a got %q, want the first message (its turn in client-id order)", p.Payload)
	}
	pub.publishQoS1(topic+"/x", []byte("second"), 2)
	pub.publishQoS1(topic+"/x", []byte("third"), 3)
	for _, want := range []string{"second", "third"} {
		p := other.expectPublish()
		if string(p.Payload) != want {
			t.Fatalf("room-b got %q, want %q: room-a has no room in its window", p.Payload, want)
		}
		other.ackDelivery(p)
	}
}
