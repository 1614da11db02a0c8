package broker

import (
	"errors"

	"saguin/codec/topic"
	"saguin/store"
)

// putSession writes s's record before its client is answered: the whole
// record (filters included, whatever an ended session left under the id
// replaced) for a session begun new, the record without its filters for one
// kept - its filters are stored one at a time as they change, so a CONNECT or
// a disconnect of a session holding thousands costs one row. A session the
// store does not hold (accepted with no room, ending with its connection) is
// written whole. A full provider first takes its room from the broadcast log.
// Shard lock held.
func (b *Broker) putSession(sh *shard, s *session, whole bool) error {
	return b.withRoom(sh, "a session's record", func() error {
		if !whole {
			err := b.sessions.Update(s.state())
			if !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		return b.sessions.Put(s.record())
	})
}

// storeFilter writes one filter of s: a SUBSCRIBE writes the filter it adds
// or changes, never the session's whole list. groupCursor, above 0, is a
// shared group's first cursor, kept in the same write. Shard lock held.
func (b *Broker) storeFilter(sh *shard, s *session, filter string, sub subscription, groupCursor uint64) error {
	return b.withRoom(sh, "a subscription", func() error {
		err := b.sessions.Subscribe(s.id, storedSubscription(filter, sub), groupCursor)
		if errors.Is(err, store.ErrNotFound) {
			return b.sessions.Put(s.record())
		}
		return err
	})
}

// state is the session as the store keeps it, without its filters (Update).
func (s *session) state() store.Session {
	return store.Session{ClientID: s.id, Expiry: s.expiry, DisconnectedAt: s.awaySince, ReceiveMaximum: s.receiveMax, Will: s.will}
}

// record is the session as the store keeps it, filters included (Put).
func (s *session) record() store.Session {
	r := s.state()
	if len(s.filters) > 0 {
		r.Subscriptions = make([]store.Subscription, 0, len(s.filters))
		for f, sub := range s.filters {
			r.Subscriptions = append(r.Subscriptions, storedSubscription(f, sub))
		}
	}
	return r
}

// storedSubscription is one filter as the store keeps it; a shared one
// carries its ShareName (what SessionSize charges by) while its group is
// keyed by the whole filter.
func storedSubscription(f string, sub subscription) store.Subscription {
	group, _, _, _ := topic.SplitShared(f)
	return store.Subscription{Filter: f, ShareGroup: group, QoS: sub.qos, NoLocal: sub.noLocal,
		RetainAsPublished: sub.retainAsPublished, RetainHandling: sub.retainHandling, SubscriptionID: sub.id, LogOffset: sub.logOffset}
}
