package broker

import (
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// shareMember connects id on b and subscribes it to $share/g/<filter>.
func shareMember(t *testing.T, b *Broker, id string, expiry uint32) *ackClient {
	t.Helper()
	c := &ackClient{id: id}
	connectAs(t, b, c, true, expiry, nil)
	if code, why := b.Subscribe(c, []byte("$share/g/jobs/#"), delivery.SubscribeOptions{QoS: 1}); code != codec.GrantedQoS1 {
		t.Fatalf("SUBACK 0x%02x (%s)", byte(code), why)
	}
	return c
}

func TestSharedGroupMembersTakeTurnsInClientIDOrder(t *testing.T) {
	b := newStores(t, 0).broker(t, Options{})
	second := shareMember(t, b, "m-b", 0)
	first := shareMember(t, b, "m-a", 0)
	for _, p := range []string{"1", "2", "3", "4"} {
		publish(b, "p", "jobs/x", p, 1, false)
	}
	first.waitPayloads(t, "1", "3")
	second.waitPayloads(t, "2", "4")
}

func TestSharedGroupPassesOverAMemberThatCannotTakeTheMessage(t *testing.T) {
	b := newStores(t, 0).broker(t, Options{})
	full := &refusingClient{ackClient: ackClient{id: "m-a"}}
	connectAs(t, b, full, true, 0, nil)
	b.Subscribe(full, []byte("$share/g/jobs/#"), delivery.SubscribeOptions{QoS: 1})
	other := shareMember(t, b, "m-b", 0)
	publish(b, "p", "jobs/x", "1", 1, false)
	publish(b, "p", "jobs/x", "2", 1, false)
	other.waitPayloads(t, "1", "2")
	if got := full.payloads(); len(got) != 0 {
		t.Fatalf("a member that could not take the message was given %q", got)
	}
}

// refusingClient says it can take nothing (delivery.Client.CanTake).
type refusingClient struct{ ackClient }

func (r *refusingClient) CanTake(*delivery.Message, delivery.Delivery) bool { return false }

func TestSharedGroupWithNoDurableMemberDropsWhatNobodyCanTake(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{})
	m := shareMember(t, b, "m-a", 0)
	b.Disconnected(m, 0, false) // the group ends with its only member
	other := shareMember(t, b, "m-b", 0)
	b.Disconnected(other, 0, false)
	publish(b, "p", "jobs/x", "lost", 1, false)
	if n := st.sessions.Log().Len(); n != 0 {
		t.Fatalf("a group with no durable member wrote %d messages to the log", n)
	}
}

func TestSharedGroupWithADurableMemberHoldsItsBacklogInOrder(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{})
	m := shareMember(t, b, "m-a", 60)
	b.Disconnected(m, 60, false)
	publish(b, "p", "jobs/x", "1", 1, false)
	publish(b, "p", "jobs/x", "q0", 0, false) // owed to nobody
	publish(b, "p", "jobs/x", "2", 1, false)
	if n := st.sessions.Log().Len(); n != 2 {
		t.Fatalf("the log holds %d messages for the group, want its 2 QoS 1 ones", n)
	}
	back := &ackClient{id: "m-a"}
	connectAs(t, b, back, false, 60, nil)
	back.waitPayloads(t, "1", "2")
	b.Acked(back, back.refs[0])
	b.Acked(back, back.refs[1])
	b.Close()
	if n := st.sessions.Log().Len(); n != 0 {
		t.Fatalf("the log still holds %d messages the member acknowledged", n)
	}
}

func TestEndingMembersUnacknowledgedQoS1GoesBackToTheGroupAndQoS2IsDropped(t *testing.T) {
	b := newStores(t, 0).broker(t, Options{})
	leaving := shareMember(t, b, "m-a", 0)
	staying := shareMember(t, b, "m-b", 0)
	m := delivery.NewMessage(&codec.Publish{Topic: []byte("jobs/x"), Payload: []byte("job")}, time.Now)
	b.Unfinished(leaving, []delivery.Unfinished{
		{Msg: m, Delivery: delivery.Delivery{QoS: 1, PacketID: 3, Ref: logRef(0, "$share/g/jobs/#")}},
		{Msg: delivery.NewMessage(&codec.Publish{Topic: []byte("jobs/x"), Payload: []byte("once")}, time.Now), Delivery: delivery.Delivery{QoS: 2, PacketID: 4, Ref: logRef(0, "$share/g/jobs/#")}},
	})
	b.Disconnected(leaving, 0, false)
	staying.waitPayloads(t, "job")
	if n := b.Counters().SharesDroppedMemberEnded.Load(); n != 1 {
		t.Fatalf("QoS 2 deliveries dropped with their member counted %d, want 1", n)
	}
}

func TestSharedSubscriptionRefusals(t *testing.T) {
	b := newStores(t, 0).broker(t, Options{})
	c := &ackClient{id: "c"}
	connectAs(t, b, c, true, 0, nil)
	for filter, want := range map[string]codec.ReasonCode{
		"$share//a":           codec.TopicFilterInvalid,
		"$share/g":            codec.TopicFilterInvalid,
		"$share/g+/a":         codec.TopicFilterInvalid,
		"$share/g/$share/h/a": codec.TopicFilterInvalid,
		"$SHARE/g/a":          codec.TopicFilterInvalid,
		"$Share/g/a":          codec.TopicFilterInvalid,
		"$share/g/$SYS/#":     codec.NotAuthorized,
		"$share/g/$saguin/x":  codec.NotAuthorized,
		"$share/g/a/#":        codec.GrantedQoS1,
	} {
		if got, _ := b.Subscribe(c, []byte(filter), delivery.SubscribeOptions{QoS: 1}); got != want {
			t.Errorf("%s: 0x%02x, want 0x%02x", filter, byte(got), byte(want))
		}
	}
}

func TestSharedGroupBacklogKeepsAcrossARestart(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{})
	m := shareMember(t, b, "m-a", 60)
	b.Disconnected(m, 60, false)
	publish(b, "p", "jobs/x", "1", 1, false)
	publish(b, "p", "jobs/x", "2", 1, false)
	b = st.restart(t, b, Options{})
	back := &ackClient{id: "m-a"}
	if present, _, _ := connectAs(t, b, back, false, 60, nil); !present {
		t.Fatal("the member's session did not survive the restart")
	}
	back.waitPayloads(t, "1", "2")
}
