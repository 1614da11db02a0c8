package conformance

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/saguin-edge/saguin/broker/channel"
	"github.com/saguin-edge/saguin/codec"
)

// Client-declared partitioning through the binary, beside
// TestSaguinFilterPartitionsAppendAndBroadcast (checklist-channels.md A11).

// sliceOf is topic's slice of count (RFC 0003 "The hash, in full"; the
// spec's test vectors are broker/channel's unit test).
func sliceOf(topic string, count uint64) uint64 {
	return channel.TopicHash(topic) % count
}

// topicsIn returns n topics under prefix whose slice of count is index.
func topicsIn(prefix string, count, index uint64, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		if tp := fmt.Sprintf("%s/%d", prefix, i); sliceOf(tp, count) == index {
			out = append(out, tp)
		}
	}
	return out
}

// declare sets saguin-filter to each value on a SUBSCRIBE's properties.
func declare(v ...string) func(*codec.Properties) {
	return func(p *codec.Properties) {
		for _, x := range v {
			p.AddUser([]byte("saguin-filter"), []byte(x))
		}
	}
}

// A11.2, A11.3, A11.10, A11.11: slices declared by repeated saguin-filter
// properties are OR-ed, the same slice twice is no error, leading zeros and
// whitespace around the parts are allowed; a subscriber declaring nothing
// is served everything.
func TestRepeatedSaguinFilterSlicesAreOred(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	part := dialRaw(t, b.addr, codec.Version5)
	part.mustConnect("slices", nil)
	ack := part.subscribeWith(1, declare("topic_hash(4, 1)", " topic_hash ( 04 , 03 ) ", "topic_hash(4,1)"), codec.Subscription{Filter: []byte("ev/#"), QoS: 1})
	if ack.ReasonCodes[0] != codec.GrantedQoS1 {
		t.Fatalf("SUBACK 0x%02x for slices 1, 3 and 1 again of 4", byte(ack.ReasonCodes[0]))
	}
	all := dialRaw(t, b.addr, codec.Version5)
	all.mustConnect("all", nil)
	all.mustSubscribe(1, "ev/#", 1)
	var topics []string
	for i := uint64(0); i < 4; i++ {
		topics = append(topics, topicsIn("ev/p", 4, i, 2)...)
	}
	sort.Strings(topics)
	var want []string
	for _, tp := range topics {
		publishAll(t, b, tp, tp)
		if s := sliceOf(tp, 4); s == 1 || s == 3 {
			want = append(want, tp)
		}
	}
	publishAll(t, b, topicsIn("ev/end", 4, 1, 1)[0], "end") // in slice 1: both subscribers see it
	if got := payloads(part.readUntil("end")); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("slices 1 and 3 of 4 served %v, want %v", got, want)
	}
	if got := payloads(all.readUntil("end")); len(got) != len(topics) {
		t.Fatalf("the undeclared subscriber was served %d of %d records", len(got), len(topics))
	}
}

// A11.12, A11.13: every malformed or self-inconsistent declaration refuses
// the SUBSCRIBE's filters 0x83 with a Reason String saying why - "not a
// number" and "too large" in different sentences.
func TestEveryMalformedSaguinFilterIs0x83WithItsReason(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect("grammar", nil)
	reasons := map[string]string{}
	for i, v := range []string{"", "topic_hash", "TOPIC_HASH(3, 1)", "hash(3, 1)", "topic_hash(3)", "topic_hash(3, 1, 2)",
		"topic_hash(x, 1)", "topic_hash(+3, 1)", "topic_hash(0x3, 1)", "topic_hash(3e1, 1)", "topic_hash(2147483648, 0)",
		"topic_hash(0, 0)", "topic_hash(3, 3)", "topic_hash(3,\u00a01)", "topic_hash(3, 1) + topic_hash(3, 2)"} {
		ack := c.subscribeWith(uint16(i+1), declare(v), codec.Subscription{Filter: []byte("ev/#"), QoS: 1}, codec.Subscription{Filter: []byte("other/#"), QoS: 1})
		if len(ack.ReasonCodes) != 2 || ack.ReasonCodes[0] != codec.ImplementationSpecificError || ack.ReasonCodes[1] != codec.ImplementationSpecificError {
			t.Errorf("saguin-filter %q: SUBACK %v, want 0x83 on both filters", v, ack.ReasonCodes)
		}
		if len(ack.Properties.ReasonString) == 0 {
			t.Errorf("saguin-filter %q: no Reason String", v)
		}
		reasons[v] = string(ack.Properties.ReasonString)
	}
	if reasons["topic_hash(x, 1)"] == reasons["topic_hash(2147483648, 0)"] {
		t.Errorf("not a number and too large answered alike: %q", reasons["topic_hash(x, 1)"])
	}
	if got := c.subscribeWith(99, declare("topic_hash(3, 1)", "topic_hash(4, 1)"), codec.Subscription{Filter: []byte("ev/#"), QoS: 1}); got.ReasonCodes[0] != codec.ImplementationSpecificError {
		t.Errorf("two partition counts: SUBACK 0x%02x, want 0x83", byte(got.ReasonCodes[0]))
	}
	if got := c.subscribeWith(100, declare("topic_hash(1, 0)"), codec.Subscription{Filter: []byte("ev/#"), QoS: 1}); got.ReasonCodes[0] != codec.GrantedQoS1 {
		t.Errorf("topic_hash(1, 0), count 1: SUBACK 0x%02x, want granted", byte(got.ReasonCodes[0]))
	}
}

// A11.17: a client holding a declared subscription and an overlapping
// undeclared one is served the union, each record once.
func TestDeclaredAndUndeclaredSubscriptionsAreServedTheUnionOnce(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect("union", nil)
	c.subscribeWith(1, declare("topic_hash(2, 0)"), codec.Subscription{Filter: []byte("ev/#"), QoS: 1})
	c.mustSubscribe(2, "ev/wide/#", 1)
	in, out := topicsIn("ev/wide", 2, 0, 1)[0], topicsIn("ev/wide", 2, 1, 1)[0]
	inNarrow, outNarrow := topicsIn("ev/n", 2, 0, 1)[0], topicsIn("ev/n", 2, 1, 1)[0]
	for _, tp := range []string{in, out, inNarrow, outNarrow} {
		publishAll(t, b, tp, tp)
	}
	publishAll(t, b, inNarrow, "end")
	got := payloads(c.readUntil("end"))
	if strings.Join(got, ",") != strings.Join([]string{in, out, inNarrow}, ",") {
		t.Fatalf("served %v, want %s (both), %s (undeclared), %s (slice), each once", got, in, out, inNarrow)
	}
}

// A11.18: on append a member's one position advances past the records
// outside its slice: widening the declaration later does not recover them.
func TestSliceMemberStepsPastRecordsOutsideItsSlice(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	in, out := topicsIn("ev/s", 2, 0, 1)[0], topicsIn("ev/s", 2, 1, 1)[0]
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect("member", freshSession(300))
	c.subscribeWith(1, declare("topic_hash(2, 0)"), codec.Subscription{Filter: []byte("ev/#"), QoS: 1})
	publishAll(t, b, out, "outside")
	publishAll(t, b, in, "inside")
	if got := payloads(c.readUntil("inside")); len(got) != 0 {
		t.Fatalf("served %v outside its slice", got)
	}
	c.mustSubscribe(2, "ev/#", 1) // widened: the same filter, no declaration
	publishAll(t, b, in, "end")
	if got := payloads(c.readUntil("end")); len(got) != 0 {
		t.Fatalf("widening recovered %v, behind the position", got)
	}
}

// A11.22, D10.6: /v1/operations/sessions shows each filter's declared slice
// - filter, count, indices - and nothing for a filter that declared none.
func TestOperationsSessionsShowTheDeclaredSlices(t *testing.T) {
	ob := startAppendOps(t, "")
	c := dialRaw(t, ob.addr, codec.Version5)
	c.mustConnect("north-17", nil)
	c.subscribeWith(1, declare("topic_hash(3, 2)", "topic_hash(3, 0)"), codec.Subscription{Filter: []byte("ev/+/events/+"), QoS: 1})
	c.mustSubscribe(2, "ev/plain/#", 1)
	_, body := ob.get(t, "GET", "/v1/operations/sessions")
	var res struct {
		Sessions []struct {
			ClientID      string `json:"client_id"`
			Subscriptions int    `json:"subscriptions"`
			Partitions    []struct {
				Filter  string `json:"filter"`
				Count   int    `json:"count"`
				Indices []int  `json:"indices"`
			} `json:"partitions"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(body), &res); err != nil || len(res.Sessions) != 1 {
		t.Fatalf("sessions body %s: %v", body, err)
	}
	s := res.Sessions[0]
	if s.Subscriptions != 2 || len(s.Partitions) != 1 || s.Partitions[0].Filter != "ev/+/events/+" || s.Partitions[0].Count != 3 || fmt.Sprint(s.Partitions[0].Indices) != "[0 2]" {
		t.Fatalf("session row %+v, want 2 subscriptions and one partition ev/+/events/+ count 3 indices [0 2]", s)
	}
}
