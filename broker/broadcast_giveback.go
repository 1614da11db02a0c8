package broker

import (
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// What a member's session ending does with the deliveries its shared groups
// handed it from the broadcast log (RFC 0003 "Broadcast", MQTT 5 4.8.2):
//
//   - QoS 1 unacknowledged, or never put on a connection (any QoS): back to
//     the group, served to another member ahead of everything after the
//     group's cursor - at once to a member that can take it, otherwise kept
//     in the group's backlog and written as a returned delivery in the
//     ending's own transaction, so a restart serves it again;
//   - QoS 2 on a connection with no PUBREC: dropped (member_ended);
//   - QoS 2 whose PUBREC is stored: it reached the member, done;
//   - with no room for the returned row even in the reserve: dropped
//     (shares storage_full).

// givenBack is a delivery an ending member gives back to its group.
type givenBack struct {
	group  string
	offset uint64
	size   int64
}

// takeShared takes out of s's list the group deliveries its ending gives
// back, keeping their hold on the log (they change hands, they are not
// released), and counts the QoS 2 ones it drops. Before s's filters are
// dropped. Shard lock held.
func (b *Broker) takeShared(s *session) []givenBack {
	var back []givenBack
	o := &s.owed
	kept := o.entries[:0]
	for _, e := range o.entries {
		if e.share == "" || e.released {
			kept = append(kept, e)
			continue
		}
		if (e.sent || e.maybeSent) && b.sharedQoS(s, e) == 2 {
			b.counters.SharesDroppedMemberEnded.Add(1)
			kept = append(kept, e)
			continue
		}
		o.bytes -= e.size
		if e.sent {
			o.sentBytes -= e.size
		}
		back = append(back, givenBack{e.share, e.offset, e.size})
	}
	clear(o.entries[len(kept):])
	o.entries = kept
	return back
}

// sharedQoS is the QoS entry e went to s at: the message's, capped by s's
// subscription to the group; 0 when the log no longer holds it.
func (b *Broker) sharedQoS(s *session, e owedEntry) uint8 {
	got, err := b.bcast.log.ReadFrom(e.offset, 1, nil)
	if err != nil || len(got) == 0 || got[0].Offset != e.offset {
		return 0
	}
	return min(got[0].QoS, s.filters[e.share].qos)
}

// giveBack hands each delivery back to its group: to a member that can take
// it now (from memory, the log's copy let go), else into the group's backlog
// when a member's session outlives its connection - those are returned, for
// Sessions.End to write - else dropped, counted. After s left its groups.
func (b *Broker) giveBack(s *session, back []givenBack) []store.Returned {
	var returned []store.Returned
	now := b.now()
	for _, x := range back {
		got, err := b.bcast.log.ReadFrom(x.offset, 1, nil)
		if err != nil || len(got) == 0 || got[0].Offset != x.offset {
			b.bcast.unown(x.offset) // released meanwhile: nothing to give
			continue
		}
		m := messageOf(&got[0].Record, now)
		if m == nil {
			b.counters.DeliveriesExpired.Add(1)
			b.bcast.unown(x.offset)
			continue
		}
		b.shares.mu.Lock()
		g := b.shares.groups[x.group]
		switch {
		case g == nil:
			b.shareDropped()
			b.bcast.unown(x.offset)
		case b.handMessage(g, m, delivery.Delivery{QoS: got[0].QoS, Retain: got[0].Retain}, s):
			b.bcast.unown(x.offset)
		case g.durable():
			if j := b.bcast.owe(g.standIn, x.offset, x.size); j >= 0 {
				g.standIn.owed.entries[j].returned = true
				returned = append(returned, store.Returned{Group: x.group, Offset: x.offset})
				// A member that is connected but was full takes it once it can,
				// on the drainer rather than under this session's lock.
				b.queueDrain(g)
			}
		default:
			b.shareDropped()
			b.bcast.unown(x.offset)
		}
		b.shares.mu.Unlock()
	}
	return returned
}

// unreturn takes back out of their groups' backlogs the deliveries a store
// with no room could not keep as returned, counted (shares storage_full).
func (b *Broker) unreturn(returned []store.Returned) {
	b.shares.mu.Lock()
	defer b.shares.mu.Unlock()
	for _, r := range returned {
		b.counters.SharesDroppedStorageFull.Add(1)
		g := b.shares.groups[r.Group]
		if g == nil {
			continue
		}
		if j := g.standIn.owed.find(r.Offset); j >= 0 {
			b.bcast.drop(g.standIn, j)
		}
	}
}
