package broker

import (
	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/codec"
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
