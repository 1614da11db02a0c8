package channel

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/store"
)

var recNow = time.Date(2026, 8, 14, 9, 0, 0, 123e6, time.UTC)

func publishWith(user ...string) *codec.Publish {
	p := &codec.Publish{QoS: 1, Topic: []byte("iot/depot/events/dev-1"), Payload: []byte("reading")}
	for i := 0; i+1 < len(user); i += 2 {
		p.Properties.AddUser([]byte(user[i]), []byte(user[i+1]))
	}
	return p
}

var uuidv7 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestMessageIDMintedUUIDv7(t *testing.T) {
	a := RecordOf(publishWith(), "pub", recNow)
	b := RecordOf(publishWith(), "pub", recNow)
	if !uuidv7.MatchString(a.MessageID) || a.MessageID == b.MessageID {
		t.Fatalf("minted ids %q, %q", a.MessageID, b.MessageID)
	}
	// The first 48 bits are the receipt time in Unix milliseconds.
	ms := fmt.Sprintf("%012x", recNow.UnixMilli())
	if got := a.MessageID[:8] + a.MessageID[9:13]; got != ms {
		t.Fatalf("timestamp bits %q, want %q (Unix ms)", got, ms)
	}
}

func TestMessageIDFromClientSaguinID(t *testing.T) {
	r := RecordOf(publishWith("saguin-id", "not-a-uuid", "k", "v", "saguin-id", "second"), "pub", recNow)
	if r.MessageID != "not-a-uuid" {
		t.Fatalf("MessageID %q, want the first saguin-id verbatim", r.MessageID)
	}
	if len(r.Headers) != 1 || r.Headers[0] != (store.Header{Key: "k", Value: "v"}) {
		t.Fatalf("headers %+v: saguin-id is the id, not a header", r.Headers)
	}
}

func TestHeadersInOrderWithRepeatsSaguinStripped(t *testing.T) {
	p := publishWith("b", "1", "a", "2", "saguin-offset", "999", "b", "3", "saguin-channel", "forged", "saguin-dlq-reason", "x", "a", "")
	p.Retain = true
	p.Properties.Present.Set(codec.PropContentType)
	p.Properties.ContentType = []byte("application/json")
	p.Properties.Present.Set(codec.PropResponseTopic)
	p.Properties.ResponseTopic = []byte("replies/1")
	p.Properties.Present.Set(codec.PropCorrelationData)
	p.Properties.CorrelationData = []byte{0, 1, 2}
	p.Properties.Present.Set(codec.PropPayloadFormat)
	p.Properties.PayloadFormat = 1
	p.Properties.Present.Set(codec.PropMessageExpiry)
	p.Properties.MessageExpiry = 60
	p.Properties.Present.Set(codec.PropTopicAlias)
	p.Properties.TopicAlias = 3
	r := RecordOf(p, "publisher-7", recNow)
	want := []store.Header{{Key: "b", Value: "1"}, {Key: "a", Value: "2"}, {Key: "b", Value: "3"}, {Key: "a"}}
	if len(r.Headers) != len(want) {
		t.Fatalf("headers %+v, want %+v", r.Headers, want)
	}
	for i := range want {
		if r.Headers[i] != want[i] {
			t.Fatalf("headers %+v, want %+v", r.Headers, want)
		}
	}
	if r.Topic != "iot/depot/events/dev-1" || string(r.Payload) != "reading" || !r.Time.Equal(recNow) ||
		r.ClientID != "publisher-7" || !r.Retain || r.QoS != 1 {
		t.Fatalf("record %+v", r)
	}
	var back codec.Properties
	DecodeProps(r.Props, &back)
	if string(back.ContentType) != "application/json" || string(back.ResponseTopic) != "replies/1" ||
		string(back.CorrelationData) != "\x00\x01\x02" || back.PayloadFormat != 1 || back.MessageExpiry != 60 ||
		back.Present.Has(codec.PropTopicAlias) {
		t.Fatalf("props %+v", back)
	}
	if got, want := store.RecordSize(&r), Size(p); got != want {
		t.Fatalf("Size before allocation %d, RecordSize after %d", want, got)
	}
	// The record owns its bytes: the read buffer is reused for the next packet.
	p.Payload[0], p.Topic[0] = 'X', 'X'
	p.Properties.User[0].Key[0] = 'X'
	if string(r.Payload) != "reading" || r.Topic[0] != 'i' || r.Headers[0].Key != "b" {
		t.Fatal("the record aliases the publish")
	}
}

func TestRecordFrom311Publish(t *testing.T) {
	p := &codec.Publish{Topic: []byte("t"), Payload: nil}
	r := RecordOf(p, "", recNow)
	if r.Headers != nil || r.Props != nil || !uuidv7.MatchString(r.MessageID) || r.ClientID != "" {
		t.Fatalf("%+v", r)
	}
	if store.RecordSize(&r) != Size(p) {
		t.Fatal("size")
	}
}

func TestHeaderBoundsCountStripped(t *testing.T) {
	lim := Limits{MaxHeaderCount: 2, MaxHeaderBytes: 10}
	if c, _ := CheckHeaders(&publishWith("a", "1", "b", "2").Properties, lim); c != codec.Success {
		t.Fatalf("two headers: %v", c)
	}
	if c, why := CheckHeaders(&publishWith("a", "1", "b", "2", "saguin-x", "3").Properties, lim); c != codec.QuotaExceeded || why == "" {
		t.Fatalf("three, one stripped: %v", c)
	}
	if c, _ := CheckHeaders(&publishWith("key", "12345678").Properties, lim); c != codec.QuotaExceeded {
		t.Fatalf("eleven bytes: %v", c)
	}
	if c, _ := CheckHeaders(&publishWith("key", "1234567").Properties, lim); c != codec.Success {
		t.Fatalf("ten bytes: %v", c)
	}
}

func BenchmarkRecordOf(b *testing.B) {
	p := publishWith("trace", "abc", "unit", "c")
	p.Payload = make([]byte, 128)
	b.ReportAllocs()
	for b.Loop() {
		_ = RecordOf(p, "client-1", recNow)
	}
}
