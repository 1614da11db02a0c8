package conformance

import (
	"fmt"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// TestFaultKill9WhilePublishingLosesNoAcknowledgedBroadcast: invariant 16 on
// the broadcast log - a QoS 1 broadcast owed to a session that is away is
// acknowledged only once it is written, so a sqlite broker killed -9 in the
// middle of a stream still owes the session every message it acknowledged.
// Repeated, kill after kill, for the SAGUIN_SOAK duration.
func TestFaultKill9WhilePublishingLosesNoAcknowledgedBroadcast(t *testing.T) {
	d := soakDuration(t)
	dir := t.TempDir()
	b := startStored(t, dir, "sqlite")
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("owed", persistent(codec.Version5))
	sub.subscribe(1, "stream/#", 1)
	sub.send((&codec.Disconnect{}).Append(nil, codec.Version5))
	sub.expectClosed()
	for round, stop := 0, time.Now().Add(d); round == 0 || time.Now().Before(stop); round++ {
		acked := map[string]bool{}
		done := make(chan struct{})
		pub := dialRaw(t, b.addr, codec.Version5)
		pub.mustConnect(fmt.Sprintf("pub-%d", round), nil)
		go func() {
			defer close(done)
			for i := 1; i <= 60000; i++ {
				payload := fmt.Sprintf("%d-%d", round, i)
				p := &codec.Publish{QoS: 1, Topic: []byte("stream/x"), Payload: []byte(payload), PacketID: uint16(i%65535 + 1)}
				if _, err := pub.nc.Write(p.Append(nil, codec.Version5)); err != nil {
					return // the broker was killed
				}
				h, body, err := pub.next(waitLong)
				if err != nil || h.Type != codec.TypePuback {
					return // the broker was killed
				}
				var a codec.Ack
				if a.Decode(h, body, codec.Version5) == nil && a.ReasonCode == codec.Success {
					acked[payload] = true
				}
			}
		}()
		<-time.After(300 * time.Millisecond) // the subject is a kill landing mid-stream
		b.kill9()
		<-done
		b = startStored(t, dir, "sqlite")
		back := dialRaw(t, b.addr, codec.Version5)
		if ack := back.mustConnect("owed", persistent(codec.Version5)); !ack.SessionPresent {
			t.Fatalf("round %d: Session Present 0 after kill -9", round)
		}
		// Only this round's acknowledged messages are counted: the last
		// round's final acknowledgements may not have been committed before
		// this kill (broker.session.ack_commit_interval), so those messages
		// may come again - a QoS 1 duplicate, which is allowed - and must not
		// stand in for one of this round's.
		got := map[string]bool{}
		for len(got) < len(acked) {
			h, body, err := back.next(waitLong)
			if err != nil {
				break
			}
			if h.Type != codec.TypePublish {
				continue
			}
			var p codec.Publish
			if p.Decode(h, body, codec.Version5) != nil {
				t.Fatal("undecodable PUBLISH")
			}
			if acked[string(p.Payload)] {
				got[string(p.Payload)] = true
			}
			back.ackPublish(&p)
		}
		for k := range acked {
			if !got[k] {
				t.Fatalf("round %d: %q was acknowledged before the kill and never delivered after it (%d acknowledged, %d delivered)", round, k, len(acked), len(got))
			}
		}
		t.Logf("round %d: %d acknowledged before kill -9, all delivered after it", round, len(acked))
		back.send((&codec.Disconnect{}).Append(nil, codec.Version5))
		back.expectClosed()
	}
}
