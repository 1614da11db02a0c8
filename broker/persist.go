package broker

import (
	"fmt"
	"strings"
	"time"

	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/store"
)

// Restore brings back what the session store kept, before any connection is
// served (RFC 0003 "Sessions", "Last Will"):
//
//   - a session that ended with its connection (no expiry) is ended: the stop
//     cut it, and its Will goes with it;
//   - a session whose expiry passed while the broker was down is ended, its
//     Will published first if it carries a due moment;
//   - a session whose client was connected when the broker stopped is away
//     from now, its Will kept with no due moment;
//   - a Will whose due moment passed is published, one still waiting resumes
//     the remainder;
//   - every message in the broadcast log is owed again to each kept session
//     whose cursor is at or below it and whose filters matched it when it was
//     published; a message owed to nobody is released.
func (b *Broker) Restore() error {
	stored, err := b.sessions.All()
	if err != nil {
		return fmt.Errorf("reading the session store: %w", err)
	}
	now := b.now()
	type kept struct {
		s      *session
		cursor uint64
		// leftAt is when its client left as stored: zero for one connected
		// when the broker stopped.
		leftAt time.Time
	}
	var restored []kept
	var due []*session     // kept sessions whose Will falls due at this start
	var expired []*session // sessions that expired while the broker was down
	for i := range stored {
		r := &stored[i]
		s := &session{id: r.ClientID, filters: make(map[string]subscription, len(r.Subscriptions)),
			expiry: r.Expiry, awaySince: r.DisconnectedAt, receiveMax: r.ReceiveMaximum, will: r.Will}
		if max := b.opts.MaxSessionExpiry; max > 0 && s.expiry > max {
			s.expiry = max // the cap as it stands now (RFC 0003 "When the session ends")
			b.counters.SessionExpiryShortened.Add(1)
		}
		if s.awaySince.IsZero() && s.expiry > 0 {
			s.awaySince = now // connected when the broker stopped: away from now
		}
		switch {
		case s.expiry == 0:
			if err := b.sessions.End(s.id, nil); err != nil {
				return fmt.Errorf("ending session %q, which ended with its connection at the stop: %w", s.id, err)
			}
			continue
		case s.expired(now):
			expired = append(expired, s)
			continue
		}
		for _, sub := range r.Subscriptions {
			s.filters[sub.Filter] = subscription{qos: sub.QoS, noLocal: sub.NoLocal, retainAsPublished: sub.RetainAsPublished,
				retainHandling: sub.RetainHandling, id: sub.SubscriptionID, logOffset: sub.LogOffset}
		}
		cursor, ok, err := b.sessions.Cursor(s.id)
		if err != nil {
			return fmt.Errorf("reading session %q's cursor: %w", s.id, err)
		}
		if !ok {
			// None stored yet (a provider keeps one from the first
			// acknowledgement): what its filters reach is bounded by when
			// each was granted (owedAtPublish).
			cursor = 0
		}
		restored = append(restored, kept{s, cursor, r.DisconnectedAt})
		if s.will != nil && !s.will.DueAt.IsZero() && !now.Before(s.will.DueAt) {
			due = append(due, s)
		}
	}
	for _, k := range restored {
		sh := b.shard(k.s.id)
		sh.mu.Lock()
		sh.sessions[k.s.id] = k.s
		b.counters.Subscriptions.Add(int64(len(k.s.filters)))
		for f, sub := range k.s.filters {
			if _, inner, shared, _ := topic.SplitShared(f); shared {
				b.joinShare(f, inner, k.s, sub)
			} else {
				b.subs.add(f, k.s, sub)
			}
		}
		sh.mu.Unlock()
	}
	// Exactly-once publishes held for a session that came back go with it;
	// one whose session did not is dropped and counted.
	held, err := b.bcast.log.Held()
	if err != nil {
		return fmt.Errorf("reading the held exactly-once publishes: %w", err)
	}
	for _, h := range held {
		sh := b.shard(h.ClientID)
		sh.mu.Lock()
		if s := sh.sessions[h.ClientID]; s != nil {
			if s.holds == nil {
				s.holds = make(map[uint16]heldPublish)
			}
			s.holds[h.PacketID] = heldPublish{at: h.HeldAt, rec: h.Record}
			b.counters.QoS2Held.Add(1)
		} else if _, err := b.bcast.log.DropHeld(h.ClientID, h.PacketID); err != nil {
			sh.mu.Unlock()
			return fmt.Errorf("dropping the held publishes of session %q, which did not come back: %w", h.ClientID, err)
		} else {
			b.counters.QoS2Abandoned.Add(1)
		}
		sh.mu.Unlock()
	}
	groups, err := b.restoreBacklogs()
	if err != nil {
		return fmt.Errorf("reading the shared groups' cursors: %w", err)
	}
	// Each kept session's stored window: the QoS 2 deliveries whose PUBREC
	// was stored, and what shared groups handed it - owed to it again, the
	// group's cursor having passed them.
	windows := make(map[*session][]store.InFlight, len(restored))
	handed := map[uint64][]*session{}
	for _, k := range restored {
		window, err := b.sessions.InFlight(k.s.id)
		if err != nil {
			return fmt.Errorf("reading session %q's window: %w", k.s.id, err)
		}
		windows[k.s] = window
		for _, f := range window {
			if f.ShareGroup != "" {
				handed[f.Offset] = append(handed[f.Offset], k.s)
			}
		}
	}
	givenBack, err := b.expiredGiveBack(expired)
	if err != nil {
		return err
	}
	returnedBy := map[*session][]store.Returned{}
	// Owed messages, before any Will is published into the log.
	var batch []store.BroadcastEntry
	var unowed []uint64
	from := b.bcast.log.Floor()
	for {
		got, err := b.bcast.log.ReadFrom(from, 256, batch[:0])
		if err != nil {
			return fmt.Errorf("reading the broadcast log: %w", err)
		}
		if len(got) == 0 {
			break
		}
		for i := range got {
			e := &got[i]
			size := store.RecordSize(&e.Record)
			owners := 0
			for _, k := range restored {
				if k.cursor <= e.Offset && k.s.owes(e) {
					// What was written while its client was connected may
					// have been sent: the re-send says DUP.
					maybe := k.leftAt.IsZero() || e.Time.Before(k.leftAt)
					k.s.owed.entries = append(k.s.owed.entries, owedEntry{offset: e.Offset, size: size, maybeSent: maybe})
					k.s.owed.bytes += size
					owners++
				}
			}
			for _, s := range handed[e.Offset] {
				if n := len(s.owed.entries); n > 0 && s.owed.entries[n-1].offset == e.Offset {
					continue // its own filter owes it too: one entry per offset
				}
				share := ""
				for _, f := range windows[s] {
					if f.Offset == e.Offset && f.ShareGroup != "" {
						share = f.ShareGroup
					}
				}
				s.owed.entries = append(s.owed.entries, owedEntry{offset: e.Offset, size: size, maybeSent: true, share: share})
				s.owed.bytes += size
				owners++
			}
			for _, x := range givenBack[e.Offset] {
				o := &x.g.standIn.owed
				if n := len(o.entries); n > 0 && o.entries[n-1].offset == e.Offset {
					continue // the group owes it still: nothing to give back
				}
				o.entries = append(o.entries, owedEntry{offset: e.Offset, size: size, returned: true})
				o.bytes += size
				owners++
				returnedBy[x.s] = append(returnedBy[x.s], store.Returned{Group: x.g.key, Offset: e.Offset})
			}
			for g, rg := range groups {
				given := rg.returned[e.Offset]
				if (given || rg.cursor <= e.Offset) && e.QoS > 0 && e.OwedTo == "" && topic.Match(g.filter, e.Topic) {
					g.standIn.owed.entries = append(g.standIn.owed.entries, owedEntry{offset: e.Offset, size: size, returned: given})
					g.standIn.owed.bytes += size
					b.counters.SharesHeld.Add(1)
					owners++
					delete(rg.returned, e.Offset)
				}
			}
			b.counters.LogMessages.Add(1)
			b.counters.LogBytes.Add(size)
			if owners == 0 {
				unowed = append(unowed, e.Offset)
			} else {
				b.bcast.refs[e.Offset] = owners
			}
		}
		batch = got
		from = got[len(got)-1].Offset + 1
	}
	// A returned delivery the log no longer holds is owed to nobody.
	for g, rg := range groups {
		for off := range rg.returned {
			b.takeReturned(g.key, off)
		}
	}
	if len(unowed) > 0 {
		b.bcast.mu.Lock()
		b.bcast.unowed = append(b.bcast.unowed, unowed...)
		b.bcast.mu.Unlock()
		b.bcast.commit()
	}
	// A QoS 2 delivery whose PUBREC was stored resumes at its PUBREL.
	for _, k := range restored {
		for _, f := range windows[k.s] {
			if i := k.s.owed.find(f.Offset); i >= 0 && f.Released {
				k.s.owed.entries[i].released, k.s.owed.entries[i].pid = true, f.PacketID
				k.s.owed.entries[i].maybeSent = true
			}
		}
	}
	for _, k := range restored {
		sh := b.shard(k.s.id)
		sh.mu.Lock()
		if k.s.will != nil && !k.s.will.DueAt.IsZero() && !now.Before(k.s.will.DueAt) {
			k.s.will = nil
		}
		b.armExpiry(sh, k.s)
		sh.mu.Unlock()
	}
	for _, s := range expired {
		b.counters.SessionsExpiredWhileStopped.Add(1)
		if s.will != nil && !s.will.DueAt.IsZero() {
			b.publishWill(s.id, s.will, WillStart) // before the record goes: at least once
		}
		err := b.sessions.End(s.id, returnedBy[s])
		if store.IsFull(err) && len(returnedBy[s]) > 0 {
			b.unreturn(returnedBy[s]) // no room even in the reserve: dropped, counted
			err = b.sessions.End(s.id, nil)
		}
		if err != nil {
			return fmt.Errorf("ending session %q, which expired while the broker was down: %w", s.id, err)
		}
	}
	for _, s := range due {
		b.publishWill(s.id, stored[indexOf(stored, s.id)].Will, WillStart)
		sh := b.shard(s.id)
		sh.mu.Lock()
		if err := b.putSession(sh, s, false); err != nil {
			b.storageFailed("removing a Will published at the start", s.id, err)
		}
		sh.mu.Unlock()
	}
	b.counters.SessionsRestored.Add(uint64(len(restored)))
	if len(stored) > 0 {
		b.log.Info("sessions restored", "kept", len(restored), "ended", len(stored)-len(restored), "expired", len(expired),
			"wills_published", len(due), "broadcast_log_messages", b.bcast.log.Len())
	}
	return nil
}

// indexOf finds a client id in the store's ordered list.
func indexOf(all []store.Session, id string) int {
	for i := range all {
		if all[i].ClientID == id {
			return i
		}
	}
	return -1
}

// owes reports whether s is owed log entry e: a retained value kept for one
// session is owed to that session alone; anything else as owedAtPublish says.
func (s *session) owes(e *store.BroadcastEntry) bool {
	if e.OwedTo != "" {
		return e.OwedTo == s.id
	}
	return s.owedAtPublish(&e.Record, e.Offset)
}

// owedAtPublish reports whether one of s's filters matched r when it was
// written at offset: a filter granted after it does not reach back.
func (s *session) owedAtPublish(r *store.Record, offset uint64) bool {
	for f, sub := range s.filters {
		if sub.logOffset > offset || sub.qos == 0 || r.QoS == 0 || strings.HasPrefix(f, topic.SharePrefix) {
			continue
		}
		if sub.noLocal && r.ClientID == s.id {
			continue
		}
		if topic.Match(f, r.Topic) {
			return true
		}
	}
	return false
}

// handedBack is a delivery a group handed a session that expired while the
// broker was down, to be given back to the group.
type handedBack struct {
	s *session
	g *shareGroup
}

// expiredGiveBack reads the windows of the sessions that expired while the
// broker was down for what their groups handed them (RFC 0003 "Broadcast":
// any ending gives it back): a QoS 1 delivery goes back to a group a member
// of which outlives its connection, by offset; a QoS 2 one with no PUBREC is
// dropped, counted member_ended; one to a group with no such member is
// dropped, counted (the log releases it, owed to nobody).
func (b *Broker) expiredGiveBack(expired []*session) (map[uint64][]handedBack, error) {
	out := map[uint64][]handedBack{}
	for _, s := range expired {
		window, err := b.sessions.InFlight(s.id)
		if err != nil {
			return nil, fmt.Errorf("reading session %q's window: %w", s.id, err)
		}
		for _, f := range window {
			if f.ShareGroup == "" || f.Released {
				continue
			}
			if f.QoS == 2 {
				b.counters.SharesDroppedMemberEnded.Add(1)
				continue
			}
			b.shares.mu.Lock()
			g := b.shares.groups[f.ShareGroup]
			keep := g != nil && g.durable()
			b.shares.mu.Unlock()
			if !keep {
				b.shareDropped()
				continue
			}
			out[f.Offset] = append(out[f.Offset], handedBack{s, g})
		}
	}
	return out, nil
}
