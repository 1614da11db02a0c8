package broker

import (
	"unicode/utf8"

	"github.com/saguin-edge/saguin/broker/acl"
	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// PointReadTopic is where a client reads one topic's current value on a
// latest channel without subscribing (RFC 0003 "Reading one value: the point
// read").
const PointReadTopic = topic.SaguinPrefix + "kv/get"

// pointRead answers a publish to $saguin/kv/get: the payload is the topic to
// read; the value (an empty payload for none: never set, deleted, or past the
// channel's retention_period) is written to the asking connection only, on
// its Response Topic, carrying the caller's Correlation Data or else the key.
// It is never published and subscribes nobody. Every refusal is on the
// PUBACK (checklist B8): 0x83 when the request cannot be acted on (no
// Response Topic, an empty key), 0x90 when the key is no topic this broker
// holds a value for (broadcast, an append or queue channel, a wildcard, the
// reserved space, too long or deep), 0x87 without read on the channel. At
// QoS 0 there is no PUBACK to carry any answer: the request is dropped.
func (b *Broker) pointRead(c delivery.Client, p *codec.Publish) (codec.ReasonCode, string) {
	id := c.ClientID()
	if p.QoS == 0 {
		b.log.Debug("point read at QoS 0 dropped: there is no PUBACK to carry its answer", "client_id", id)
		return codec.Success, ""
	}
	if c.Version() != codec.Version5 {
		// No Response Topic in 3.1.1: the refusal closes the asking
		// connection (RFC 0002 "Publishing").
		b.log.Warn("closed: $saguin/kv/get from a 3.1.1 client, which has no Response Topic to be answered on", "client_id", id)
		c.Kick(codec.ImplementationSpecificError)
		return codec.ImplementationSpecificError, "a 3.1.1 client cannot ask for a point read"
	}
	key := string(p.Payload)
	switch {
	case len(p.Properties.ResponseTopic) == 0:
		return b.refusePublish(id, p, codec.ImplementationSpecificError, "no Response Topic to answer on: the read would do nothing")
	case key == "":
		return b.refusePublish(id, p, codec.ImplementationSpecificError, "the payload names no topic to read")
	case !utf8.ValidString(key) || topic.ValidateName(key) != nil:
		return b.refusePublish(id, p, codec.TopicNameInvalid, "the key is not a topic name: a wildcard asks for many values, which is a subscription")
	case key[0] == '$':
		return b.refusePublish(id, p, codec.TopicNameInvalid, "the key is in a reserved space, where no channel holds a value")
	}
	if code, why := b.checkTopic(p.Payload); code != codec.Success {
		return b.refusePublish(id, p, codec.TopicNameInvalid, "the key: "+why)
	}
	eng := b.routes.target(p.Payload)
	if eng.Kind() == delivery.KindBroadcast {
		return b.refusePublish(id, p, codec.TopicNameInvalid, "the key names no latest channel: a topic no channel claims is broadcast and holds no value")
	}
	reader, ok := eng.(engine.PointReader)
	if !ok || eng.Kind() != delivery.KindLatest {
		return b.refusePublish(id, p, codec.TopicNameInvalid, "the key is in channel "+eng.Name()+", a "+kindName(eng.Kind())+" channel: a point read reads a latest channel")
	}
	if !(host{b: b}).Allows(id, key, acl.Read) {
		return b.refusePublish(id, p, codec.NotAuthorized, "the acl_file grants this client no read on the key's channel")
	}
	v, found, err := reader.Get(key)
	if err != nil {
		b.log.Error("point read failed", "client_id", id, "key", key, "error", err)
		return b.refusePublish(id, p, codec.UnspecifiedError, "the channel's store could not be read")
	}
	answer := codec.Publish{Topic: p.Properties.ResponseTopic, Payload: []byte{}}
	if found {
		answer.Payload = v.Payload
	}
	answer.Properties.CorrelationData = p.Payload
	if p.Properties.Present.Has(codec.PropCorrelationData) {
		answer.Properties.CorrelationData = p.Properties.CorrelationData
	}
	answer.Properties.Present.Set(codec.PropCorrelationData)
	m := delivery.AcquireMessage(&answer, b.now)
	c.Deliver(m, delivery.Delivery{})
	m.Release()
	return codec.Success, ""
}

// kindName is a channel kind as the configuration spells it.
func kindName(k delivery.Kind) string {
	switch k {
	case delivery.KindAppend:
		return "append"
	case delivery.KindLatest:
		return "latest"
	case delivery.KindQueue:
		return "queue"
	}
	return "broadcast"
}
