package conformance

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// What an append channel keeps through retention and a restart and past a
// publisher's expiry, and the QoS 2 bound on a publish into it
// (checklist-channels.md A1.5, A1.11, A2.4, A1.23).

// readUntilGot is readUntil returning the marker's delivery too.
func (c *raw) readUntilGot(marker string) *codec.Publish {
	c.t.Helper()
	for {
		p := c.expectPublishWithin(waitLong)
		c.ackDelivery(p)
		if string(p.Payload) == marker {
			return p
		}
	}
}

// A1.5, D11.9: offsets are never reused - the next offset follows the last
// one issued across retention's removals and a restart, kill -9 on sqlite and
// SIGTERM on memory with snapshot_dir.
func TestOffsetsAreNeverReusedAcrossRetentionAndARestart(t *testing.T) {
	for _, tc := range []struct {
		name, storage string
		stop          func(*brokerProc)
	}{{"sqlite-kill9", sqliteStorage, (*brokerProc).kill9}, {"memory-sigterm", snapshotStorage, (*brokerProc).stop}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			b := startAppend(t, dir, tc.storage, "", "retention_bytes: 300")
			for i := 0; i < 6; i++ {
				publishAll(t, b, "ev/o", fmt.Sprintf("r%d-%s", i+1, strings.Repeat("x", 100)))
			}
			w := dialRaw(t, b.addr, codec.Version5)
			w.mustConnect("watcher", freshSession(300))
			waitFloorAbove(t, w, "events", 1)
			tc.stop(b)
			b = startAppend(t, dir, tc.storage, "", "retention_bytes: 300")
			sub := dialRaw(t, b.addr, codec.Version5)
			sub.mustConnect("reader", nil)
			sub.mustSubscribe(1, "ev/#", 1)
			publishAll(t, b, "ev/o", "after")
			if p := sub.readUntilGot("after"); offsetOf(t, p) != 7 {
				t.Fatalf("the first record after the restart is offset %d, want 7: six were issued", offsetOf(t, p))
			}
		})
	}
}

// A1.11, A2.4: a publisher's Message Expiry never removes a record - past
// its saguin-expires it is still replayed - and its delivery carries no
// Message Expiry Interval once the interval has run out.
func TestAppendRecordPastItsExpiryIsStillServedWithoutOne(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	p := &codec.Publish{Topic: []byte("ev/x"), Payload: []byte("brief")}
	p.Properties.MessageExpiry = 1
	p.Properties.Present.Set(codec.PropMessageExpiry)
	if code := pub.publishAs(p, 1); code != codec.Success {
		t.Fatalf("PUBACK 0x%02x", byte(code))
	}
	first := dialRaw(t, b.addr, codec.Version5)
	first.mustConnect("first", nil)
	first.mustSubscribe(1, "ev/#", 1)
	got := first.collect(1)
	if len(got) != 1 {
		t.Fatal("the record was not replayed")
	}
	v, _ := userProp(got[0], "saguin-expires")
	expires, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("saguin-expires %q: %v", v, err)
	}
	// A rule about time: the one wait is for the wall clock to pass the
	// moment the record says it expires.
	for time.Now().UnixMilli() <= expires+1000 {
		first.quietFor(100*time.Millisecond, "while the record's expiry runs out")
	}
	later := dialRaw(t, b.addr, codec.Version5)
	later.mustConnect("later", nil)
	later.mustSubscribe(1, "ev/#", 1)
	got = later.collect(1)
	if len(got) != 1 || string(got[0].Payload) != "brief" {
		t.Fatalf("replayed %v after the record's expiry ran out, want it: expiry never removes a record", payloads(got))
	}
	if got[0].Properties.Present.Has(codec.PropMessageExpiry) {
		t.Fatalf("Message Expiry %d on a record whose expiry has run out, want none", got[0].Properties.MessageExpiry)
	}
}

// A1.23: past broker.qos2.max_inflight_per_client unfinished exactly-once
// publishes into an append channel the next is refused at its PUBREC,
// 0x97, the connection kept; a release frees the place.
func TestAppendQoS2PastMaxInflightPerClientIsRefusedOnPubrec(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "qos2:\n  max_inflight_per_client: 2", "")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	for id := uint16(1); id <= 2; id++ {
		pub.publish("ev/q", []byte(fmt.Sprint("held", id)), 2, id)
		if code := pub.expectAck(codec.TypePubrec, id); code != codec.Success {
			t.Fatalf("PUBREC %d: 0x%02x", id, byte(code))
		}
	}
	pub.publish("ev/q", []byte("third"), 2, 3)
	if code := pub.expectAck(codec.TypePubrec, 3); code != codec.QuotaExceeded {
		t.Fatalf("PUBREC for a third unfinished exchange: 0x%02x, want 0x97", byte(code))
	}
	pub.sendAck(codec.TypePubrel, 1)
	if code := pub.expectAck(codec.TypePubcomp, 1); code != codec.Success {
		t.Fatalf("PUBCOMP 0x%02x", byte(code))
	}
	pub.publish("ev/q", []byte("fourth"), 2, 4)
	if code := pub.expectAck(codec.TypePubrec, 4); code != codec.Success {
		t.Fatalf("PUBREC once a place was freed: 0x%02x, want 0x00", byte(code))
	}
}
