package channel

import (
	"strings"
	"testing"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

func kinds(name string) delivery.Kind {
	switch name {
	case "events", "jobs__dlq":
		return delivery.KindAppend
	case "jobs":
		return delivery.KindQueue
	case "state":
		return delivery.KindLatest
	}
	return delivery.KindNone
}

func TestReservedPublishTopics(t *testing.T) {
	for _, c := range []struct {
		topic   string
		verb    Verb
		channel string
		code    codec.ReasonCode
		why     string
	}{
		{"$saguin/consumer/events/seek", VerbSeek, "events", codec.Success, ""},
		{"$saguin/consumer/jobs__dlq/seek", VerbSeek, "jobs__dlq", codec.Success, ""},
		{"$saguin/consumer/jobs/seek", VerbNone, "", codec.TopicNameInvalid, "is a queue"},
		{"$saguin/consumer/state/seek", VerbNone, "", codec.TopicNameInvalid, "is a latest channel"},
		{"$saguin/consumer/nope/seek", VerbNone, "", codec.TopicNameInvalid, "is no channel"},
		{"$saguin/queue/jobs/response", VerbResponse, "jobs", codec.Success, ""},
		{"$saguin/queue/events/response", VerbNone, "", codec.TopicNameInvalid, "is an append channel"},
		{"$saguin/queue/nope/response", VerbNone, "", codec.TopicNameInvalid, "is no channel"},
		{"$saguin/kv/get", VerbGet, "", codec.Success, ""},
		{"$saguin/sessions/disconnect", VerbDisconnect, "", codec.Success, ""},
		{"$saguin/catalogue/events", VerbCatalogue, "events", codec.Success, ""},
		{"$saguin/catalogue/nope", VerbCatalogue, "nope", codec.Success, ""}, // the handler answers empty
		{"$saguin/catalogue/a/b", VerbNone, "", codec.TopicNameInvalid, "one topic level"},
		// Everything else in the space, the two subscribable topics included.
		{"$saguin/queue/jobs", VerbNone, "", codec.TopicNameInvalid, "none of the five"},
		{"$saguin/consumer/events/seek/reply", VerbNone, "", codec.TopicNameInvalid, "none of the five"},
		{"$saguin/consumer/events/seek/x", VerbNone, "", codec.TopicNameInvalid, "none of the five"},
		{"$saguin/consumer//seek", VerbNone, "", codec.TopicNameInvalid, "none of the five"},
		{"$saguin/kv/get/x", VerbNone, "", codec.TopicNameInvalid, "none of the five"},
		{"$saguin/", VerbNone, "", codec.TopicNameInvalid, "none of the five"},
		{"$saguin", VerbNone, "", codec.TopicNameInvalid, "none of the five"},
	} {
		req, code, why := ClassifyPublish(c.topic, kinds)
		if req.Verb != c.verb || req.Channel != c.channel || code != c.code || !strings.Contains(why, c.why) {
			t.Errorf("ClassifyPublish(%q) = %v %q %v %q", c.topic, req.Verb, req.Channel, code, why)
		}
	}
}

func TestReservedSubackTable(t *testing.T) {
	v5 := SubscribeAsk{Version: codec.Version5, QoS: 1}
	for _, c := range []struct {
		filter string
		ask    SubscribeAsk
		form   Form
		code   codec.ReasonCode
	}{
		{"$saguin/queue/jobs", v5, FormQueue, codec.GrantedQoS1},
		{"$saguin/queue/jobs", SubscribeAsk{Version: codec.Version5, QoS: 2}, FormQueue, codec.GrantedQoS1},
		{"$saguin/queue/jobs", SubscribeAsk{Version: codec.Version5, QoS: 0}, FormNone, codec.ImplementationSpecificError},
		{"$saguin/queue/jobs", SubscribeAsk{Version: codec.Version5, QoS: 1, NoLocal: true}, FormNone, codec.TopicFilterInvalid},
		{"$saguin/queue/jobs", SubscribeAsk{Version: codec.Version311, QoS: 1}, FormNone, codec.TopicFilterInvalid},
		{"$saguin/queue/jobs", SubscribeAsk{Version: codec.Version5, QoS: 1, Partition: true}, FormNone, codec.ImplementationSpecificError},
		{"$saguin/queue/jobs/#", v5, FormNone, codec.TopicFilterInvalid},
		{"$saguin/queue/jobs/response", v5, FormNone, codec.TopicFilterInvalid},
		{"$saguin/queue/jobs/w-7", v5, FormNone, codec.TopicFilterInvalid},
		{"$saguin/queue/#", v5, FormNone, codec.TopicFilterInvalid},
		{"$saguin/queue/events", v5, FormNone, codec.TopicFilterInvalid},
		{"$saguin/queue/jobs__dlq", v5, FormNone, codec.TopicFilterInvalid},
		{"$saguin/queue/", v5, FormNone, codec.TopicFilterInvalid},
		{"$saguin/consumer/events/seek/reply", v5, FormSeekReply, codec.GrantedQoS1},
		{"$saguin/consumer/events/seek/reply", SubscribeAsk{Version: codec.Version311}, FormSeekReply, codec.GrantedQoS0},
		{"$saguin/consumer/jobs/seek/reply", v5, FormNone, codec.NotAuthorized},
		{"$saguin/consumer/+/seek/reply", v5, FormNone, codec.NotAuthorized},
		{"$saguin/consumer/events/seek", v5, FormNone, codec.NotAuthorized},
		{"$saguin/#", v5, FormNone, codec.NotAuthorized},
		{"$saguin/kv/get", v5, FormNone, codec.NotAuthorized},
	} {
		form, _, code, why := ClassifySubscribe(c.filter, c.ask, kinds)
		if form != c.form || code != c.code || (code.IsError() && why == "") {
			t.Errorf("ClassifySubscribe(%q, %+v) = %v %v %q; want %v %v", c.filter, c.ask, form, code, why, c.form, c.code)
		}
	}
}

func users(kv ...string) []codec.UserProperty {
	var out []codec.UserProperty
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, codec.UserProperty{Key: []byte(kv[i]), Value: []byte(kv[i+1])})
	}
	return out
}

func TestSubscribeSaguinProperties(t *testing.T) {
	d, code, _ := ReadSubscribe(users("x", "y", "saguin-filter", "topic_hash(4, 1)", "saguin-filter", "topic_hash(4, 3)", "saguin-deletions", ""))
	if code != codec.Success || !d.Deletions || d.Partition.Count != 4 || len(d.Partition.Indices) != 2 {
		t.Fatalf("%+v %v", d, code)
	}
	if _, code, why := ReadSubscribe(users("saguin-slice", "1")); code != codec.ImplementationSpecificError || !strings.Contains(why, "saguin-slice") {
		t.Fatalf("unread: %v %q", code, why)
	}
	if _, code, why := ReadSubscribe(users("saguin-filter", "")); code != codec.ImplementationSpecificError || why != ErrPartitionEmpty.Error() {
		t.Fatalf("empty: %v %q", code, why)
	}
	if d, code, _ := ReadSubscribe(users("plain", "1")); code != codec.Success || d.Partition.Declared() || d.Deletions {
		t.Fatalf("none: %+v %v", d, code)
	}
}
