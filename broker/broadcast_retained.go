package broker

import (
	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// retain keeps a broadcast's RETAIN publish as its topic's value in the
// retained store (broker.retained), or deletes the value for an empty
// payload. A store with no room refuses 0x97 and keeps what it had; any
// other failure is 0x83 (notes-0003 "Retained messages").
func (b *Broker) retain(publisher string, p *codec.Publish) (codec.ReasonCode, string) {
	return b.retainHeld(nil, publisher, p)
}

// retainHeld is retain inside a QoS 2 release of publisher's, which makes
// its room through host (Host.WithRoom knows the shard held across it); nil
// for a caller holding no shard. When the retained store shares the session
// store's provider, a full provider first takes its room from the broadcast
// log (RFC 0002 "Every session's state").
func (b *Broker) retainHeld(host engine.Host, publisher string, p *codec.Publish) (codec.ReasonCode, string) {
	var err error
	if len(p.Payload) == 0 {
		_, err = b.retained.Delete(string(p.Topic))
	} else if r := recordOf(p, publisher, b.now()); b.opts.RetainedWithSessions {
		set := func() error { return b.retained.Set(r) }
		if host != nil {
			err = host.WithRoom(publisher, "a retained value", set)
		} else {
			err = b.withRoom(nil, "a retained value", set)
		}
	} else {
		err = b.retained.Set(r)
	}
	switch {
	case err == nil:
		return codec.Success, ""
	case store.IsFull(err):
		return codec.QuotaExceeded, "the retained store is full"
	default:
		b.counters.retainedStorageError()
		b.log.Error("retained store failed", "client_id", publisher, "topic", string(p.Topic), "error", err)
		return codec.ImplementationSpecificError, "the retained store could not keep the value"
	}
}

// sendRetained delivers, after the SUBACK, every retained value filter
// matches, with RETAIN set and the publisher's Message Expiry counted down;
// a value whose expiry ran out is deleted instead of sent. To a session that
// outlives its connection a value at QoS 1 or 2 is kept in the broadcast log
// for that session only, so it is re-sent after a restart until acknowledged
// (RFC 0003 "Retained messages").
func (b *Broker) sendRetained(c delivery.Client, s *session, filter string, sub subscription) {
	var hits []store.Record
	match := func(t string) bool { return topic.Match(filter, t) && (sub.part == nil || sub.part.Accepts(t)) }
	if err := b.retained.Range(match, func(r store.Record) bool {
		hits = append(hits, r)
		return true
	}); err != nil {
		b.counters.retainedStorageError()
		b.log.Error("retained store failed", "client_id", c.ClientID(), "filter", filter, "error", err)
		return
	}
	now := b.now()
	for i := range hits {
		if sub.noLocal && hits[i].ClientID == c.ClientID() {
			continue // No Local holds for a retained value too (RFC 0003 "No Local")
		}
		m := messageOf(&hits[i], now)
		if m == nil {
			if _, err := b.retained.Delete(hits[i].Topic); err != nil {
				b.counters.retainedStorageError()
			}
			continue
		}
		d := delivery.Delivery{QoS: min(hits[i].QoS, sub.qos), Retain: true}
		if sub.id != 0 {
			d.SubscriptionIDs = []uint32{sub.id}
		}
		if d.QoS > 0 && s.expiry > 0 && b.bcast.keepFor(s, c, &hits[i], m, d) {
			continue
		}
		c.Deliver(m, d)
	}
}
