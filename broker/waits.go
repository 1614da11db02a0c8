package broker

import (
	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// Waits implements netloop.Handler: a call runs off the connection's loop
// when a write it will make - and its client waits for - goes to a provider
// that commits to disk. netloop asks it on the loop for every such packet, so
// it takes no lock a store write holds and writes nothing.
//
// A publish is its engine's to decide (engine.Waits), its topic known; for
// broadcast (broadcastEngine.Waits) a QoS 1 publish nobody kept is owed
// stays on the loop, on sqlite too. A stored PUBREC is written only for a
// delivery from the log (a Ref with an offset); one a shared group handed
// from memory stays on the loop. A release writes the log and, for a
// retained publish, the retained store; a SUBSCRIBE writes the session
// record and reads the retained values its filter matches; the rest write
// the session store alone.
func (b *Broker) Waits(c delivery.Client, call delivery.Call, p *codec.Publish, ref delivery.Ref) bool {
	sessions, retained := b.opts.SessionsWaitOnDisk, b.opts.RetainedWaitOnDisk
	switch call {
	case delivery.CallPublish:
		// Its engine's store keeps it, a QoS 2 hold too.
		return b.routes.target(p.Topic).Waits(c.ClientID(), p)
	case delivery.CallReceived:
		return sessions && ref.Kind == delivery.KindBroadcast && ref.N != 0
	case delivery.CallRelease, delivery.CallSubscribe:
		return sessions || retained
	case delivery.CallDisconnect:
		// Leaving stores a kept session's record as the DISCONNECT leaves
		// it (storeDeparture), and its engines' positions that moved. The
		// shard lock is the one Disconnected takes on the loop next anyway.
		if sessions && b.keptBy(c) {
			return true
		}
		for _, e := range b.routes.engines() {
			if l, ok := e.(engine.Leaver); ok && l.LeavingWaits(c.ClientID()) {
				return true
			}
		}
		return false
	case delivery.CallConnect:
		// A password is verified off the loop: a $7$ verify costs a third
		// of a millisecond, which would stall every connection of the loop.
		return sessions || b.verifying.Load()
	default:
		return sessions
	}
}

// keptBy reports whether c owns a session that outlives its connection:
// one with a stored record a DISCONNECT changes.
func (b *Broker) keptBy(c delivery.Client) bool {
	id := c.ClientID()
	sh := b.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s := sh.sessions[id]
	return s.ownedBy(c) && s.expiry > 0
}

// logsFor reports whether routing p, a QoS 1 or 2 publish from publisher,
// may append it to the broadcast log: it reaches a session that outlives its
// connection at QoS 1 or 2, or a shared group one of whose members' sessions
// does (durable: what no member can take then is held in the log). It asks
// what routeLogged will, with the same match, before the route.
func (b *Broker) logsFor(publisher string, p *codec.Publish) bool {
	kept := false
	var groups [4]*shareGroup // the groups matched; more than this many is answered yes
	n := 0
	b.subs.match(p.Topic, func(s *session, sub subscription) {
		switch {
		case kept:
		case s.group != nil:
			if n == len(groups) {
				kept = true
				return
			}
			groups[n] = s.group
			n++
		case sub.noLocal && s.id == publisher:
		case min(p.QoS, sub.qos) > 0 && s.expiry > 0:
			kept = true
		}
	})
	if kept || n == 0 {
		return kept
	}
	// shares.mu is above index.mu (LOCKS.md): taken once the match let go.
	b.shares.mu.Lock()
	defer b.shares.mu.Unlock()
	for _, g := range groups[:n] {
		if g.durable() {
			return true
		}
	}
	return false
}

var _ netloop.Handler = (*Broker)(nil)
