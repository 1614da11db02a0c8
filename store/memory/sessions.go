package memory

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// sessState is one stored session with its window and broadcast-log cursor.
type sessState struct {
	s         store.Session
	inflight  []store.InFlight
	cursor    uint64
	hasCursor bool
	size      int64
}

// groupState is a shared group's cursor and the deliveries returned to it.
// A cursor of 0 is none yet (log offsets start at 1): a group may hold
// returned deliveries before a member that outlives its connection gives it
// a cursor.
type groupState struct {
	cursor   uint64
	returned []uint64
}

// sessionStore keeps sessions, shared groups and the broadcast log. Its lock
// is taken before the log's when both are needed.
type sessionStore struct {
	p   *Provider
	log *bcastLog

	mu       sync.Mutex
	sessions map[string]*sessState
	groups   map[string]*groupState
	// members counts the stored sessions holding each shared filter (a
	// group's key): the group goes when it reaches 0.
	members map[string]int
}

func newSessionStore(p *Provider) *sessionStore {
	return &sessionStore{p: p, log: newBcastLog(p), sessions: map[string]*sessState{}, groups: map[string]*groupState{}, members: map[string]int{}}
}

// sessionsState is the sessions and the log as a snapshot holds them.
type sessionsState struct {
	log      channelData // records (with bcast meta), holds; next/floor
	meta     []bcastMeta // parallel to log.records
	cursors  map[string]uint64
	sessions []sessionData
	groups   map[string]*groupState
	// writtenAt is when saguin.broadcast was written (its header);
	// staleHolds how many held broadcasts were abandoned because it predates
	// the last shutdown.
	writtenAt  time.Time
	staleHolds int
}

type sessionData struct {
	s        store.Session
	inflight []store.InFlight
}

type bcastMeta struct {
	forShares bool
	owedTo    string
}

// restore loads sessions and their log, applying the checks notes-0004 gives
// for reading the pair: an in-flight entry behind its session's cursor is
// dropped unless a shared group handed it over; one at or beyond the log's
// next, or a window larger than its Receive Maximum, is refused.
func (s *sessionStore) restore(st *sessionsState) error {
	s.log.restore(st)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sd := range st.sessions {
		ss := &sessState{s: sd.s}
		if c, ok := st.cursors[sd.s.ClientID]; ok {
			ss.cursor, ss.hasCursor = c, true
		}
		if sd.s.ReceiveMaximum > 0 && len(sd.inflight) > int(sd.s.ReceiveMaximum) {
			return fmt.Errorf("session %q: %d messages in flight, window %d: %w", sd.s.ClientID, len(sd.inflight), sd.s.ReceiveMaximum, store.ErrCorrupt)
		}
		for _, f := range sd.inflight {
			if f.Offset >= st.log.next {
				return fmt.Errorf("session %q: in-flight offset %d is at or beyond the broadcast log's next %d: %w", sd.s.ClientID, f.Offset, st.log.next, store.ErrCorrupt)
			}
			if ss.hasCursor && f.Offset < ss.cursor && f.ShareGroup == "" {
				continue
			}
			ss.inflight = append(ss.inflight, f)
		}
		sortSubscriptions(ss.s.Subscriptions)
		ss.size = store.SessionSize(&ss.s)
		s.p.chargeRelief(ss.size)
		s.sessions[sd.s.ClientID] = ss
		s.joinLocked(ss.s.Subscriptions, 1)
	}
	// A group no kept session holds is not restored: nothing can collect
	// its backlog (RFC 0003 "Sessions": dropped at start if no member is
	// left).
	for g, gs := range st.groups {
		if s.members[g] > 0 {
			s.groups[g] = gs
		}
	}
	return nil
}

// sortSubscriptions orders a session's filters as every read returns them.
func sortSubscriptions(subs []store.Subscription) {
	sort.Slice(subs, func(i, j int) bool { return subs[i].Filter < subs[j].Filter })
}

// joinLocked counts (by +1) or uncounts (by -1) the shared filters in subs;
// a group whose last holder goes is dropped with its returned deliveries.
func (s *sessionStore) joinLocked(subs []store.Subscription, by int) {
	for i := range subs {
		if subs[i].ShareGroup == "" {
			continue
		}
		s.memberLocked(subs[i].Filter, by)
	}
}

func (s *sessionStore) memberLocked(group string, by int) {
	n := s.members[group] + by
	if n > 0 {
		s.members[group] = n
		return
	}
	delete(s.members, group)
	delete(s.groups, group)
}

// bytes is what the sessions count against the provider.
func (s *sessionStore) bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, ss := range s.sessions {
		n += ss.size
	}
	return n
}

// Put implements store.Sessions. The subscriptions are copied: the store
// keeps them in filter order and changes them one at a time.
func (s *sessionStore) Put(sess store.Session) error {
	sess.Subscriptions = append([]store.Subscription(nil), sess.Subscriptions...)
	sortSubscriptions(sess.Subscriptions)
	size := store.SessionSize(&sess)
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[sess.ClientID]
	var old int64
	if ok {
		old = ss.size
	}
	if err := s.rechargeLocked(sess.ClientID, old, size); err != nil {
		return err
	}
	if !ok {
		ss = &sessState{cursor: s.log.Next(), hasCursor: true}
		s.sessions[sess.ClientID] = ss
	}
	// Counted in before the old ones are counted out, so a group both hold
	// is never dropped in between.
	s.joinLocked(sess.Subscriptions, 1)
	s.joinLocked(ss.s.Subscriptions, -1)
	ss.s = sess
	ss.size = size
	return nil
}

// rechargeLocked moves the provider's count from old to size: a rise asks
// for room (ErrProviderFull), a fall gives it back.
func (s *sessionStore) rechargeLocked(clientID string, old, size int64) error {
	if delta := size - old; delta > 0 {
		if err := s.p.charge(delta); err != nil {
			return fmt.Errorf("session %q: %w", clientID, err)
		}
	} else {
		s.p.refund(-delta)
	}
	return nil
}

// Update implements store.Sessions.
func (s *sessionStore) Update(sess store.Session) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[sess.ClientID]
	if !ok {
		return fmt.Errorf("session %q: %w", sess.ClientID, store.ErrNotFound)
	}
	size := ss.size - store.WillSize(ss.s.Will) + store.WillSize(sess.Will)
	if err := s.rechargeLocked(sess.ClientID, ss.size, size); err != nil {
		return err
	}
	ss.s.Expiry, ss.s.DisconnectedAt, ss.s.ReceiveMaximum, ss.s.Will = sess.Expiry, sess.DisconnectedAt, sess.ReceiveMaximum, sess.Will
	ss.size = size
	return nil
}

// Subscribe implements store.Sessions: one filter placed in order, charged
// its own size.
func (s *sessionStore) Subscribe(clientID string, sub store.Subscription, groupCursor uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[clientID]
	if !ok {
		return fmt.Errorf("session %q: %w", clientID, store.ErrNotFound)
	}
	subs := ss.s.Subscriptions
	i := sort.Search(len(subs), func(i int) bool { return subs[i].Filter >= sub.Filter })
	replaces := i < len(subs) && subs[i].Filter == sub.Filter
	var old int64
	if replaces {
		old = store.SubscriptionSize(&subs[i])
	}
	size := ss.size - old + store.SubscriptionSize(&sub)
	if err := s.rechargeLocked(clientID, ss.size, size); err != nil {
		return err
	}
	ss.size = size
	if replaces {
		subs[i] = sub // the same filter: the same group, its holder already counted
	} else {
		subs = append(subs, store.Subscription{})
		copy(subs[i+1:], subs[i:])
		subs[i] = sub
		ss.s.Subscriptions = subs
		s.joinLocked(subs[i:i+1], 1)
	}
	if sub.ShareGroup != "" && groupCursor > 0 {
		if g := s.groups[sub.Filter]; g == nil {
			s.groups[sub.Filter] = &groupState{cursor: groupCursor}
		} else if g.cursor == 0 {
			g.cursor = groupCursor
		}
	}
	return nil
}

// Unsubscribe implements store.Sessions.
func (s *sessionStore) Unsubscribe(clientID, filter string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[clientID]
	if !ok {
		return false, fmt.Errorf("session %q: %w", clientID, store.ErrNotFound)
	}
	subs := ss.s.Subscriptions
	i := sort.Search(len(subs), func(i int) bool { return subs[i].Filter >= filter })
	if i == len(subs) || subs[i].Filter != filter {
		return false, nil
	}
	size := store.SubscriptionSize(&subs[i])
	s.joinLocked(subs[i:i+1], -1)
	copy(subs[i:], subs[i+1:])
	subs[len(subs)-1] = store.Subscription{}
	ss.s.Subscriptions = subs[:len(subs)-1]
	ss.size -= size
	s.p.refund(size)
	return true, nil
}

// copied is the session with a subscription list of its own: the store
// changes its list in place, one filter at a time.
func (ss *sessState) copied() store.Session {
	out := ss.s
	out.Subscriptions = append([]store.Subscription(nil), ss.s.Subscriptions...)
	return out
}

// Get implements store.Sessions.
func (s *sessionStore) Get(clientID string) (store.Session, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[clientID]
	if !ok {
		return store.Session{}, false, nil
	}
	return ss.copied(), true, nil
}

// All implements store.Sessions.
func (s *sessionStore) All() ([]store.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]store.Session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		out = append(out, ss.copied())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ClientID < out[j].ClientID })
	return out, nil
}

// SetDisconnected implements store.Sessions.
func (s *sessionStore) SetDisconnected(clientID string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[clientID]
	if !ok {
		return fmt.Errorf("session %q: %w", clientID, store.ErrNotFound)
	}
	ss.s.DisconnectedAt = at
	return nil
}

// End implements store.Sessions.
func (s *sessionStore) End(clientID string, returned []store.Returned) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[clientID]
	if !ok {
		return fmt.Errorf("session %q: %w", clientID, store.ErrNotFound)
	}
	delete(s.sessions, clientID)
	s.p.refund(ss.size)
	for _, r := range returned {
		if s.members[r.Group] == 0 {
			continue // a group nobody holds keeps nothing
		}
		g := s.groups[r.Group]
		if g == nil {
			g = &groupState{}
			s.groups[r.Group] = g
		}
		i := sort.Search(len(g.returned), func(i int) bool { return g.returned[i] >= r.Offset })
		if i < len(g.returned) && g.returned[i] == r.Offset {
			continue
		}
		g.returned = append(g.returned, 0)
		copy(g.returned[i+1:], g.returned[i:])
		g.returned[i] = r.Offset
	}
	// A group leaves with the last session holding its filter.
	s.joinLocked(ss.s.Subscriptions, -1)
	return nil
}

// InFlight implements store.Sessions.
func (s *sessionStore) InFlight(clientID string) ([]store.InFlight, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[clientID]
	if !ok {
		return nil, fmt.Errorf("session %q: %w", clientID, store.ErrNotFound)
	}
	return append([]store.InFlight(nil), ss.inflight...), nil
}

// AddInFlight implements store.Sessions.
func (s *sessionStore) AddInFlight(clientID string, entries []store.InFlight) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[clientID]
	if !ok {
		return fmt.Errorf("session %q: %w", clientID, store.ErrNotFound)
	}
	// What a load would refuse is refused here, so a running broker can never
	// write a snapshot its next start rejects.
	if rm := int(ss.s.ReceiveMaximum); rm > 0 && len(ss.inflight)+len(entries) > rm {
		return fmt.Errorf("session %q: %d in flight would pass its window of %d", clientID, len(ss.inflight)+len(entries), rm)
	}
	next := s.log.Next()
	for _, f := range entries {
		if f.Offset >= next {
			return fmt.Errorf("session %q: in-flight offset %d is at or beyond the broadcast log's next %d", clientID, f.Offset, next)
		}
	}
	ss.inflight = append(ss.inflight, entries...)
	sort.SliceStable(ss.inflight, func(i, j int) bool { return ss.inflight[i].Offset < ss.inflight[j].Offset })
	return nil
}

// MarkReleased implements store.Sessions.
func (s *sessionStore) MarkReleased(clientID string, key store.InFlightKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[clientID]
	if !ok {
		return fmt.Errorf("session %q: %w", clientID, store.ErrNotFound)
	}
	for i := range ss.inflight {
		if ss.inflight[i].PacketID == key.PacketID && ss.inflight[i].Offset == key.Offset {
			ss.inflight[i].Released = true
			return nil
		}
	}
	return fmt.Errorf("session %q: in-flight %d@%d: %w", clientID, key.PacketID, key.Offset, store.ErrNotFound)
}

// Ack implements store.Sessions: the entries and the cursor move together.
func (s *sessionStore) Ack(clientID string, keys []store.InFlightKey, cursor uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[clientID]
	if !ok {
		return fmt.Errorf("session %q: %w", clientID, store.ErrNotFound)
	}
	if next := s.log.Next(); cursor > next {
		return fmt.Errorf("session %q: cursor %d is beyond the broadcast log's next %d", clientID, cursor, next)
	}
	kept := ss.inflight[:0]
	for _, f := range ss.inflight {
		acked := false
		for _, k := range keys {
			if f.PacketID == k.PacketID && f.Offset == k.Offset {
				acked = true
				break
			}
		}
		if !acked {
			kept = append(kept, f)
		}
	}
	clear(ss.inflight[len(kept):])
	ss.inflight = kept
	ss.cursor, ss.hasCursor = cursor, true
	return nil
}

// Cursor implements store.Sessions.
func (s *sessionStore) Cursor(clientID string) (uint64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[clientID]
	if !ok || !ss.hasCursor {
		return 0, false, nil
	}
	return ss.cursor, true, nil
}

// Log implements store.Sessions.
func (s *sessionStore) Log() store.BroadcastLog { return s.log }

// GroupCursor implements store.Sessions.
func (s *sessionStore) GroupCursor(group string) (uint64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[group]
	if !ok || g.cursor == 0 {
		return 0, false, nil
	}
	return g.cursor, true, nil
}

// SaveGroupCursor implements store.Sessions.
func (s *sessionStore) SaveGroupCursor(group string, cursor uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.members[group] == 0 {
		return fmt.Errorf("shared group %q: no stored session holds it: %w", group, store.ErrNotFound)
	}
	g := s.groups[group]
	if g == nil {
		g = &groupState{}
		s.groups[group] = g
	}
	g.cursor = cursor
	return nil
}

// Returned implements store.Sessions.
func (s *sessionStore) Returned(group string) ([]store.Returned, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[group]
	if !ok {
		return nil, nil
	}
	out := make([]store.Returned, 0, len(g.returned))
	for _, o := range g.returned {
		out = append(out, store.Returned{Group: group, Offset: o})
	}
	return out, nil
}

// TakeReturned implements store.Sessions.
func (s *sessionStore) TakeReturned(group string, offset uint64) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[group]
	if !ok {
		return false, nil
	}
	for i, o := range g.returned {
		if o == offset {
			g.returned = append(g.returned[:i], g.returned[i+1:]...)
			return true, nil
		}
	}
	return false, nil
}

// copyOut copies sessions, groups and the log for a snapshot: each
// session's filter list too, which Subscribe changes in place.
func (s *sessionStore) copyOut() *sessionsState {
	s.mu.Lock()
	st := &sessionsState{cursors: map[string]uint64{}, groups: map[string]*groupState{}}
	ids := make([]string, 0, len(s.sessions))
	for id := range s.sessions {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		ss := s.sessions[id]
		st.sessions = append(st.sessions, sessionData{s: ss.copied(), inflight: append([]store.InFlight(nil), ss.inflight...)})
		if ss.hasCursor {
			st.cursors[id] = ss.cursor
		}
	}
	for g, gs := range s.groups {
		st.groups[g] = &groupState{cursor: gs.cursor, returned: append([]uint64(nil), gs.returned...)}
	}
	s.mu.Unlock()
	s.log.copyOut(st)
	return st
}

var _ store.Sessions = (*sessionStore)(nil)
