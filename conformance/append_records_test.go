package conformance

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// What a record keeps and what its delivery carries, beside
// TestAppendRecordIdentityHeadersAndLabels (checklist-channels.md A1, A2).
// Each test starts its own broker with the append channel "events" on ev/#.

// A1.4, E1: Sagüin does not deduplicate on saguin-id - two publishes
// carrying one id are two records, each delivered with that id verbatim
// under its own offset.
func TestTwoPublishesWithOneSaguinIDAreTwoRecords(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	for i := 1; i <= 2; i++ {
		p := &codec.Publish{Topic: []byte("ev/d"), Payload: []byte(fmt.Sprint("copy", i))}
		p.Properties.AddUser([]byte("saguin-id"), []byte("not-a-uuid:42"))
		if code := pub.publishAs(p, uint16(i)); code != codec.Success {
			t.Fatalf("publish %d: PUBACK 0x%02x", i, byte(code))
		}
	}
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", nil)
	sub.mustSubscribe(1, "ev/#", 1)
	got := sub.collect(2)
	if len(got) != 2 {
		t.Fatalf("replayed %v, want both publishes", payloads(got))
	}
	for i, p := range got {
		if id, _ := userProp(p, "saguin-id"); id != "not-a-uuid:42" || offsetOf(t, p) != uint64(i+1) {
			t.Errorf("record %d: saguin-id %q offset %d, want not-a-uuid:42 at %d", i, id, offsetOf(t, p), i+1)
		}
	}
}

// A1.8, A1.10, A2.6, A2.9: a record is delivered with the publisher's
// Response Topic, Correlation Data and Payload Format Indicator as sent; the
// broker adds no Message Expiry and no Subscription Identifier of its own,
// and the publisher's client id, kept for No Local, reaches no subscriber.
func TestAppendDeliveryCarriesThePublishPropertiesAndNotThePublisher(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	const publisher = "publisher-7f3a"
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect(publisher, nil)
	p := &codec.Publish{Topic: []byte("ev/rr"), Payload: []byte("ask")}
	p.Properties.ResponseTopic = []byte("answers/here")
	p.Properties.Present.Set(codec.PropResponseTopic)
	p.Properties.CorrelationData = []byte{0, 1, 2, 0xff}
	p.Properties.Present.Set(codec.PropCorrelationData)
	p.Properties.PayloadFormat = 1
	p.Properties.Present.Set(codec.PropPayloadFormat)
	if code := pub.publishAs(p, 1); code != codec.Success {
		t.Fatalf("PUBACK 0x%02x", byte(code))
	}
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", nil)
	sub.mustSubscribe(1, "ev/#", 1)
	got := sub.collect(1)
	if len(got) != 1 {
		t.Fatalf("replayed %d records, want 1", len(got))
	}
	d := got[0].Properties
	if string(d.ResponseTopic) != "answers/here" || string(d.CorrelationData) != "\x00\x01\x02\xff" || !d.Present.Has(codec.PropPayloadFormat) || d.PayloadFormat != 1 {
		t.Errorf("delivered Response Topic %q, Correlation Data %x, Payload Format %d: want them as published", d.ResponseTopic, d.CorrelationData, d.PayloadFormat)
	}
	if d.Present.Has(codec.PropMessageExpiry) || len(d.SubscriptionIDs) != 0 {
		t.Errorf("the broker added Message Expiry %d / Subscription Identifiers %v", d.MessageExpiry, d.SubscriptionIDs)
	}
	for _, u := range d.User {
		if strings.Contains(string(u.Value), publisher) || strings.Contains(string(u.Key), publisher) {
			t.Errorf("the publisher's client id reached a subscriber in %s=%s", u.Key, u.Value)
		}
	}
}

// A2.7, A2.8: a record matching two subscriptions of one client is sent once,
// carrying both Subscription Identifiers, with the publisher's RETAIN when
// either asked Retain As Published.
func TestAppendRecordMatchingTwoSubscriptionsIsOneCopyWithBothIdentifiers(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("twice", nil)
	withID := func(id uint32) func(*codec.Properties) {
		return func(p *codec.Properties) {
			p.SubscriptionIDs = []uint32{id}
			p.Present.Set(codec.PropSubscriptionID)
		}
	}
	sub.subscribeWith(1, withID(11), codec.Subscription{Filter: []byte("ev/#"), QoS: 1})
	sub.subscribeWith(2, withID(22), codec.Subscription{Filter: []byte("ev/+"), QoS: 1, RetainAsPublished: true})
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	if code := pub.publishAs(&codec.Publish{Topic: []byte("ev/x"), Payload: []byte("once"), Retain: true}, 1); code != codec.Success {
		t.Fatalf("PUBACK 0x%02x", byte(code))
	}
	pub.publishQoS1("ev/x", []byte("end"), 2)
	got := sub.readUntil("end")
	if len(got) != 1 {
		t.Fatalf("%d copies of one record, want 1", len(got))
	}
	ids := append([]uint32(nil), got[0].Properties.SubscriptionIDs...)
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	if fmt.Sprint(ids) != "[11 22]" {
		t.Errorf("Subscription Identifiers %v, want [11 22]", ids)
	}
	if !got[0].Retain {
		t.Error("RETAIN cleared though one matching subscription asked Retain As Published")
	}
}
