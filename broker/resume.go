package broker

import "github.com/saguin-edge/saguin/netloop/delivery"

// Unfinished implements netloop.Handler: the QoS 1 and 2 deliveries a
// session's connection ended without finishing stay with the session, to be
// sent again to the connection that resumes it - those that went on the wire
// under their packet identifiers with DUP, one whose PUBREC arrived as its
// PUBREL only (MQTT-4.4.0-1). When the session was already taken over they
// go to the connection that took it. A session that ends forgets them.
func (b *Broker) Unfinished(c delivery.Client, u []delivery.Unfinished) {
	id := c.ClientID()
	sh := b.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s := sh.sessions[id]
	var ref *clientRef
	if s != nil && !s.ended {
		ref = s.client.Load()
	}
	switch {
	case ref != nil && s.ownedBy(c):
		// Still its own: kept for whichever connection resumes it, or - for
		// a session that ends with this connection - for its ending, the
		// Disconnected that follows, where each engine takes its own back
		// (broadcast's End: what its groups handed it goes back to them or
		// is dropped, MQTT 5 4.8.2).
		if len(u) > 0 || s.rare != nil {
			r := s.rarely()
			releaseCarry(r.carry)
			r.carry = append(r.carry[:0], u...)
		}
		for _, x := range u {
			x.Msg.Retain() // the connection lets go of them as it ends
		}
	case ref != nil && s.rare != nil && s.rare.takenFrom == c:
		// Taken over while these were out: the resuming connection has them.
		b.resumeEngines(s, ref.c, u)
	default:
		// Its session already ended (taken over by a Clean Start, or one
		// that ended with its connection): the groups get theirs back. No
		// session is left to hand an engine's End, so broadcast's hand-back
		// is called here, with no session.
		b.returnToGroups(nil, broadcastOnly(u))
	}
}

// sendCarried sends a resumed session what its last connection left
// unfinished, and marks the broadcast-log entries among them as on the wire
// so the log's resume does not send them twice. Shard lock held.
func (b *Broker) sendCarried(s *session, c delivery.Client, u []delivery.Unfinished) {
	o := &s.owed
	for _, x := range u {
		if isChannel(x.Delivery.Ref) {
			continue // its engine's to send again (resumeEngines)
		}
		if off := x.Delivery.Ref.N; off != 0 {
			i := o.find(off)
			if i < 0 {
				continue // acknowledged meanwhile, or no longer owed
			}
			o.markSent(i)
		}
		c.Deliver(x.Msg, x.Delivery)
	}
}

// releaseCarry gives back the references a session's carried deliveries hold;
// the caller forgets them.
func releaseCarry(u []delivery.Unfinished) {
	for _, x := range u {
		x.Msg.Release()
	}
}
