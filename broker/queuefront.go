package broker

import (
	"strings"

	"github.com/saguin-edge/saguin/broker/acl"
	sagchannel "github.com/saguin-edge/saguin/broker/channel"
	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// The two places a queue reaches into the reserved $saguin/ space: its
// subscription form $saguin/queue/<q>, served to the queue's engine, and
// its Response Topic $saguin/queue/<q>/response, where a worker's ack or
// return is handed to the engine (RFC 0002 "What each channel type admits"
// / queue). Classified with broker/channel's front.

// channelNamed is the engine of the channel called name, nil for none.
func (b *Broker) channelNamed(name string) engine.Engine {
	if names := b.routes.byName.Load(); names != nil {
		return (*names)[name]
	}
	return nil
}

// queueAnswer hands a publish on a queue's Response Topic to its engine;
// ok is false for any other topic. The PUBACK is 0x00 whenever the topic
// names a queue, whatever the answer says (checklist C5.5); 0x90 for a
// name that is no queue.
func (b *Broker) queueAnswer(c delivery.Client, p *codec.Publish) (code codec.ReasonCode, why string, ok bool) {
	if !strings.HasPrefix(string(p.Topic), topic.QueuePrefix) {
		return 0, "", false
	}
	req, code, why := sagchannel.ClassifyPublish(string(p.Topic), b.routes.kindOf)
	if code != codec.Success {
		return code, why, true
	}
	if req.Verb != sagchannel.VerbResponse {
		return 0, "", false
	}
	if a := b.access.Load(); a != nil && a.ACL != nil {
		who := b.whoOf(c)
		if who == nil {
			return codec.UnspecifiedError, "the session was taken over", true
		}
		if !grantsIn(a.ACL, who, c.ClientID()).AllowsChannel(req.Channel, acl.Consume) {
			return codec.NotAuthorized, "the acl_file grants this client no consume on queue " + req.Channel, true
		}
	}
	e := b.channelNamed(req.Channel)
	code, why = e.Publish(c.ClientID(), p)
	return code, why, true
}

// reservedForm judges a plain filter naming one of the two subscribable
// $saguin/ topics - a queue's form (any spelling under $saguin/queue/) or a
// seek reply - with the SUBACK table; ok is false for every other filter
// (judged by checkFilter).
func (b *Broker) reservedForm(c delivery.Client, filter string, o delivery.SubscribeOptions) (form sagchannel.Form, code codec.ReasonCode, why string, ok bool) {
	if !strings.HasPrefix(filter, topic.SaguinPrefix) {
		return sagchannel.FormNone, 0, "", false
	}
	// A saguin-filter declaration refuses the form alone 0x83 (checklist
	// C2.9); a malformed one refuses every filter of the packet, later.
	d, _, _ := sagchannel.ReadSubscribe(o.User)
	form, _, code, why = sagchannel.ClassifySubscribe(filter, sagchannel.SubscribeAsk{Version: c.Version(), QoS: o.QoS, NoLocal: o.NoLocal, Partition: d.Partition.Declared()}, b.routes.kindOf)
	switch {
	case form == sagchannel.FormQueue:
		return form, codec.Success, "", true
	case form == sagchannel.FormSeekReply:
		// Granted at the QoS asked: the subscription only lets the
		// client's library route a reply, which is written to the seeking
		// connection and never published, so it carries nothing else.
		return form, codec.Success, "", true
	case strings.HasPrefix(filter, topic.QueuePrefix):
		return form, code, why, true
	}
	return sagchannel.FormNone, 0, "", false
}

// refusedAtStart judges a restored filter under $saguin/queue/ as a
// SUBSCRIBE's would be (the channels may have changed while the broker was
// stopped); every other filter is judged by the engines it reaches.
func (b *Broker) refusedAtStart(filter string, sub subscription) (codec.ReasonCode, string) {
	if !strings.HasPrefix(filter, topic.QueuePrefix) {
		return codec.Success, ""
	}
	_, _, code, why := sagchannel.ClassifySubscribe(filter, sagchannel.SubscribeAsk{Version: codec.Version5, QoS: sub.qos, NoLocal: sub.noLocal}, b.routes.kindOf)
	return code, why
}

// queueFormEngine is the queue engine whose form filter is, nil for none.
func (b *Broker) queueFormEngine(filter string) engine.Engine {
	name, ok := strings.CutPrefix(filter, topic.QueuePrefix)
	if !ok {
		return nil
	}
	if e := b.channelNamed(name); e != nil && e.Kind() == delivery.KindQueue {
		return e
	}
	return nil
}

// deadLetterTarget: e is a queue's derived dead-letter channel, which only
// the dead-letter move writes (RFC 0002 "The dead-letter channel"): a
// publish there is refused 0x87, a Will there 0x90 at CONNECT.
func deadLetterTarget(e engine.Engine) bool {
	return e != nil && e.Kind() == delivery.KindAppend && strings.HasSuffix(e.Name(), topic.DeadLetterSuffix)
}
