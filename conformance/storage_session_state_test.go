package conformance

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// What the session store keeps, one write per change: filters added and
// removed one at a time, and a shared group's deliveries an ending member
// gives back (RFC 0002 "Every session's state: broker.session", RFC 0003
// "Broadcast"), across the restart each provider promises.

// stopFor is how a provider kind is stopped for the restart it promises to
// survive: kill -9 for sqlite, SIGTERM for memory with a snapshot_dir.
func stopFor(kind string) func(*brokerProc) {
	if kind == "sqlite" {
		return (*brokerProc).kill9
	}
	return (*brokerProc).stop
}

// unsubscribe sends one UNSUBSCRIBE and waits for its UNSUBACK.
func (c *raw) unsubscribe(id uint16, filter string) {
	c.t.Helper()
	u := &codec.Unsubscribe{PacketID: id, Filters: [][]byte{[]byte(filter)}}
	c.send(u.Append(nil, c.version))
	if h, _ := c.read(); h.Type != codec.TypeUnsuback {
		c.t.Fatalf("got packet type %d, want UNSUBACK", h.Type)
	}
}

// filterByFilter: a session that subscribed 300 filters one SUBSCRIBE at a
// time and took some back keeps exactly the rest across the restart.
func filterByFilter(t *testing.T, kind string) {
	dir := t.TempDir()
	b := startStored(t, dir, kind)
	dev := dialRaw(t, b.addr, codec.Version5)
	dev.mustConnect("dev", persistent(codec.Version5))
	const n = 300
	for i := range n {
		if codes := dev.subscribe(uint16(i+1), fmt.Sprintf("f/%d", i), 1); codes[0] != 1 {
			t.Fatalf("SUBACK %v for f/%d", codes, i)
		}
	}
	for i := 0; i < n; i += 2 {
		dev.unsubscribe(uint16(i+1), fmt.Sprintf("f/%d", i))
	}
	dev.disconnect()
	stopFor(kind)(b)
	b = startStored(t, dir, kind)
	dev = dialRaw(t, b.addr, codec.Version5)
	if ack := dev.mustConnect("dev", persistent(codec.Version5)); !ack.SessionPresent {
		t.Fatal("Session Present 0 after the restart")
	}
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	for i, topic := range []string{"f/0", "f/298", "f/1", "f/299"} {
		pub.publish(topic, []byte(topic), 1, uint16(i+1))
		pub.expectPuback(uint16(i + 1))
	}
	for _, want := range []string{"f/1", "f/299"} {
		p := dev.expectPublish()
		if string(p.Payload) != want {
			t.Fatalf("after the restart got %q, want %q: an unsubscribed filter came back or a kept one was lost", p.Payload, want)
		}
		dev.ackPublish(p)
	}
}

func TestSQLiteSessionSubscribedFilterByFilterKeepsExactlyItsFiltersAcrossKill9(t *testing.T) {
	filterByFilter(t, "sqlite")
}

func TestSnapshotSessionSubscribedFilterByFilterKeepsExactlyItsFiltersAcrossSIGTERM(t *testing.T) {
	filterByFilter(t, "snapshot")
}

// givenBackSurvives: a member handed a group's backlogged delivery that ends
// (Clean Start) without acknowledging it gives it back to the group; with the
// other member away it is kept, survives the restart, and is served to the
// other member when it returns.
func givenBackSurvives(t *testing.T, kind string) {
	dir := t.TempDir()
	b := startStored(t, dir, kind)
	for _, id := range []string{"m-a", "m-b"} {
		m := dialRaw(t, b.addr, codec.Version5)
		m.mustConnect(id, persistent(codec.Version5))
		if codes := m.subscribe(1, "$share/g/jobs/#", 1); codes[0] != 1 {
			t.Fatalf("SUBACK %v", codes)
		}
		m.send((&codec.Disconnect{}).Append(nil, codec.Version5))
		if b.log.wait(regexp.MustCompile(`msg="(disconnect stored|Will waiting out its delay)".*client_id=`+id), waitLong) == "" {
			t.Fatalf("the broker never saw %s leave", id)
		}
	}
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publish("jobs/x", []byte("job"), 1, 1)
	pub.expectPuback(1)
	a := dialRaw(t, b.addr, codec.Version5)
	a.mustConnect("m-a", persistent(codec.Version5))
	if p := a.expectPublish(); string(p.Payload) != "job" {
		t.Fatalf("the returning member got %q, want the group's backlog", p.Payload)
	}
	// Never acknowledged: m-a's session ends with the delivery on the wire.
	fresh := dialRaw(t, b.addr, codec.Version5)
	if ack := fresh.mustConnect("m-a", nil); ack.SessionPresent {
		t.Fatal("Clean Start resumed the session")
	}
	stopFor(kind)(b)
	b = startStored(t, dir, kind)
	other := dialRaw(t, b.addr, codec.Version5)
	if ack := other.mustConnect("m-b", persistent(codec.Version5)); !ack.SessionPresent {
		t.Fatal("Session Present 0 after the restart")
	}
	p := other.expectPublish()
	if string(p.Payload) != "job" || p.QoS != 1 {
		t.Fatalf("the other member got %q at QoS %d, want the delivery the ended member gave back", p.Payload, p.QoS)
	}
	other.ackPublish(p)
}

func TestSQLiteDeliveryAnEndedMemberGaveBackIsServedToTheGroupAfterKill9(t *testing.T) {
	givenBackSurvives(t, "sqlite")
}

func TestSnapshotDeliveryAnEndedMemberGaveBackIsServedToTheGroupAfterSIGTERM(t *testing.T) {
	givenBackSurvives(t, "snapshot")
}

// TestFullProviderGivesUpTheBroadcastLogBeforeRefusingASessionOrAFilter:
// RFC 0002 "Every session's state" - the log gives way to everything else on
// its provider: a session's record and a SUBSCRIBE's filter that find it
// full take their room from the log's oldest messages, and are answered
// Session Expiry 0 or 0x97 only when the log has nothing left to give.
func TestFullProviderGivesUpTheBroadcastLogBeforeRefusingASessionOrAFilter(t *testing.T) {
	storage := memoryStorage + "\n      max_bytes: 64KiB"
	limits := `limits:
  max_message_size: 8KiB
  max_connect_size: 8KiB
  max_header_bytes: 1KiB
  session_queue_bytes: 1MiB`
	b := startSaguin(t, t.TempDir(), saguinYAML(storage, limits))
	topic := uniq(t)
	awaySubscriber(t, b.addr, topic+"/#")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	for i := range 40 { // 160 KiB owed against a 64KiB provider: the log fills it
		p := &codec.Publish{Topic: []byte(topic + "/x"), Payload: seqPayload(i, 4096)}
		if code := pub.publishAs(p, uint16(i+1)); code != codec.Success {
			t.Fatalf("publish %d: PUBACK 0x%02x", i, byte(code))
		}
	}
	c := dialRaw(t, b.addr, codec.Version5)
	ack := c.mustConnect(clientID(t, "late"), freshSession(300))
	if ack.Properties.Present.Has(codec.PropSessionExpiry) && ack.Properties.SessionExpiry == 0 {
		t.Fatal("CONNACK Session Expiry 0: the session was refused room the broadcast log could give")
	}
	for i := range 4 {
		if codes := c.subscribe(uint16(i+1), fmt.Sprintf("%s/f%d/a/b", topic, i), 1); codes[0] != 1 {
			t.Fatalf("SUBACK %v: the filter was refused room the broadcast log could give", codes)
		}
	}
}

// TestSnapshotDeliveryAGroupHandedAMemberIsResentToItAfterSIGTERM: RFC 0003
// "Broadcast" - a member handed a group's backlogged delivery that leaves
// without acknowledging it is sent it again when it resumes after a
// restart, though the group's cursor, stored at the stop, has passed it.
func TestSnapshotDeliveryAGroupHandedAMemberIsResentToItAfterSIGTERM(t *testing.T) {
	dir := t.TempDir()
	b := startStored(t, dir, "snapshot")
	m := dialRaw(t, b.addr, codec.Version5)
	m.mustConnect("member", persistent(codec.Version5))
	if codes := m.subscribe(1, "$share/g/jobs/#", 1); codes[0] != 1 {
		t.Fatalf("SUBACK %v", codes)
	}
	m.send((&codec.Disconnect{}).Append(nil, codec.Version5))
	if b.log.wait(regexp.MustCompile(`msg="(disconnect stored|Will waiting out its delay)".*client_id=member`), waitLong) == "" {
		t.Fatal("the broker never saw the member leave")
	}
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publish("jobs/x", []byte("job"), 1, 1)
	pub.expectPuback(1)
	m = dialRaw(t, b.addr, codec.Version5)
	m.mustConnect("member", persistent(codec.Version5))
	if p := m.expectPublish(); string(p.Payload) != "job" {
		t.Fatalf("the member got %q, want the group's backlog", p.Payload)
	}
	// Never acknowledged. Whether the stop finds the member gone or still
	// connected, its session is kept with the delivery owed.
	m.disconnect()
	b.stop()
	b = startStored(t, dir, "snapshot")
	m = dialRaw(t, b.addr, codec.Version5)
	if ack := m.mustConnect("member", persistent(codec.Version5)); !ack.SessionPresent {
		t.Fatal("Session Present 0 after SIGTERM")
	}
	p := m.expectPublish()
	if string(p.Payload) != "job" || !p.Dup {
		t.Fatalf("after the restart the member got %q dup=%v, want the unacknowledged delivery again with DUP", p.Payload, p.Dup)
	}
	m.ackPublish(p)
}
