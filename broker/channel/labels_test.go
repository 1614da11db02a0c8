package channel

import (
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/store"
)

func labelsOf(p *codec.Publish) map[string][]string {
	m := map[string][]string{}
	for _, u := range p.Properties.User {
		m[string(u.Key)] = append(m[string(u.Key)], string(u.Value))
	}
	return m
}

func storedRecord(expiry uint32) store.Record {
	p := publishWith("saguin-id", "id-1", "h", "1", "h", "2")
	p.Retain = true
	if expiry > 0 {
		p.Properties.Present.Set(codec.PropMessageExpiry)
		p.Properties.MessageExpiry = expiry
	}
	p.Properties.Present.Set(codec.PropCorrelationData)
	p.Properties.CorrelationData = []byte("corr")
	r := RecordOf(p, "pub", recNow)
	r.Offset = 17
	return r
}

func TestDeliveryLabels(t *testing.T) {
	r := storedRecord(0)
	var o Out
	p := o.Build(&r, Label{Version: codec.Version5, QoS: 1}, recNow.Add(time.Minute))
	l := labelsOf(p)
	if l["saguin-id"][0] != "id-1" || l["saguin-offset"][0] != "17" || l["saguin-timestamp"][0] != "1786698000123" {
		t.Fatalf("labels %v", l)
	}
	if _, ok := l["saguin-expires"]; ok {
		t.Fatal("saguin-expires without a publisher expiry")
	}
	if _, ok := l["saguin-channel"]; ok {
		t.Fatal("saguin-channel for a filter reaching one channel")
	}
	if got := l["h"]; len(got) != 2 || got[0] != "1" || got[1] != "2" {
		t.Fatalf("headers %v", got)
	}
	if p.Properties.User[0].Key[0] != 'h' || p.Properties.User[1].Key[0] != 'h' {
		t.Fatal("the publisher's headers come first, in order")
	}
	if p.Retain {
		t.Fatal("RETAIN on an append delivery without Retain As Published")
	}
	if string(p.Properties.CorrelationData) != "corr" || p.QoS != 1 || string(p.Topic) != r.Topic {
		t.Fatalf("publish %+v", p)
	}
	p = o.Build(&r, Label{Version: codec.Version5, RetainAsPublished: true, Channel: "events"}, recNow)
	if !p.Retain || labelsOf(p)["saguin-channel"][0] != "events" {
		t.Fatalf("RAP and saguin-channel: %+v", p)
	}
}

func TestDeliveryExpiryCountedDown(t *testing.T) {
	r := storedRecord(60)
	var o Out
	p := o.Build(&r, Label{Version: codec.Version5}, recNow.Add(20*time.Second))
	if !p.Properties.Present.Has(codec.PropMessageExpiry) || p.Properties.MessageExpiry != 40 {
		t.Fatalf("expiry %d", p.Properties.MessageExpiry)
	}
	if got := labelsOf(p)["saguin-expires"]; len(got) != 1 || got[0] != "1786698060123" {
		t.Fatalf("saguin-expires %v", got)
	}
	// Run out: the record is still delivered, without the interval.
	p = o.Build(&r, Label{Version: codec.Version5}, recNow.Add(60*time.Second))
	if p.Properties.Present.Has(codec.PropMessageExpiry) || labelsOf(p)["saguin-expires"][0] != "1786698060123" {
		t.Fatalf("expired: %+v", p.Properties)
	}
}

func TestDeliveryNoTimestampWhenUnset(t *testing.T) {
	r := storedRecord(0)
	r.Time = time.Time{}
	var o Out
	if _, ok := labelsOf(o.Build(&r, Label{Version: codec.Version5}, recNow))["saguin-timestamp"]; ok {
		t.Fatal("a record with no time got a saguin-timestamp")
	}
}

func TestDelivery311TopicAndPayloadOnly(t *testing.T) {
	r := storedRecord(60)
	var o Out
	p := o.Build(&r, Label{Version: codec.Version311, QoS: 1, RetainAsPublished: true}, recNow)
	if len(p.Properties.User) != 0 || p.Properties.Present != 0 || string(p.Payload) != "reading" || string(p.Topic) != r.Topic {
		t.Fatalf("%+v", p)
	}
}

func BenchmarkBuild(b *testing.B) {
	r := storedRecord(0)
	var o Out
	b.ReportAllocs()
	for b.Loop() {
		o.Build(&r, Label{Version: codec.Version5, QoS: 1}, recNow)
	}
}
