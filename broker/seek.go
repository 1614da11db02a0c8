package broker

import (
	"strings"

	"github.com/saguin-edge/saguin/broker/acl"
	records "github.com/saguin-edge/saguin/broker/channel"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// seekPrefix begins every $saguin/consumer/<channel>/seek topic.
const seekPrefix = "$saguin/consumer/"

// seeker is a channel engine a consumer may move its position on: an append
// channel (broker/appendch), a queue's dead-letter channel included.
type seeker interface {
	// Seek moves the position and calls answer with the outcome before
	// any record from the new position is sent.
	Seek(clientID string, payload []byte, answer func(records.SeekAnswer))
}

// kindOf names the kind of the channel plugged under name (KindNone for none).
func (r *routes) kindOf(name string) delivery.Kind {
	names := r.byName.Load()
	if names == nil {
		return delivery.KindNone
	}
	if e := (*names)[name]; e != nil {
		return e.Kind()
	}
	return delivery.KindNone
}

// seek answers a publish to $saguin/consumer/<channel>/seek (RFC 0003
// "Moving a consumer's position: seek"): the topic judged first (0x90 for a
// channel that is no append channel, saying which), then the request - a
// durable session owned by this connection, the payload - by the channel's
// engine. The reply is written to this connection only, before the PUBACK
// (netloop writes what a $saguin/ publish queued first); a refusal rides the
// PUBACK too, as 0x83.
func (b *Broker) seek(c delivery.Client, p *codec.Publish) (codec.ReasonCode, string) {
	req, code, why := records.ClassifyPublish(string(p.Topic), b.routes.kindOf)
	if code != codec.Success {
		return b.refusePublish(c.ClientID(), p, code, why)
	}
	var e seeker
	if names := b.routes.byName.Load(); names != nil {
		e, _ = (*names)[req.Channel].(seeker)
	}
	if e == nil {
		return b.refusePublish(c.ClientID(), p, codec.TopicNameInvalid, "channel "+req.Channel+" cannot be sought")
	}
	id := c.ClientID()
	// A seek is the seek verb on the channel it moves (RFC 0002 "The
	// verbs"), held for the channel as a whole: a grant narrowed to some of
	// its topics still lets the client move its one position there. Refused
	// 0x87 with no reply (checklist E15), the position untouched.
	if g := b.grantsFor(b.whoOf(c), id); g != nil && !g.AllowsChannel(req.Channel, acl.Seek) {
		return b.refusePublish(id, p, codec.NotAuthorized, "the acl_file grants this client no seek on channel "+req.Channel)
	}
	sh := b.shard(id)
	sh.mu.Lock()
	s := sh.sessions[id]
	durable := s.ownedBy(c) && s.Kept()
	sh.mu.Unlock()
	var a records.SeekAnswer
	reply := func(x records.SeekAnswer) {
		a = x
		// Labelled: saguin-floor and saguin-next are the broker's own.
		c.Deliver(delivery.NewLabelledMessage(a.Reply(p, req.Channel), b.now), delivery.Delivery{})
	}
	if durable {
		e.Seek(id, p.Payload, reply)
	} else {
		reply(records.SeekAnswer{Word: records.WordNoSession})
	}
	code, why = a.Code()
	if code != codec.Success {
		b.log.Warn("seek refused", "client_id", id, "channel", req.Channel, "reply", a.Word)
	}
	return code, why
}

// isSeek reports a topic of the seek's shape, judged by records.ClassifyPublish.
func isSeek(t []byte) bool {
	return strings.HasPrefix(string(t), seekPrefix) && strings.HasSuffix(string(t), "/seek")
}
