package broker

import (
	"github.com/saguin-edge/saguin/netloop"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// Waits implements netloop.StoreWaiter: a call runs off the connection's loop
// when a write it may make - and its client waits for - goes to a provider
// that commits to disk. It reads two options and nothing else, since netloop
// asks it for every such packet on the loop.
//
// A QoS 1 or 2 publish may append to the broadcast log (a session that
// outlives its connection is subscribed) or hold an exactly-once publish;
// which, is known only once its topic is matched, so every one is taken off
// the loop on a disk-backed session store. A QoS 0 publish writes only a
// retained value. A release writes the log and, for a retained publish, the
// retained store; a SUBSCRIBE writes the session record and reads the retained
// values its filter matches; the rest write the session store alone.
func (b *Broker) Waits(call delivery.Call, qos byte, retain bool) bool {
	sessions, retained := b.opts.SessionsWaitOnDisk, b.opts.RetainedWaitOnDisk
	switch call {
	case delivery.CallPublish:
		return qos > 0 && sessions || retain && retained
	case delivery.CallRelease, delivery.CallSubscribe:
		return sessions || retained
	default:
		return sessions
	}
}

var _ netloop.StoreWaiter = (*Broker)(nil)
