package conformance

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// The bounds a publish into an append channel and a delivery from one meet
// (checklist-channels.md A1.13-A1.17, A2.16-A2.17).

// pubackOf publishes p at QoS 1 under id and returns its PUBACK whole.
func (c *raw) pubackOf(p *codec.Publish, id uint16) *codec.Ack {
	c.t.Helper()
	p.QoS, p.PacketID = 1, id
	c.sendPublish(p)
	h, body := c.read()
	var a codec.Ack
	if h.Type != codec.TypePuback {
		c.t.Fatalf("want PUBACK, got %s", h.Type)
	}
	if err := a.Decode(h, body, codec.Version5); err != nil {
		c.t.Fatal(err)
	}
	return &a
}

// A1.13, A1.14, A1.16: a publish into an append channel is held to every
// bound a publish is - deeper than max_topic_levels 0x90, more headers than
// max_header_count 0x97, a Payload Format Indicator of UTF-8 over bytes that
// are not 0x99 - each with a Reason String unless the client sent Request
// Problem Information 0, and nothing stored; a 3.1.1 publisher is closed
// instead.
func TestAppendPublishIsHeldToEveryPublishBound(t *testing.T) {
	b := startBrokerIn(t, t.TempDir(), brokerConfig{Limits: "max_topic_levels: 3\nmax_header_count: 2",
		Channels: "events:\n  type: append\n  filter: ev/#"})
	deep := func() *codec.Publish { return &codec.Publish{Topic: []byte("ev/a/b/c"), Payload: []byte("deep")} }
	headers := func() *codec.Publish {
		p := &codec.Publish{Topic: []byte("ev/h"), Payload: []byte("headers")}
		for _, k := range []string{"a", "b", "c"} {
			p.Properties.AddUser([]byte(k), []byte("1"))
		}
		return p
	}
	utf8 := func() *codec.Publish {
		p := &codec.Publish{Topic: []byte("ev/u"), Payload: []byte{0xff, 0xfe}}
		p.Properties.PayloadFormat = 1
		p.Properties.Present.Set(codec.PropPayloadFormat)
		return p
	}
	for _, quiet := range []bool{false, true} {
		c := dialRaw(t, b.addr, codec.Version5)
		c.mustConnect(fmt.Sprint("bounded-", quiet), func(p *codec.Connect) {
			if quiet {
				p.Properties.RequestProblemInfo = 0
				p.Properties.Present.Set(codec.PropRequestProblemInfo)
			}
		})
		for i, tc := range []struct {
			p    *codec.Publish
			want codec.ReasonCode
		}{{deep(), codec.TopicNameInvalid}, {headers(), codec.QuotaExceeded}, {utf8(), codec.PayloadFormatInvalid}} {
			a := c.pubackOf(tc.p, uint16(i+1))
			if a.ReasonCode != tc.want {
				t.Errorf("%s: PUBACK 0x%02x, want 0x%02x", tc.p.Payload, byte(a.ReasonCode), byte(tc.want))
			}
			if has := a.Properties.Present.Has(codec.PropReasonString); has == quiet {
				t.Errorf("%s with Request Problem Information 0 = %v: Reason String present %v", tc.p.Payload, quiet, has)
			}
		}
	}
	old := dialRaw(t, b.addr, codec.Version311)
	old.mustConnect("old", nil)
	old.publish("ev/a/b/c", []byte("deep"), 1, 1)
	old.expectClosed()
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", nil)
	sub.mustSubscribe(1, "ev/#", 1)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publishQoS1("ev/end", []byte("end"), 1)
	if got := payloads(sub.readUntil("end")); len(got) != 0 {
		t.Fatalf("the channel holds %v, want none of the refused publishes", got)
	}
}

// A1.17: the publisher waits on storage only - an append consumer that
// reads nothing from its socket does not delay the publisher's PUBACKs.
func TestAppendConsumerReadingNothingDoesNotDelayThePublisher(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	deaf := dialRaw(t, b.addr, codec.Version5)
	deaf.mustConnect("deaf", freshSession(300))
	deaf.mustSubscribe(1, "ev/#", 1)
	// deaf reads nothing more: 200 records of 32 KiB fill its socket's
	// buffers many times over.
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	record := make([]byte, 32<<10)
	start := time.Now()
	for i := 0; i < 200; i++ {
		pub.publishQoS1("ev/big", record, uint16(i+1))
	}
	if d := time.Since(start); d > waitLong {
		t.Fatalf("200 PUBACKs took %v with a consumer reading nothing", d)
	}
}

// A2.16, A2.17: the SUBACK comes before the replay, and the replay stays
// inside the consumer's Receive Maximum - a record past the window waits
// for an acknowledgement, never dropped: every record arrives, in order.
func TestAppendReplayWaitsInsideReceiveMaximumAndDropsNothing(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	publishAll(t, b, "ev/w", "r1", "r2", "r3", "r4", "r5", "r6")
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("window", func(p *codec.Connect) {
		p.Properties.ReceiveMaximum = 2
		p.Properties.Present.Set(codec.PropReceiveMaximum)
	})
	s := &codec.Subscribe{PacketID: 1, Subscriptions: []codec.Subscription{{Filter: []byte("ev/w"), QoS: 1}}}
	sub.send(s.Append(nil, codec.Version5))
	if h, _ := sub.read(); h.Type != codec.TypeSuback {
		t.Fatalf("first after the SUBSCRIBE: %s, want the SUBACK before any record", h.Type)
	}
	first := []*codec.Publish{sub.expectPublishWithin(waitLong), sub.expectPublishWithin(waitLong)}
	sub.expectNothing("a third record with two unacknowledged under Receive Maximum 2")
	got := payloads(first)
	for _, p := range first {
		sub.ackDelivery(p)
	}
	for len(got) < 6 {
		p := sub.expectPublishWithin(waitLong)
		sub.ackDelivery(p)
		got = append(got, string(p.Payload))
	}
	if strings.Join(got, ",") != "r1,r2,r3,r4,r5,r6" {
		t.Fatalf("served %v, want r1..r6 in order", got)
	}
}
