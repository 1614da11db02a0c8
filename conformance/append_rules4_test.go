package conformance

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// Channel rules of checklist-channels.md A and D that the audit of
// notes/s22/audit-chA.md found without a test (issue 11): each test is
// named after its rule and starts its own broker.

// readEach reads PUBLISHes, acknowledging each, until every payload of want
// has arrived, and fails on one it does not want, or on a second copy.
func (c *raw) readEach(why string, want ...string) {
	c.t.Helper()
	left := map[string]bool{}
	for _, w := range want {
		left[w] = true
	}
	for len(left) > 0 {
		p := c.expectPublishWithin(waitLong)
		c.ackDelivery(p)
		if !left[string(p.Payload)] {
			c.t.Fatalf("%s: got %q on %s, want only %v", why, p.Payload, p.Topic, want)
		}
		delete(left, string(p.Payload))
	}
}

// D2.3 (RFC 0002 "What a filter reaches"; notes-0001 "Invariant 11 - A
// wildcard never reaches a queue"), MQTT 5: a filter crossing a queue is
// served every other channel it touches - an append record and broadcast
// messages, also one beside the queue's filter - and never the queue's job,
// which only the worker on $saguin/queue/jobs is offered.
func TestD2_3AFilterCrossingAQueueGetsEverythingButTheQueuesJobs(t *testing.T) {
	b := startQueueBroker(t, "events:\n  type: append\n  filter: ev/#\njobs:\n  type: queue\n  filter: work/+/inspect")
	all := durableConsumer(t, b, codec.Version5, "all", "#", 1)
	work := durableConsumer(t, b, codec.Version5, "work", "work/#", 1)
	w := queueWorker(t, b.addr, "w1")
	pub := queueProducer(t, b.addr)
	pub.publishQoS1("work/7/inspect", []byte("job"), 1)
	pub.publishQoS1("ev/a", []byte("record"), 2)
	pub.publishQoS1("plain/x", []byte("broadcast"), 3)
	pub.publishQoS1("work/7/other", []byte("beside"), 4)
	o := w.takeOffer()
	if string(o.Payload) != "job" || string(o.Topic) != "work/7/inspect" {
		t.Fatalf("the worker was offered %q on %s, want the job on work/7/inspect", o.Payload, o.Topic)
	}
	all.readEach("#", "record", "broadcast", "beside")
	work.readEach("work/#", "beside")
	all.expectNothing("# after the job was offered: the queue's job")
	work.expectNothing("work/# after the job was offered: the queue's job")
	w.answer(o, "ack")
}

// A13.5 (notes-0003 "Exactly once, and where the unfinished ones wait"),
// MQTT 5: a QoS 2 publish to an append channel reaches a shared group
// member at its release, not at its arrival - nothing while the exchange
// waits at PUBREC, the record once the PUBREL is sent.
func TestA13_5AQoS2AppendPublishReachesASharedGroupAtPubrel(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	member := dialRaw(t, b.addr, codec.Version5)
	member.mustConnect("member", nil)
	member.mustSubscribe(1, "$share/g/ev/#", 2)
	pub := appendPublisher(t, b)
	pub.publish("ev/x", []byte("held"), 2, 1)
	if code := pub.expectAck(codec.TypePubrec, 1); code != codec.Success {
		t.Fatalf("PUBREC 0x%02x, want 0x00", byte(code))
	}
	member.expectNothing("the group member before the PUBREL")
	pub.sendAck(codec.TypePubrel, 1)
	if code := pub.expectAck(codec.TypePubcomp, 1); code != codec.Success {
		t.Fatalf("PUBCOMP 0x%02x, want 0x00", byte(code))
	}
	if got := member.receiveOne(); string(got.Payload) != "held" || string(got.Topic) != "ev/x" {
		t.Fatalf("the group member got %q on %s after the PUBREL, want held on ev/x", got.Payload, got.Topic)
	}
	member.expectNothing("the group member after the record: a second copy")
}

// receiveOne reads the next PUBLISH and completes its exchange as a
// receiver (PUBREC, then PUBCOMP for the PUBREL of a QoS 2 one).
func (c *raw) receiveOne() *codec.Publish {
	c.t.Helper()
	p := c.expectPublishWithin(waitLong)
	switch p.QoS {
	case 1:
		c.sendAck(codec.TypePuback, p.PacketID)
	case 2:
		c.sendAck(codec.TypePubrec, p.PacketID)
		c.expectAck(codec.TypePubrel, p.PacketID)
		c.sendAck(codec.TypePubcomp, p.PacketID)
	}
	return p
}

// A3.7 (notes-0003 "What a reconnecting consumer receives"), MQTT 5, no
// restart: a durable consumer that read six records and acknowledged two
// resumes with the four it did not acknowledge re-sent first, then the
// records written while it was away - in order, none skipped, none twice.
// What the broker does not do: re-send the four as the session's in-flight
// deliveries (MQTT-4.4.0-1 original Packet Identifiers, MQTT-3.3.1-1 DUP 1);
// it serves them again from the stored position, DUP 0 under new ids, so
// this test does not check DUP or the ids.
func TestA3_7OnResumeUnacknowledgedDeliveriesComeFirstThenNewRecords(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	pub := appendPublisher(t, b)
	for i := 1; i <= 6; i++ {
		pub.publishQoS1("ev/x", []byte(fmt.Sprint("r", i)), uint16(i))
	}
	sub := durableConsumer(t, b, codec.Version5, "resumer", "ev/#", 1)
	for i := 1; i <= 6; i++ {
		p := sub.expectPublishWithin(waitLong)
		if string(p.Payload) != fmt.Sprint("r", i) {
			t.Fatalf("delivery %d: %q, want r%d", i, p.Payload, i)
		}
		if i <= 2 {
			sub.ackDelivery(p)
		}
	}
	sub.leave()
	pub.publishQoS1("ev/x", []byte("r7"), 7)
	pub.publishQoS1("ev/x", []byte("r8"), 8)
	sub = resume(t, b.addr, codec.Version5, "resumer", 300)
	pub.publishQoS1("ev/x", []byte("end"), 9)
	got := sub.readUntil("end")
	if strings.Join(payloads(got), ",") != "r3,r4,r5,r6,r7,r8" {
		t.Fatalf("after the resume: %v, want r3..r6 re-sent, then r7,r8", payloads(got))
	}
	for i, p := range got {
		if want := uint64(i + 3); offsetOf(t, p) != want {
			t.Fatalf("%q at offset %d, want %d", p.Payload, offsetOf(t, p), want)
		}
	}
}

// D9.3 (RFC 0005 "What a metric is allowed to cost"; checklist-operations
// D5.49, D5.51), MQTT 5: saguin_channel_consumer_position_min is computed at
// every recomputation, never cached apart from it. A scrape inside
// min_scrape_interval (60 s, the least) answers the previous computation's
// bytes whole, so the test takes a fresh broker's first computation, moves
// the lowest position (the one consumer, stored at 2, resumes and
// acknowledges r2..r5 and m1) and publishes one more record, then scrapes
// until the next computation (saguin_published_total says 7): in it the
// lowest position is 7.
func TestD9_3ConsumerPositionMinIsComputedAtEveryRecomputation(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP+"\nmin_scrape_interval: 60s", brokerConfig{Channels: "events:\n  type: append\n  filter: ev/#"})
	pub := appendPublisher(t, ob.brokerProc)
	for i := 1; i <= 5; i++ {
		pub.publishQoS1("ev/x", []byte(fmt.Sprint("r", i)), uint16(i))
	}
	sub := durableConsumer(t, ob.brokerProc, codec.Version5, "holder", "ev/#", 1)
	sub.ackDelivery(sub.expectPublishWithin(waitLong))
	sub.leave() // the close waits for the position (A3.11): 2
	fams := scrapeOnce(t, ob)
	if v, ok := value(fams["saguin_channel_consumer_position_min"], "channel", "events"); !ok || v != 2 {
		t.Fatalf("first computation: position_min %v (present %v), want 2 after r1 was acknowledged", v, ok)
	}
	sub = resume(t, ob.addr, codec.Version5, "holder", 300)
	pub.publishQoS1("ev/x", []byte("m1"), 7)
	if got := payloads(sub.readUntil("m1")); strings.Join(got, ",") != "r2,r3,r4,r5" {
		t.Fatalf("resumed: %v, want r2..r5", got)
	}
	sub.leave() // every record up to m1 acknowledged: 7
	pub.publishQoS1("ev/x", []byte("r8"), 8)
	deadline := time.Now().Add(90 * time.Second)
	for {
		fams = scrapeOnce(t, ob)
		if v, _ := value(fams["saguin_published_total"], "channel", "events"); v == 7 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no recomputation within 90 s of a 60 s min_scrape_interval")
		}
		time.Sleep(time.Second) // polling a route until min_scrape_interval lets it recompute
	}
	if v, ok := value(fams["saguin_channel_consumer_position_min"], "channel", "events"); !ok || v != 7 {
		t.Fatalf("next computation: position_min %v (present %v), want 7 after m1 was acknowledged", v, ok)
	}
}

// A13.7 (notes-0001 "Invariant 16 - No client can withhold another
// client's acknowledgement"), MQTT 5: a shared group member on an append
// channel that stops taking bytes is written to under limits.write_timeout
// like any subscriber - disconnected once a write waits past it - while the
// publisher's PUBACKs go on and the other member keeps reading, the marker
// published last included. session_queue_bytes is raised so that what may
// be in flight to the deaf member is more than the sockets' buffers hold.
func TestA13_7ADeafSharedMemberOnAppendIsDisconnectedAtWriteTimeout(t *testing.T) {
	b := startBrokerIn(t, t.TempDir(), brokerConfig{Limits: "write_timeout: 500ms\nsession_queue_bytes: 67108864", Channels: "events:\n  type: append\n  filter: ev/#"})
	deaf := dialRaw(t, b.addr, codec.Version5)
	deafen(t, deaf)
	deaf.mustConnect("deaf", nil)
	deaf.mustSubscribe(1, "$share/g/ev/#", 1)
	live := dialRaw(t, b.addr, codec.Version5)
	live.mustConnect("live", nil)
	live.mustSubscribe(1, "$share/g/ev/#", 1)
	got := make(chan error, 1)
	var read int
	go func() { got <- live.readForMarker("end", &read) }() // the test goroutine publishes meanwhile
	pub := appendPublisher(t, b)
	record := make([]byte, 32<<10)
	const n = 400 // 12.8 MB, half of it more than the deaf member's sockets hold
	for i := 1; i <= n; i++ {
		copy(record, fmt.Sprint(i, "|"))
		pub.publishQoS1("ev/big", record, uint16(i))
	}
	if b.log.wait(regexp.MustCompile(`client_id=deaf .*write_timeout|write_timeout.*client_id=deaf`), waitLong) == "" {
		t.Fatal("the shared member taking no bytes was not disconnected for limits.write_timeout")
	}
	pub.publishQoS1("ev/big", []byte("end"), n+1)
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the other member, after %d records: %v", read, err)
		}
	case <-time.After(waitLong):
		t.Fatal("the other member never got the marker")
	}
	if read == 0 {
		t.Fatal("the other member was given no record: the group did not take turns")
	}
	live.expectNothing("the other member, still connected after the marker")
}

// readForMarker reads c's PUBLISHes, acknowledging QoS 1 ones and counting
// them in *read, until one carries marker; for a goroutine beside the test's,
// so it returns the error rather than failing the test.
func (c *raw) readForMarker(marker string, read *int) error {
	for {
		h, body, err := c.next(waitLong)
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		if h.Type != codec.TypePublish {
			return fmt.Errorf("want PUBLISH, got %s", h.Type)
		}
		var p codec.Publish
		if err := p.Decode(h, body, c.version); err != nil {
			return fmt.Errorf("decode: %w", err)
		}
		if p.QoS == 1 {
			if _, err := c.nc.Write((&codec.Ack{Type: codec.TypePuback, PacketID: p.PacketID}).Append(nil, c.version)); err != nil {
				return fmt.Errorf("PUBACK: %w", err)
			}
		}
		if string(p.Payload) == marker {
			return nil
		}
		*read++
	}
}
