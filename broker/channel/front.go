package channel

import (
	"bytes"
	"strings"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// Verb is which of the five publishable $saguin/ topics a PUBLISH names
// (RFC 0002 "Publishing").
type Verb uint8

const (
	VerbNone       Verb = iota
	VerbSeek            // $saguin/consumer/<channel>/seek
	VerbResponse        // $saguin/queue/<queue>/response
	VerbGet             // $saguin/kv/get
	VerbDisconnect      // $saguin/sessions/disconnect
	VerbCatalogue       // $saguin/catalogue/<channel>
)

func (v Verb) String() string {
	switch v {
	case VerbSeek:
		return "seek"
	case VerbResponse:
		return "response"
	case VerbGet:
		return "kv/get"
	case VerbDisconnect:
		return "sessions/disconnect"
	case VerbCatalogue:
		return "catalogue"
	}
	return "none"
}

// KindOf names the kind of the channel called name (a queue's <q>__dlq is an
// append channel), KindNone for a name that is no channel.
type KindOf func(name string) delivery.Kind

// Reserved reports a topic or filter in the reserved space: $saguin itself
// and everything under $saguin/.
func InReserved(s string) bool {
	return s == topic.SaguinRoot || strings.HasPrefix(s, topic.SaguinPrefix)
}

// Request is a $saguin/ publish classified: its verb and the channel it names
// ("" for kv/get and sessions/disconnect).
type Request struct {
	Verb    Verb
	Channel string
}

// ClassifyPublish judges a PUBLISH topic in the reserved space by the topic
// alone (RFC 0002 "Publishing": the reason code judges the topic, the handler
// the request). Exactly five topics are publishable; everything else there is
// 0x90, and so is a seek naming no append channel or a response naming no
// queue, with a Reason String saying which. The catalogue's channel is judged
// by its handler (any kind, and no channel is an empty reply), but a name
// holding / is 0x90.
func ClassifyPublish(t string, kindOf KindOf) (Request, codec.ReasonCode, string) {
	if !strings.HasPrefix(t, topic.SaguinPrefix) {
		return Request{}, codec.TopicNameInvalid, "topic is in the reserved $saguin/ space and is none of the five Sagüin defines there"
	}
	rest := t[len(topic.SaguinPrefix):]
	switch rest {
	case "kv/get":
		return Request{Verb: VerbGet}, codec.Success, ""
	case "sessions/disconnect":
		return Request{Verb: VerbDisconnect}, codec.Success, ""
	}
	if name, ok := strings.CutPrefix(rest, "catalogue/"); ok {
		if strings.IndexByte(name, '/') >= 0 {
			return Request{}, codec.TopicNameInvalid, "a channel name is one topic level: $saguin/catalogue/<channel>"
		}
		return Request{Verb: VerbCatalogue, Channel: name}, codec.Success, ""
	}
	if name, ok := oneLevel(rest, "consumer/", "/seek"); ok {
		switch kindOf(name) {
		case delivery.KindAppend:
			return Request{Verb: VerbSeek, Channel: name}, codec.Success, ""
		case delivery.KindQueue:
			return Request{}, codec.TopicNameInvalid, "a seek names an append channel and " + name + " is a queue"
		case delivery.KindLatest:
			return Request{}, codec.TopicNameInvalid, "a seek names an append channel and " + name + " is a latest channel"
		}
		return Request{}, codec.TopicNameInvalid, "a seek names an append channel and " + name + " is no channel"
	}
	if name, ok := oneLevel(rest, "queue/", "/response"); ok {
		switch kindOf(name) {
		case delivery.KindQueue:
			return Request{Verb: VerbResponse, Channel: name}, codec.Success, ""
		case delivery.KindAppend:
			return Request{}, codec.TopicNameInvalid, "a response names a queue and " + name + " is an append channel"
		case delivery.KindLatest:
			return Request{}, codec.TopicNameInvalid, "a response names a queue and " + name + " is a latest channel"
		}
		return Request{}, codec.TopicNameInvalid, "a response names a queue and " + name + " is no channel"
	}
	return Request{}, codec.TopicNameInvalid, "topic is in the reserved $saguin/ space and is none of the five Sagüin defines there"
}

// oneLevel reads prefix<name>suffix with name one non-empty level.
func oneLevel(s, prefix, suffix string) (string, bool) {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return "", false
	}
	name, ok := strings.CutSuffix(rest, suffix)
	if !ok || name == "" || strings.IndexByte(name, '/') >= 0 {
		return "", false
	}
	return name, true
}

// Form is which of the two subscribable $saguin/ topics a filter is.
type Form uint8

const (
	FormNone      Form = iota
	FormQueue          // $saguin/queue/<queue>: a worker
	FormSeekReply      // $saguin/consumer/<channel>/seek/reply
)

// SubscribeAsk is what a SUBSCRIBE asks of one filter, as far as the
// reserved space's table reads it.
type SubscribeAsk struct {
	Version   uint8
	QoS       uint8
	NoLocal   bool
	Partition bool // the packet carries a valid saguin-filter declaration
}

// ClassifySubscribe answers a plain (not $share/) filter in the reserved
// space with the SUBACK table of RFC 0002 "Shared subscriptions" and
// "Publishing": a queue's form, named by a queue, is granted at QoS 1 (0x83
// at QoS 0 or with a partition declaration, 0x8F with No Local or from
// 3.1.1); any other spelling under $saguin/queue/ is 0x8F (checklist E9); a
// seek reply naming an append channel is granted at the QoS asked
// (checklist E24: 0x87 for any other name); everything else 0x87. The code
// is the decided one: netloop writes 0x80 for it to a 3.1.1 client. The ACL
// (consume on a queue) is asked by the caller after this.
func ClassifySubscribe(filter string, a SubscribeAsk, kindOf KindOf) (Form, string, codec.ReasonCode, string) {
	if rest, ok := strings.CutPrefix(filter, topic.QueuePrefix); ok {
		if rest == "" || strings.ContainsAny(rest, "/+#") || kindOf(rest) != delivery.KindQueue {
			return FormNone, "", codec.TopicFilterInvalid, "names no queue: a queue is consumed through $saguin/queue/<queue>, and this is not that form"
		}
		switch {
		case a.Version != codec.Version5:
			return FormNone, "", codec.TopicFilterInvalid, "a queue cannot be consumed over MQTT 3.1.1: a delivery's Response Topic and Correlation Data have no place there"
		case a.NoLocal:
			return FormNone, "", codec.TopicFilterInvalid, "No Local on a queue's form would withhold a job from the one worker chosen for it"
		case a.QoS == 0:
			return FormNone, "", codec.ImplementationSpecificError, "a queue's form is subscribed at QoS 1: QoS 0 has no acknowledgement to start the visibility timeout from"
		case a.Partition:
			return FormNone, "", codec.ImplementationSpecificError, "saguin-filter is refused on a queue's form: a queue already divides its work"
		}
		return FormQueue, rest, codec.GrantedQoS1, ""
	}
	if name, ok := oneLevel(strings.TrimPrefix(filter, topic.SaguinPrefix), "consumer/", "/seek/reply"); ok && strings.HasPrefix(filter, topic.SaguinPrefix) {
		if !strings.ContainsAny(name, "+#") && kindOf(name) == delivery.KindAppend {
			q := a.QoS
			if q > 2 {
				q = 2
			}
			return FormSeekReply, name, codec.ReasonCode(q), ""
		}
		return FormNone, "", codec.NotAuthorized, "a seek reply is subscribed for an append channel, and " + name + " is none"
	}
	return FormNone, "", codec.NotAuthorized, "nothing is delivered under $saguin/ but a queue's form and a seek reply"
}

// Declaration is what a SUBSCRIBE's saguin- User Properties ask for every
// filter of the packet.
type Declaration struct {
	Partition Partition
	Deletions bool // saguin-deletions: presence is the switch
}

// ReadSubscribe reads a SUBSCRIBE's User Properties: saguin-filter (repeats
// OR-ed) and saguin-deletions are the two Sagüin reads there; any other
// saguin- name, and a malformed or self-inconsistent declaration, refuse
// every filter of the packet 0x83 (RFC 0003 "The reserved prefix on a
// client's own packets"), with the sentence for the SUBACK's Reason String.
func ReadSubscribe(user []codec.UserProperty) (Declaration, codec.ReasonCode, string) {
	var d Declaration
	var slices [][]byte
	for i := range user {
		k := user[i].Key
		switch {
		case string(k) == FilterKey:
			slices = append(slices, user[i].Value)
		case string(k) == DeletionsKey:
			d.Deletions = true
		case bytes.HasPrefix(k, []byte(Prefix)):
			return Declaration{}, codec.ImplementationSpecificError, "the SUBSCRIBE carries the User Property " + string(k) + ", which Sagüin does not read; it reads saguin-filter and saguin-deletions there"
		}
	}
	if len(slices) > 0 {
		p, err := ParsePartition(slices)
		if err != nil {
			return Declaration{}, codec.ImplementationSpecificError, err.Error()
		}
		d.Partition = p
	}
	return d, codec.Success, ""
}
