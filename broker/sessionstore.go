package broker

import (
	"errors"
	"slices"

	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/store"
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
		return b.putRecord(s)
	})
}

// putRecord writes s's whole record, replacing whatever an ended session
// left under its id. A session that ends with its connection and holds no
// filter and no Will has nothing a store keeps for it - nothing to resume,
// nothing the provider charges (RFC 0002 counts a session's memory "while
// its client is away", and this one never is) - so the write only removes
// those leftovers (End) and stores no record: a memory provider then holds
// nothing for the client, where a record and its map entry were 190 bytes
// of every clean connection (docs/netloop.md, "Where an idle connection's
// bytes go"). Its first filter or a Will writes the record whole (storeFilter
// and Update's fallback come here). Shard lock held, or the write is the
// id's queued one.
func (b *Broker) putRecord(s *session) error {
	if s.expiry == 0 && s.will == nil && len(s.filters) == 0 {
		if err := b.sessions.End(s.id, nil); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return nil
	}
	return b.sessions.Put(s.record())
}

// storeState writes the record of s as it stands now, without its filters,
// where no client waits for it (a disconnect, a published Will's removal):
// queued behind the id's earlier such writes (storeLater). A store that does
// not hold the record is given it whole, read under the shard lock when the
// write is made. stored, when not nil, is called once the write is made: its
// log line says what a kill -9 after it can count on. Shard lock held.
func (b *Broker) storeState(sh *shard, s *session, what string, stored func()) {
	st := s.state()
	if st.Will != nil {
		w := *st.Will // the write may run after s.will changes
		st.Will = &w
	}
	b.storeLater(sh, s.id, func(held *shard) {
		err := b.withRoom(held, "a session's record", func() error { return b.sessions.Update(st) })
		if errors.Is(err, store.ErrNotFound) {
			err = b.withRoom(held, "a session's record", func() error { return b.putWhole(held, sh, s) })
		}
		if err != nil {
			b.storageFailed(what, s.id, err)
		} else if stored != nil {
			stored()
		}
	})
}

// putWhole writes s's whole record, taking its shard's lock to read it unless
// the caller holds it (held == sh). A session ended meanwhile is left ended.
func (b *Broker) putWhole(held, sh *shard, s *session) error {
	if held != sh {
		sh.mu.Lock()
		defer sh.mu.Unlock()
	}
	if s.ended {
		return nil
	}
	return b.putRecord(s)
}

// storeCursor writes a detached session's cursor and forgets its completed
// QoS 2 entries (backlog.detach).
func (b *Broker) storeCursor(id string, done []store.InFlightKey, cursor uint64) {
	if err := b.sessions.Ack(id, done, cursor); err != nil && !errors.Is(err, store.ErrNotFound) {
		b.storageFailed("storing a session's cursor", id, err)
	}
}

// storeEnd writes a session's ending with the deliveries it gives back to its
// groups (endSession); with no room for those even in the reserve they are
// dropped, counted, and the session ended without them.
func (b *Broker) storeEnd(id string, returned []store.Returned) {
	err := b.sessions.End(id, returned)
	if store.IsFull(err) && len(returned) > 0 {
		b.unreturn(returned)
		err = b.sessions.End(id, nil)
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		b.storageFailed("ending a session", id, err)
	}
}

// storeFilter writes one filter of s before s holds it: a SUBSCRIBE writes
// the filter it adds or changes, never the session's whole list. groupCursor,
// above 0, is a shared group's first cursor, kept in the same write. A store
// that does not hold the session is given it whole, the filter with it.
// Shard lock held; let go meanwhile on a disk provider (storeNow).
func (b *Broker) storeFilter(sh *shard, s *session, filter string, sub subscription, groupCursor uint64) error {
	return b.storeNow(sh, s.id, func(held *shard) error {
		return b.withRoom(held, "a subscription", func() error {
			err := b.sessions.Subscribe(s.id, storedSubscription(filter, sub), groupCursor)
			if !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if held != sh {
				sh.mu.Lock()
				defer sh.mu.Unlock()
			}
			r := s.record()
			r.Subscriptions = slices.DeleteFunc(r.Subscriptions, func(x store.Subscription) bool { return x.Filter == filter })
			r.Subscriptions = append(r.Subscriptions, storedSubscription(filter, sub))
			return b.sessions.Put(r)
		})
	})
}

// state is the session as the store keeps it, without its filters (Update).
func (s *session) state() store.Session {
	return store.Session{ClientID: s.id, Expiry: s.expiry, DisconnectedAt: s.away(), ReceiveMaximum: s.receiveMax, Will: s.will}
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
	st := store.Subscription{Filter: f, ShareGroup: group, QoS: sub.qos, NoLocal: sub.noLocal,
		RetainAsPublished: sub.retainAsPublished, RetainHandling: sub.retainHandling, SubscriptionID: sub.id, LogOffset: sub.logOffset}
	if sub.part != nil {
		// Kept with the filter, so a restart serves the slice it declared
		// (RFC 0003 "Sessions": subscriptions are restored with their
		// partition declarations).
		st.Partition = sub.part.Encode()
	}
	return st
}
