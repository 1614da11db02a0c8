package broker

import (
	"fmt"
	"strings"
	"time"

	channelrules "github.com/saguin-edge/saguin/broker/channel"
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
//
// It runs in phases, each a pass over one thing the store holds, so that a
// start costs in proportion to the sessions plus the log plus what the log
// owes - never the sessions times the log: a log message finds the sessions
// its topic reaches through the subscription index the first phases filled,
// as a publish does.
func (b *Broker) Restore() error {
	if err := b.restoreEngines(); err != nil {
		return err
	}
	r := &restoring{now: b.now()}
	if err := b.restoreRecords(r); err != nil {
		return err
	}
	b.restoreIndex(r)
	if err := b.restoreHolds(); err != nil {
		return err
	}
	// Broadcast's log, owed by the sessions' records and windows: after
	// them, and before any Will is published into it.
	b.broadcast.restore = r
	err := b.broadcast.Restore()
	returnedBy := b.broadcast.returnedBy
	b.broadcast.restore, b.broadcast.returnedBy = nil, nil
	if err != nil {
		return err
	}
	b.restoreEnds(r)
	if err := b.restoreExpired(r, returnedBy); err != nil {
		return err
	}
	refused := b.resubscribeChannels(r)
	b.restoreWills(r)
	b.counters.SessionsRestored.Add(uint64(len(r.kept) - refused))
	if r.stored > 0 {
		b.log.Info("sessions restored", "kept", len(r.kept)-refused, "ended", r.stored-len(r.kept), "expired", len(r.expired), "refused", refused,
			"wills_published", len(r.due), "broadcast_log_messages", b.bcast.log.Len())
	}
	return nil
}

// restoring is what Restore's phases hand one another.
type restoring struct {
	now    time.Time
	stored int // session records read
	kept   []kept
	// keptAt finds a kept session's place in kept, for the log's matches.
	keptAt map[*session]int
	byID   map[string]int
	// due are the kept sessions whose Will falls due at this start, with
	// the Will as stored (the session's own is taken off it meanwhile).
	due []dueWill
	// expired are the sessions that expired while the broker was down.
	expired []*session
	// windows are the kept sessions' stored windows; handed what shared
	// groups handed them, by offset.
	windows map[*session][]store.InFlight
	handed  map[uint64][]handedTo
}

// kept is a session restored, with what its record said.
type kept struct {
	s      *session
	cursor uint64
	// leftAt is when its client left as stored: zero for one connected
	// when the broker stopped.
	leftAt time.Time
}

type dueWill struct {
	s    *session
	will *store.Will
}

// handedTo is a delivery a shared group handed a kept session, as its
// stored window says.
type handedTo struct {
	s     *session
	group string
}

// restoreRecords reads every session record: the ones that ended with
// their connection are ended now, the expired set aside, the rest kept with
// their cursors.
func (b *Broker) restoreRecords(r *restoring) error {
	stored, err := b.sessions.All()
	if err != nil {
		return fmt.Errorf("reading the session store: %w", err)
	}
	r.stored = len(stored)
	r.keptAt = make(map[*session]int, len(stored))
	r.byID = make(map[string]int, len(stored))
	for i := range stored {
		rec := &stored[i]
		s := &session{id: rec.ClientID, filters: make(map[string]subscription, len(rec.Subscriptions)),
			expiry: rec.Expiry, receiveMax: rec.ReceiveMaximum, will: rec.Will}
		s.awayAt(rec.DisconnectedAt)
		if max := b.opts.MaxSessionExpiry; max > 0 && s.expiry > max {
			s.expiry = max // the cap as it stands now (RFC 0003 "When the session ends")
			b.counters.SessionExpiryShortened.Add(1)
		}
		if s.awaySince == 0 && s.expiry > 0 {
			s.awayAt(r.now) // connected when the broker stopped: away from now
		}
		switch {
		case s.expiry == 0:
			if err := b.sessions.End(s.id, nil); err != nil {
				return fmt.Errorf("ending session %q, which ended with its connection at the stop: %w", s.id, err)
			}
			continue
		case s.expired(r.now):
			r.expired = append(r.expired, s)
			continue
		}
		for _, sub := range rec.Subscriptions {
			x := subscription{qos: sub.QoS, noLocal: sub.NoLocal, retainAsPublished: sub.RetainAsPublished,
				retainHandling: sub.RetainHandling, id: sub.SubscriptionID, logOffset: sub.LogOffset, read: newReadGrant(sub.Filter)}
			part, err := channelrules.DecodePartition(sub.Partition)
			if err != nil {
				return fmt.Errorf("session %q's subscription %q: %w", s.id, sub.Filter, err)
			}
			if part.Declared() {
				x.part = &part
			}
			s.filters[sub.Filter] = x
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
		r.keptAt[s], r.byID[s.id] = len(r.kept), len(r.kept)
		r.kept = append(r.kept, kept{s, cursor, rec.DisconnectedAt})
		if s.will != nil && !s.will.DueAt.IsZero() && !r.now.Before(s.will.DueAt) {
			r.due = append(r.due, dueWill{s, s.will})
		}
	}
	return nil
}

// restoreIndex puts the kept sessions in their shards and hands broadcast
// their filters, restoring (its subscription index and shared groups).
func (b *Broker) restoreIndex(r *restoring) {
	for _, k := range r.kept {
		sh := b.shard(k.s.id)
		sh.mu.Lock()
		sh.sessions[k.s.id] = k.s
		b.counters.Subscriptions.Add(int64(len(k.s.filters)))
		for f, sub := range k.s.filters {
			b.broadcast.Subscribe(restoringSession{k.s}, filterOf(f, sub, false, nil))
		}
		sh.mu.Unlock()
	}
}

// restoreWindows reads each kept session's stored window: the QoS 2
// deliveries whose PUBREC was stored, and what shared groups handed it -
// owed to it again, the group's cursor having passed them.
func (b *Broker) restoreWindows(r *restoring) error {
	r.windows = make(map[*session][]store.InFlight, len(r.kept))
	r.handed = map[uint64][]handedTo{}
	for _, k := range r.kept {
		window, err := b.sessions.InFlight(k.s.id)
		if err != nil {
			return fmt.Errorf("reading session %q's window: %w", k.s.id, err)
		}
		r.windows[k.s] = window
		for _, f := range window {
			if f.ShareGroup != "" {
				r.handed[f.Offset] = append(r.handed[f.Offset], handedTo{k.s, f.ShareGroup})
			}
		}
	}
	return nil
}

// restoreLog reads the broadcast log once, in offset order, and makes each
// message owed again to what owes it: the kept sessions at or below it whose
// filters matched it when it was written (found through the index), the
// one a retained value was kept for, the members a group handed it, the
// groups whose backlog holds it and those an expired member gives it back
// to. A message owed to nobody is released. It returns what each expired
// session gives back, for its ending.
func (b *Broker) restoreLog(r *restoring, groups map[*shareGroup]*restoredGroup, givenBack map[uint64][]handedBack) (map[*session][]store.Returned, error) {
	returnedBy := map[*session][]store.Returned{}
	// marked[i] is one past the offset kept session i was last made to owe:
	// a message two of its filters match is owed once.
	marked := make([]uint64, len(r.kept))
	var batch []store.BroadcastEntry
	var unowed []uint64
	from := b.bcast.log.Floor()
	for {
		got, err := b.bcast.log.ReadFrom(from, 256, batch[:0])
		if err != nil {
			return nil, fmt.Errorf("reading the broadcast log: %w", err)
		}
		if len(got) == 0 {
			break
		}
		for i := range got {
			e := &got[i]
			size := store.RecordSize(&e.Record)
			owners := 0
			owe := func(i int) {
				k := &r.kept[i]
				if k.cursor > e.Offset || marked[i] == e.Offset+1 {
					return
				}
				marked[i] = e.Offset + 1
				// What was written while its client was connected may have
				// been sent: the re-send says DUP.
				maybe := k.leftAt.IsZero() || e.Time.Before(k.leftAt)
				k.s.owed.entries = append(k.s.owed.entries, owedEntry{offset: e.Offset, size: size, maybeSent: maybe})
				k.s.owed.bytes += size
				owners++
			}
			switch {
			case e.OwedTo != "":
				if i, ok := r.byID[e.OwedTo]; ok {
					owe(i)
				}
			case e.QoS > 0:
				// As owedAtPublish says, for each filter the index finds.
				b.subs.match([]byte(e.Topic), func(s *session, sub subscription) {
					i, ok := r.keptAt[s]
					if !ok || sub.logOffset > e.Offset || sub.qos == 0 || sub.noLocal && e.ClientID == s.id ||
						sub.part != nil && !sub.part.Accepts(e.Topic) {
						return
					}
					owe(i)
				})
			}
			for _, h := range r.handed[e.Offset] {
				s := h.s
				if n := len(s.owed.entries); n > 0 && s.owed.entries[n-1].offset == e.Offset {
					continue // its own filter owes it too: one entry per offset
				}
				s.owed.entries = append(s.owed.entries, owedEntry{offset: e.Offset, size: size, maybeSent: true, share: h.group})
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
	for _, k := range r.kept {
		for _, f := range r.windows[k.s] {
			if i := k.s.owed.find(f.Offset); i >= 0 && f.Released {
				k.s.owed.entries[i].released, k.s.owed.entries[i].pid = true, f.PacketID
				k.s.owed.entries[i].maybeSent = true
			}
		}
	}
	return returnedBy, nil
}

// restoreEnds arms each kept session's expiry, a Will falling due now
// taken off it (restoreWills publishes it).
func (b *Broker) restoreEnds(r *restoring) {
	for _, k := range r.kept {
		sh := b.shard(k.s.id)
		sh.mu.Lock()
		if k.s.will != nil && !k.s.will.DueAt.IsZero() && !r.now.Before(k.s.will.DueAt) {
			k.s.will = nil
		}
		b.armExpiry(sh, k.s)
		sh.mu.Unlock()
	}
}

// restoreExpired ends the sessions that expired while the broker was down,
// each Will with a due moment published first (at least once), giving back
// what their groups handed them.
func (b *Broker) restoreExpired(r *restoring, returnedBy map[*session][]store.Returned) error {
	for _, s := range r.expired {
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
	return nil
}

// restoreWills publishes each kept session's Will that fell due while the
// broker was down, then rewrites its record without it (at least once
// across a crash).
func (b *Broker) restoreWills(r *restoring) {
	for _, d := range r.due {
		b.publishWill(d.s.id, d.will, WillStart)
		sh := b.shard(d.s.id)
		sh.mu.Lock()
		if err := b.putSession(sh, d.s, false); err != nil {
			b.storageFailed("removing a Will published at the start", d.s.id, err)
		}
		sh.mu.Unlock()
	}
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
		if sub.part != nil && !sub.part.Accepts(r.Topic) {
			continue // outside its declared slice (saguin-filter), as at the publish
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
