package netloop_test

import (
	"log/slog"
	"testing"

	"github.com/saguin-edge/saguin/broker"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
)

// On sqlite a publish leaves the loop only when the broker says it will
// store something (Handler.Waits, asked with the decoded PUBLISH): a QoS 1
// publish only live sessions are subscribed to is answered on the loop, one
// a kept session is owed goes off it for the log append, and the PUBREC of a
// delivery a shared group handed over from memory stays on the loop. The
// broker is cmd/saguin's on sqlite; what is counted is
// Counters.CallsOffLoop.
func TestAPublishLeavesTheLoopOnlyForWhatItWillStore(t *testing.T) {
	p, sessions, retained := openSQLite(t)
	br, err := broker.New(broker.Options{Sessions: sessions, Retained: retained, Logger: slog.New(slog.DiscardHandler),
		SessionsWaitOnDisk: true, RetainedWaitOnDisk: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { br.Close(); p.Close() })
	s := startServer(t, netloop.Options{Handler: br, EventLoops: 1})
	offLoop := s.Counters().CallsOffLoop.Load

	live := dial(t, s, codec.Version5)
	live.connect("live", nil)
	live.subscribe(1, "live/#", 1)
	member := dial(t, s, codec.Version5)
	member.connect("member", nil)
	member.subscribe(1, "$share/g/jobs/#", 2)
	kept := dial(t, s, codec.Version5)
	kept.connect("kept", func(p *codec.Connect) {
		p.Properties.SessionExpiry = 60
		p.Properties.Present.Set(codec.PropSessionExpiry)
	})
	kept.subscribe(1, "kept/#", 1)
	pub := dial(t, s, codec.Version5)
	pub.connect("pub", nil)

	before := offLoop()
	pub.publish("live/x", "to the live session", 1, 1)
	pub.expectAck(codec.TypePuback, 1)
	if got := live.expectPublish(); string(got.Payload) != "to the live session" {
		t.Fatalf("live subscriber got %q", got.Payload)
	}
	pub.publish("nobody/x", "to nobody", 1, 2)
	pub.expectAck(codec.TypePuback, 2)
	if n := offLoop() - before; n != 0 {
		t.Fatalf("%d calls left the loop for QoS 1 publishes nothing kept is owed, want 0", n)
	}

	pub.publish("kept/x", "to the kept session", 1, 3)
	pub.expectAck(codec.TypePuback, 3)
	if got := kept.expectPublish(); string(got.Payload) != "to the kept session" {
		t.Fatalf("kept subscriber got %q", got.Payload)
	}
	if n := offLoop() - before; n != 1 {
		t.Fatalf("%d calls left the loop after a QoS 1 publish a kept session is owed, want 1 (its log append)", n)
	}

	// QoS 2 to a group of live members: its hold and its release are
	// stored (two calls off the loop); the member's PUBREC of what the group
	// handed it from memory stores nothing and stays on the loop.
	pub.publish("jobs/1", "a job", 2, 4)
	pub.expectAck(codec.TypePubrec, 4)
	pub.send((&codec.Ack{Type: codec.TypePubrel, PacketID: 4}).Append(nil, codec.Version5))
	pub.expectAck(codec.TypePubcomp, 4)
	got := member.expectPublish()
	if string(got.Payload) != "a job" || got.QoS != 2 {
		t.Fatalf("member got %q at QoS %d, want the job at QoS 2", got.Payload, got.QoS)
	}
	member.send((&codec.Ack{Type: codec.TypePubrec, PacketID: got.PacketID}).Append(nil, codec.Version5))
	member.expectAck(codec.TypePubrel, got.PacketID)
	member.send((&codec.Ack{Type: codec.TypePubcomp, PacketID: got.PacketID}).Append(nil, codec.Version5))
	member.ping("the PUBCOMP handled")
	if n := offLoop() - before; n != 3 {
		t.Fatalf("%d calls left the loop after the QoS 2 exchange, want 3 (the log append, the hold and its release)", n)
	}
}
