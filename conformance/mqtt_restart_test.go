package conformance

import (
	"regexp"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// RFC 0003 "Sessions" ("A restart restores what each provider promises"),
// "Exactly once" (restart cost), "Last Will" (restart behaviour); RFC 0002
// "Every session's state: broker.session". A sqlite provider keeps what it
// acknowledged across kill -9; a memory provider with snapshot_dir keeps it
// across SIGTERM; a memory provider without one keeps nothing.

// restartable is a saguin whose configuration and data directory outlive
// each process.
type restartable struct {
	t    *testing.T
	dir  string
	yaml string
	b    *brokerProc
}

func newRestartable(t *testing.T, storage, broker string) *restartable {
	t.Helper()
	saguinOnly(t, "restart tests need a saguin on its own storage")
	r := &restartable{t: t, dir: t.TempDir(), yaml: saguinYAML(storage, broker)}
	r.b = startSaguin(t, r.dir, r.yaml)
	return r
}

func (r *restartable) addr() string { return r.b.addr }

// crash kills the broker with SIGKILL and starts it again on the same files.
func (r *restartable) crash() {
	r.t.Helper()
	r.b.kill9()
	r.b = startSaguin(r.t, r.dir, r.yaml)
}

// restart stops the broker with SIGTERM and starts it again.
func (r *restartable) restart() {
	r.t.Helper()
	r.b.stop()
	r.b = startSaguin(r.t, r.dir, r.yaml)
}

// awaySubscriber leaves a session that outlives its connection, subscribed
// to filter at QoS 1, and returns its client id.
func awaySubscriber(t *testing.T, addr, filter string) string {
	t.Helper()
	id := clientID(t, "durable")
	c := dialRaw(t, addr, codec.Version5)
	c.mustConnect(id, freshSession(300))
	c.mustSubscribe(1, filter, 1)
	c.disconnect()
	return id
}

// checkSessionSurvived resumes id and expects the payloads owed, in order,
// then a live publish through the restored subscription.
func checkSessionSurvived(t *testing.T, addr, id, topic string, owed ...string) {
	t.Helper()
	back := dialRaw(t, addr, codec.Version5)
	if ack := back.mustConnect(id, session(300)); !ack.SessionPresent {
		t.Fatal("Session Present 0 after the restart: the session was not restored")
	}
	for _, want := range owed {
		p := back.expectPublish()
		if string(p.Payload) != want {
			t.Fatalf("got %q, want %q owed from before the restart", p.Payload, want)
		}
		back.ackDelivery(p)
	}
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub2"), nil)
	pub.publishQoS1(topic+"/live", []byte("after"), 1)
	if p := back.expectPublish(); string(p.Payload) != "after" {
		t.Fatalf("got %q, want the restored subscription to match a new publish", p.Payload)
	}
}

func TestRestartAfterKill9KeepsSqliteSessionsAndWhatTheyAreOwed(t *testing.T) {
	r := newRestartable(t, sqliteStorage, "")
	topic := uniq(t)
	id := awaySubscriber(t, r.addr(), topic+"/#")
	pub := dialRaw(t, r.addr(), codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.publishQoS1(topic+"/a", []byte("one"), 1)
	pub.publishQoS1(topic+"/a", []byte("two"), 2)
	r.crash()
	checkSessionSurvived(t, r.addr(), id, topic, "one", "two")
}

func TestRestartAfterSigtermKeepsSnapshotSessionsAndWhatTheyAreOwed(t *testing.T) {
	r := newRestartable(t, snapshotStorage, "")
	topic := uniq(t)
	id := awaySubscriber(t, r.addr(), topic+"/#")
	pub := dialRaw(t, r.addr(), codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.publishQoS1(topic+"/a", []byte("one"), 1)
	r.restart()
	checkSessionSurvived(t, r.addr(), id, topic, "one")
}

func TestRestartOfAMemoryProviderWithoutSnapshotKeepsNoSession(t *testing.T) {
	r := newRestartable(t, memoryStorage, "")
	topic := uniq(t)
	id := awaySubscriber(t, r.addr(), topic+"/#")
	r.restart()
	back := dialRaw(t, r.addr(), codec.Version5)
	if ack := back.mustConnect(id, session(300)); ack.SessionPresent {
		t.Fatal("Session Present 1 from a memory provider with snapshot_dir none")
	}
}

func TestRestartAfterKill9KeepsTheSqliteRetainedStore(t *testing.T) {
	r := newRestartable(t, sqliteStorage, "")
	topic := uniq(t)
	pub := dialRaw(t, r.addr(), codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.retain(topic+"/a", []byte("kept"), 1, nil)
	pub.retain(topic+"/b", []byte("deleted"), 2, nil)
	pub.retain(topic+"/b", nil, 3, nil)
	r.crash()
	sub := dialRaw(t, r.addr(), codec.Version5)
	sub.mustConnect(clientID(t, "sub"), nil)
	sub.mustSubscribe(1, topic+"/#", 1)
	got := sub.ping()
	if len(got) != 1 || string(got[0].Payload) != "kept" || !got[0].Retain {
		t.Fatalf("after kill -9: %d retained values, want the one acknowledged value", len(got))
	}
}

func TestRestartAfterSigtermKeepsTheSnapshotRetainedStore(t *testing.T) {
	r := newRestartable(t, snapshotStorage, "")
	topic := uniq(t)
	pub := dialRaw(t, r.addr(), codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.retain(topic+"/a", []byte("kept"), 1, nil)
	r.restart()
	sub := dialRaw(t, r.addr(), codec.Version5)
	sub.mustConnect(clientID(t, "sub"), nil)
	sub.mustSubscribe(1, topic+"/#", 1)
	if p := sub.expectPublish(); string(p.Payload) != "kept" || !p.Retain {
		t.Fatalf("got %q retain %v", p.Payload, p.Retain)
	}
}

func TestRestartAfterKill9ResendsAnUnacknowledgedDeliveryUnderItsPacketIdentifier(t *testing.T) {
	r := newRestartable(t, sqliteStorage, "")
	topic := uniq(t)
	id := clientID(t, "sub")
	sub := dialRaw(t, r.addr(), codec.Version5)
	sub.mustConnect(id, freshSession(300))
	sub.mustSubscribe(1, topic+"/#", 1)
	pub := dialRaw(t, r.addr(), codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.publishQoS1(topic+"/a", []byte("unacked"), 1)
	first := sub.expectPublish() // never acknowledged
	r.crash()
	back := dialRaw(t, r.addr(), codec.Version5)
	if ack := back.mustConnect(id, session(300)); !ack.SessionPresent {
		t.Fatal("Session Present 0")
	}
	again := back.expectPublish()
	if string(again.Payload) != "unacked" || again.PacketID != first.PacketID || !again.Dup {
		t.Fatalf("re-sent %q id %d DUP %v, want it under its original id %d with DUP (RFC 0003 \"Broadcast\"; MQTT-4.4.0-1)",
			again.Payload, again.PacketID, again.Dup, first.PacketID)
	}
}

func TestRestartAfterKill9KeepsAHeldSqliteQoS2Exchange(t *testing.T) {
	r := newRestartable(t, sqliteStorage, "")
	topic := uniq(t)
	subID := awaySubscriber(t, r.addr(), topic+"/#")
	id := clientID(t, "pub")
	pub := dialRaw(t, r.addr(), codec.Version5)
	pub.mustConnect(id, freshSession(300))
	pub.publish(topic+"/a", []byte("exactly"), 2, 9)
	if code := pub.expectAck(codec.TypePubrec, 9); code != codec.Success {
		t.Fatalf("PUBREC 0x%02x", byte(code))
	}
	r.crash()
	back := dialRaw(t, r.addr(), codec.Version5)
	if ack := back.mustConnect(id, session(300)); !ack.SessionPresent {
		t.Fatal("Session Present 0 for the publisher whose exchange was held")
	}
	back.sendAck(codec.TypePubrel, 9)
	if code := back.expectAck(codec.TypePubcomp, 9); code != codec.Success {
		t.Fatalf("PUBCOMP 0x%02x, want 0x00: the held exchange is released by the pre-restart PUBLISH", byte(code))
	}
	checkSessionSurvived(t, r.addr(), subID, topic, "exactly")
}

func TestRestartAfterKill9AnswersAPubrelForAnExchangeWhoseSessionEnded0x92(t *testing.T) {
	r := newRestartable(t, sqliteStorage, "")
	topic := uniq(t)
	id := clientID(t, "pub")
	pub := dialRaw(t, r.addr(), codec.Version5)
	pub.mustConnect(id, nil) // the session ends with its connection, and the stop cut it
	pub.publish(topic+"/a", []byte("orphan"), 2, 4)
	pub.expectAck(codec.TypePubrec, 4)
	r.crash()
	back := dialRaw(t, r.addr(), codec.Version5)
	if ack := back.mustConnect(id, session(300)); ack.SessionPresent {
		t.Fatal("Session Present 1 for a connection-bound session cut by the stop")
	}
	back.sendAck(codec.TypePubrel, 4)
	if code := back.expectAck(codec.TypePubcomp, 4); code != codec.PacketIdentifierNotFound {
		t.Fatalf("PUBCOMP 0x%02x, want 0x92: the orphan hold was dropped at start", byte(code))
	}
}

// TestWillThatFellDueWhileStoppedIsPublishedAtStart: RFC 0003 "Last Will -
// Restart behaviour": the due moment is written when the wait begins, and a
// broker back after it publishes at start.
func TestWillThatFellDueWhileStoppedIsPublishedAtStart(t *testing.T) {
	r := newRestartable(t, sqliteStorage, "")
	topic := uniq(t)
	subID := awaySubscriber(t, r.addr(), topic+"/#")
	devID := clientID(t, "dev")
	dev := dialRaw(t, r.addr(), codec.Version5)
	dev.mustConnect(devID, both(freshSession(300), will(topic+"/status", "dead", 1, false, 1)))
	dev.drop()
	// The wait began at the drop; the broker is back after its one second.
	if r.b.log.wait(regexp.MustCompile(`msg="(disconnect stored|Will waiting out its delay)".*client_id=`+devID), waitLong) == "" {
		t.Fatal("the drop was not seen")
	}
	r.b.kill9()
	<-time.After(1500 * time.Millisecond)
	r.b = startSaguin(t, r.dir, r.yaml)
	checkSessionSurvived(t, r.addr(), subID, topic, "dead")
}

func TestWillInsideItsDelayAtACrashIsPublishedAfterTheRestOfItsDelay(t *testing.T) {
	r := newRestartable(t, sqliteStorage, "")
	topic := uniq(t)
	subID := awaySubscriber(t, r.addr(), topic+"/#")
	devID := clientID(t, "dev")
	dev := dialRaw(t, r.addr(), codec.Version5)
	dev.mustConnect(devID, both(freshSession(300), will(topic+"/status", "dead", 1, false, 4)))
	dev.drop()
	if r.b.log.wait(regexp.MustCompile(`msg="(disconnect stored|Will waiting out its delay)".*client_id=`+devID), waitLong) == "" {
		t.Fatal("the drop was not seen")
	}
	r.crash()
	// The subscriber's kept session is owed the Will whenever it fires.
	w := dialRaw(t, r.addr(), codec.Version5)
	if ack := w.mustConnect(subID, session(300)); !ack.SessionPresent {
		t.Fatal("Session Present 0 for the subscriber after kill -9 on sqlite")
	}
	if p := w.expectPublishWithin(8 * time.Second); string(p.Payload) != "dead" {
		t.Fatalf("got %q, want the Will once the rest of its delay ran out", p.Payload)
	}
}

// TestGracefulStopPublishesNoWillForTheClientsItDisconnects: RFC 0003 "Last
// Will": a broker stopping is not a device dying; a client connected at the
// stop keeps its Will with no due moment.
func TestGracefulStopPublishesNoWillForTheClientsItDisconnects(t *testing.T) {
	r := newRestartable(t, snapshotStorage, "")
	topic := uniq(t)
	subID := awaySubscriber(t, r.addr(), topic+"/#")
	dev := dialRaw(t, r.addr(), codec.Version5)
	dev.mustConnect(clientID(t, "dev"), both(freshSession(300), will(topic+"/status", "dead", 1, false, 0)))
	r.restart()
	checkSessionSurvived(t, r.addr(), subID, topic) // nothing owed: no Will before "after"
}

// TestAcknowledgementsAreStoredWithinAckCommitInterval: RFC 0002
// "broker.session.ack_commit_interval" and RFC 0003 "Ack commit" - an
// acknowledgement is stored within the interval even while the session stays
// connected, so a crash after it re-sends nothing acknowledged.
func TestAcknowledgementsAreStoredWithinAckCommitInterval(t *testing.T) {
	r := newRestartable(t, sqliteStorage, "session:\n  ack_commit_interval: 100ms")
	topic := uniq(t)
	id := clientID(t, "sub")
	sub := dialRaw(t, r.addr(), codec.Version5)
	sub.mustConnect(id, freshSession(300))
	sub.mustSubscribe(1, topic+"/#", 1)
	pub := dialRaw(t, r.addr(), codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	for i := 1; i <= 5; i++ {
		pub.publishQoS1(topic+"/a", []byte{byte('0' + i)}, uint16(i))
	}
	for i := 0; i < 5; i++ {
		sub.ackDelivery(sub.expectPublish())
	}
	sub.ping()                            // every PUBACK read by the broker
	<-time.After(1500 * time.Millisecond) // the interval, and the write queued behind it, is the rule's subject
	r.crash()
	back := dialRaw(t, r.addr(), codec.Version5)
	if ack := back.mustConnect(id, session(300)); !ack.SessionPresent {
		t.Fatal("Session Present 0 after kill -9 on sqlite")
	}
	pub2 := dialRaw(t, r.addr(), codec.Version5)
	pub2.mustConnect(clientID(t, "pub2"), nil)
	pub2.publishQoS1(topic+"/a", []byte("end"), 1)
	if got := back.readUntil("end"); len(got) != 0 {
		t.Fatalf("%d acknowledged deliveries re-sent after the crash (first %q): acknowledgements older than ack_commit_interval were not stored", len(got), got[0].Payload)
	}
}

// TestRestartAfterKill9ResumesAnOutboundQoS2ExchangeWithPubrel: RFC 0003
// "Outbound QoS 2: send PUBREL only after the PUBREC is stored" - so after a
// crash the exchange resumes at PUBREL, never with the message again.
func TestRestartAfterKill9ResumesAnOutboundQoS2ExchangeWithPubrel(t *testing.T) {
	r := newRestartable(t, sqliteStorage, "")
	topic := uniq(t)
	id := clientID(t, "sub")
	sub := dialRaw(t, r.addr(), codec.Version5)
	sub.mustConnect(id, freshSession(300))
	sub.mustSubscribe(1, topic+"/#", 2)
	pub := dialRaw(t, r.addr(), codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	pub.publishQoS2(topic+"/a", []byte("once"), 1)
	p := sub.expectPublish()
	sub.sendAck(codec.TypePubrec, p.PacketID)
	sub.expectAck(codec.TypePubrel, p.PacketID) // sent only once the PUBREC is stored
	r.crash()
	back := dialRaw(t, r.addr(), codec.Version5)
	if ack := back.mustConnect(id, session(300)); !ack.SessionPresent {
		t.Fatal("Session Present 0 after kill -9 on sqlite")
	}
	h, body := back.read()
	var a codec.Ack
	if h.Type != codec.TypePubrel || a.Decode(h, body, codec.Version5) != nil || a.PacketID != p.PacketID {
		t.Fatalf("after the restart got %s, want the PUBREL for %d and never the message again", h.Type, p.PacketID)
	}
}

// TestSessionThatExpiredWhileStoppedEndsAtStart: RFC 0003 "Sessions" - a
// session whose expiry passed while the broker was down is ended at start.
func TestSessionThatExpiredWhileStoppedEndsAtStart(t *testing.T) {
	r := newRestartable(t, sqliteStorage, "")
	id := clientID(t, "brief")
	c := dialRaw(t, r.addr(), codec.Version5)
	c.mustConnect(id, freshSession(1))
	c.disconnect()
	if r.b.log.wait(regexp.MustCompile(`msg="(disconnect stored|Will waiting out its delay)".*client_id=`+id), waitLong) == "" {
		t.Fatal("the disconnect was never stored")
	}
	r.b.kill9()
	<-time.After(2 * time.Second) // the expiry passes while nothing runs
	r.b = startSaguin(t, r.dir, r.yaml)
	back := dialRaw(t, r.addr(), codec.Version5)
	if ack := back.mustConnect(id, session(300)); ack.SessionPresent {
		t.Fatal("Session Present 1 for a session that expired while the broker was down")
	}
}

// TestWillOfAClientConnectedAtAStopIsPublishedWhenItsSessionExpires: RFC
// 0003 "Last Will - Restart behaviour": a client connected when the broker
// stopped keeps its Will with no due moment, and it is published when its
// session expires at the running broker.
func TestWillOfAClientConnectedAtAStopIsPublishedWhenItsSessionExpires(t *testing.T) {
	r := newRestartable(t, snapshotStorage, "")
	topic := uniq(t)
	subID := awaySubscriber(t, r.addr(), topic+"/#")
	dev := dialRaw(t, r.addr(), codec.Version5)
	dev.mustConnect(clientID(t, "dev"), both(freshSession(4), will(topic+"/status", "expired", 1, false, 0)))
	r.restart()
	w := dialRaw(t, r.addr(), codec.Version5)
	if ack := w.mustConnect(subID, session(300)); !ack.SessionPresent {
		t.Fatal("Session Present 0 for the subscriber after SIGTERM with a snapshot")
	}
	w.quietFor(time.Second, "a Will published by the stop (a broker stopping is not a device dying)")
	if p := w.expectPublishWithin(8 * time.Second); string(p.Payload) != "expired" {
		t.Fatalf("got %q, want the Will once the device's four-second session expired", p.Payload)
	}
}
