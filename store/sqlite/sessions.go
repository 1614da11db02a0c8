package sqlite

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// sessionStore keeps persistent sessions in the sessions table (the Will as
// JSON, readable from the sqlite3 shell) and their filters in
// session_subscriptions, one row each; their windows in session_inflight,
// each session's cursor in the broadcast log as a positions row on
// $saguin/broadcast, and the shared groups in share_groups and
// share_returned, keyed by the group's whole "$share/<ShareName>/<filter>".
type sessionStore struct {
	p   *Provider
	log *broadcastLog
}

var _ store.Sessions = (*sessionStore)(nil)

// subCols are session_subscriptions' columns after client_id, in the order
// subArgs writes and scanSubscription reads them.
const subCols = `filter, share_group, qos, no_local, retain_as_published, retain_handling, subscription_id, partition, log_offset`

func subArgs(clientID string, x *store.Subscription) []any {
	var part any
	if len(x.Partition) > 0 {
		part = x.Partition
	}
	return []any{clientID, x.Filter, x.ShareGroup, int64(x.QoS), boolInt(x.NoLocal), boolInt(x.RetainAsPublished),
		int64(x.RetainHandling), int64(x.SubscriptionID), part, int64(x.LogOffset)}
}

func scanSubscription(scan func(...any) error, lead ...any) (store.Subscription, error) {
	var x store.Subscription
	var qos, noLocal, rap, rh, id, off int64
	var part []byte
	if err := scan(append(lead, &x.Filter, &x.ShareGroup, &qos, &noLocal, &rap, &rh, &id, &part, &off)...); err != nil {
		return x, err
	}
	x.QoS, x.NoLocal, x.RetainAsPublished, x.RetainHandling = uint8(qos), noLocal != 0, rap != 0, uint8(rh)
	x.SubscriptionID, x.LogOffset = uint32(id), uint64(off)
	if len(part) > 0 {
		x.Partition = part
	}
	return x, nil
}

// storedWill is the JSON shape of the sessions row's will column.
type storedWill struct {
	Topic    string      `json:"topic"`
	Payload  []byte      `json:"payload"`
	Props    []byte      `json:"props,omitempty"`
	Headers  [][2]string `json:"headers,omitempty"`
	QoS      uint8       `json:"qos"`
	Retain   bool        `json:"retain,omitempty"`
	DelayNS  int64       `json:"delay_ns"`
	DueAt    int64       `json:"due_at"`
	AuthName string      `json:"auth_name,omitempty"`
}

func encodeWill(w *store.Will) (any, error) {
	if w == nil {
		return nil, nil
	}
	sw := storedWill{Topic: w.Topic, Payload: w.Payload, Props: w.Props, QoS: w.QoS, Retain: w.Retain,
		DelayNS: int64(w.Delay), DueAt: store.UnixNanos(w.DueAt), AuthName: w.AuthName}
	for _, h := range w.Headers {
		sw.Headers = append(sw.Headers, [2]string{h.Key, h.Value})
	}
	wb, err := json.Marshal(sw)
	if err != nil {
		return nil, err
	}
	return string(wb), nil
}

// sessionArgs are the sessions row's values after client_id.
func sessionArgs(s *store.Session) ([]any, error) {
	will, err := encodeWill(s.Will)
	if err != nil {
		return nil, fmt.Errorf("session %q will: %w", s.ClientID, err)
	}
	return []any{int64(s.Expiry), store.UnixNanos(s.DisconnectedAt), int64(s.ReceiveMaximum), will}, nil
}

// scanSession reads a sessions row; its subscriptions are read apart.
func scanSession(scan func(...any) error) (store.Session, error) {
	var s store.Session
	var expiry, gone, rm int64
	var will sql.NullString
	if err := scan(&s.ClientID, &expiry, &gone, &rm, &will); err != nil {
		return s, err
	}
	s.Expiry, s.DisconnectedAt, s.ReceiveMaximum = time.Duration(expiry), store.FromUnixNanos(gone), uint16(rm)
	if will.Valid {
		var sw storedWill
		if err := json.Unmarshal([]byte(will.String), &sw); err != nil {
			return s, fmt.Errorf("session %q will: %w", s.ClientID, err)
		}
		w := &store.Will{Topic: sw.Topic, Payload: sw.Payload, Props: sw.Props, QoS: sw.QoS, Retain: sw.Retain,
			Delay: time.Duration(sw.DelayNS), DueAt: store.FromUnixNanos(sw.DueAt), AuthName: sw.AuthName}
		for _, h := range sw.Headers {
			w.Headers = append(w.Headers, store.Header{Key: h[0], Value: h[1]})
		}
		s.Will = w
	}
	return s, nil
}

// oneSession reads a session with its subscriptions on c; sql.ErrNoRows
// when it is not stored.
func oneSession(c *conn, clientID string) (store.Session, error) {
	x, err := scanSession(c.sessionGet.QueryRow(clientID).Scan)
	if err != nil {
		return x, err
	}
	rows, err := c.subList.Query(clientID)
	if err != nil {
		return x, err
	}
	defer rows.Close()
	for rows.Next() {
		sub, err := scanSubscription(rows.Scan)
		if err != nil {
			return x, err
		}
		x.Subscriptions = append(x.Subscriptions, sub)
	}
	return x, rows.Err()
}

// Sessions opens the session store with its broadcast log, checking the pair
// as notes-0004 asks: a cursor whose session is not held goes, an in-flight
// entry behind its session's cursor goes unless a shared group handed it
// over, and an entry at or beyond the log's next, or a window larger than
// the session's Receive Maximum, is refused.
func (p *Provider) Sessions() (store.Sessions, error) {
	p.mu.Lock()
	if p.sessions != nil {
		s := p.sessions
		p.mu.Unlock()
		return s, nil
	}
	p.mu.Unlock()
	log, err := p.openBroadcastLog()
	if err != nil {
		return nil, err
	}
	ch := log.channel
	err = p.w.do(classAnswering, true, true, func(t *wtx) error {
		sessions, err := allSessions(t.c)
		if err != nil {
			return t.dbFail(err)
		}
		// A group no stored session holds is kept by nothing: nothing can
		// collect what it is owed (RFC 0003 "Sessions": dropped at start if
		// no member is left).
		if _, err := t.exec(t.c.groupOrphaned); err != nil {
			return err
		}
		if _, err := t.exec(t.c.returnedOrphaned); err != nil {
			return err
		}
		held := make(map[string]store.Session, len(sessions))
		for _, s := range sessions {
			held[store.ReaderMQTT(s.ClientID)] = s
		}
		cursors, err := listPositions(t.c, ch.id)
		if err != nil {
			return t.dbFail(err)
		}
		cursorOf := map[string]uint64{}
		for _, pos := range cursors {
			if _, ok := held[pos.Reader]; !ok {
				if _, err := t.exec(t.c.positionDrop, ch.id, pos.Reader); err != nil {
					return err
				}
				continue
			}
			cursorOf[pos.Reader] = pos.Offset
		}
		for reader, s := range held {
			window, err := listInFlight(t.c, s.ClientID)
			if err != nil {
				return t.dbFail(err)
			}
			cursor, hasCursor := cursorOf[reader]
			kept := 0
			for _, f := range window {
				if f.Offset >= ch.pNext {
					return fmt.Errorf("session %q: in-flight offset %d is at or beyond the broadcast log's next %d: %w", s.ClientID, f.Offset, ch.pNext, store.ErrCorrupt)
				}
				if hasCursor && f.Offset < cursor && f.ShareGroup == "" {
					if _, err := t.exec(t.c.inflightDelete, s.ClientID, int64(f.PacketID), int64(f.Offset)); err != nil {
						return err
					}
					continue
				}
				kept++
			}
			if kept > int(s.ReceiveMaximum) && s.ReceiveMaximum > 0 {
				return fmt.Errorf("session %q: %d messages in flight under a window of %d: %w", s.ClientID, kept, s.ReceiveMaximum, store.ErrCorrupt)
			}
		}
		return nil
	})
	if err != nil {
		return nil, p.mapErr("loading sessions", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sessions == nil {
		p.sessions = &sessionStore{p: p, log: log}
	}
	return p.sessions, nil
}

// allSessions reads every session with its subscriptions, in client-id
// order: the two tables are walked side by side, both in that order.
func allSessions(c *conn) ([]store.Session, error) {
	rows, err := c.sessionAll.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Session
	for rows.Next() {
		s, err := scanSession(rows.Scan)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	subs, err := c.subAll.Query()
	if err != nil {
		return nil, err
	}
	defer subs.Close()
	i := 0
	for subs.Next() {
		var id string
		sub, err := scanSubscription(subs.Scan, &id)
		if err != nil {
			return nil, err
		}
		for i < len(out) && out[i].ClientID < id {
			i++
		}
		if i == len(out) || out[i].ClientID != id {
			return nil, fmt.Errorf("subscription %q of client %q, which has no session: %w", sub.Filter, id, store.ErrCorrupt)
		}
		out[i].Subscriptions = append(out[i].Subscriptions, sub)
	}
	return out, subs.Err()
}

func listInFlight(c *conn, clientID string) ([]store.InFlight, error) {
	rows, err := c.inflightList.Query(clientID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.InFlight
	for rows.Next() {
		var f store.InFlight
		var off, pid, qos, rel int64
		if err := rows.Scan(&off, &pid, &qos, &rel, &f.ShareGroup); err != nil {
			return nil, err
		}
		f.Offset, f.PacketID, f.QoS, f.Released = uint64(off), uint16(pid), uint8(qos), rel != 0
		out = append(out, f)
	}
	return out, rows.Err()
}

func notHeld(clientID string) error {
	return fmt.Errorf("session %q: %w", clientID, store.ErrNotFound)
}

// held refuses a write for a session that is not stored: the refusal is
// that write's own answer, read before anything is written.
func held(t *wtx, clientID string) error {
	var one int64
	err := t.c.sessionHeldBy.QueryRow(clientID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return notHeld(clientID)
	}
	if err != nil {
		return t.dbFail(err)
	}
	return nil
}

// Put implements store.Sessions: the row and every filter, replacing what
// was stored, in one transaction. A client's packet waits on it (CONNACK),
// so it goes with the answering writes; it may not use the reserve.
func (s *sessionStore) Put(x store.Session) error {
	args, err := sessionArgs(&x)
	if err != nil {
		return err
	}
	err = s.p.w.doFor(x.ClientID, classAnswering, false, false, func(t *wtx) error {
		left, err := sharedFilters(t, x.ClientID)
		if err != nil {
			return err
		}
		if _, err := t.exec(t.c.sessionPut, append([]any{x.ClientID}, args...)...); err != nil {
			return err
		}
		if _, err := t.exec(t.c.subDeleteAll, x.ClientID); err != nil {
			return err
		}
		// Joined before the old ones are left, so a group both hold keeps
		// its row.
		for i := range x.Subscriptions {
			sub := &x.Subscriptions[i]
			if _, err := t.exec(t.c.subPut, subArgs(x.ClientID, sub)...); err != nil {
				return err
			}
			if sub.ShareGroup != "" {
				if _, err := t.exec(t.c.groupJoin, sub.Filter, nil); err != nil {
					return err
				}
			}
		}
		return leaveGroups(t, left)
	})
	return s.p.mapErr(fmt.Sprintf("storing session %q", x.ClientID), err)
}

// sharedFilters are the shared groups a stored session holds.
func sharedFilters(t *wtx, clientID string) ([]string, error) {
	rows, err := t.c.subShared.Query(clientID)
	if err != nil {
		return nil, t.dbFail(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var f string
		if err := rows.Scan(&f); err != nil {
			return nil, t.dbFail(err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, t.dbFail(err)
	}
	return out, nil
}

// leaveGroups counts one holder out of each group; a group left with none
// goes, with its cursor and returned deliveries.
func leaveGroups(t *wtx, groups []string) error {
	for _, g := range groups {
		if _, err := t.exec(t.c.groupLeave, g); err != nil {
			return err
		}
		res, err := t.exec(t.c.groupDelete, g)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			continue
		}
		if _, err := t.exec(t.c.returnedDeleteGroup, g); err != nil {
			return err
		}
	}
	return nil
}

// Update implements store.Sessions: the row alone, its filters untouched.
func (s *sessionStore) Update(x store.Session) error {
	args, err := sessionArgs(&x)
	if err != nil {
		return err
	}
	err = s.p.w.doFor(x.ClientID, classAnswering, false, false, func(t *wtx) error {
		res, err := t.exec(t.c.sessionUpdate, append(args, x.ClientID)...)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notHeld(x.ClientID)
		}
		return nil
	})
	return s.p.mapErr(fmt.Sprintf("storing session %q", x.ClientID), err)
}

// Subscribe implements store.Sessions: one row, and a new group's cursor in
// the same transaction. Its SUBACK waits on it; no reserve.
func (s *sessionStore) Subscribe(clientID string, sub store.Subscription, groupCursor uint64) error {
	err := s.p.w.doFor(clientID, classAnswering, false, false, func(t *wtx) error {
		if err := held(t, clientID); err != nil {
			return err
		}
		var was string
		err := t.c.subOf.QueryRow(clientID, sub.Filter).Scan(&was)
		had := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return t.dbFail(err)
		}
		if _, err := t.exec(t.c.subPut, subArgs(clientID, &sub)...); err != nil {
			return err
		}
		if sub.ShareGroup == "" {
			return nil
		}
		var cursor any
		if groupCursor > 0 {
			cursor = int64(groupCursor)
		}
		if !had {
			_, err = t.exec(t.c.groupJoin, sub.Filter, cursor)
		} else if cursor != nil {
			_, err = t.exec(t.c.groupCursorFirst, cursor, sub.Filter)
		}
		return err
	})
	return s.p.mapErr(fmt.Sprintf("storing session %q's subscription to %q", clientID, sub.Filter), err)
}

// Unsubscribe implements store.Sessions (relieving: forgetting a filter
// frees room).
func (s *sessionStore) Unsubscribe(clientID, filter string) (bool, error) {
	var removed bool
	err := s.p.w.doFor(clientID, classAnswering, true, false, func(t *wtx) error {
		if err := held(t, clientID); err != nil {
			return err
		}
		var group string
		err := t.c.subOf.QueryRow(clientID, filter).Scan(&group)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return t.dbFail(err)
		}
		if _, err := t.exec(t.c.subDelete, clientID, filter); err != nil {
			return err
		}
		removed = true
		if group != "" {
			return leaveGroups(t, []string{filter})
		}
		return nil
	})
	if err != nil {
		return false, s.p.mapErr(fmt.Sprintf("removing session %q's subscription to %q", clientID, filter), err)
	}
	return removed, nil
}

// Get implements store.Sessions, on a read connection in one read
// transaction (the row and its filters as of one moment): a CONNECT's read
// of its session must not queue behind every other client's writes.
func (s *sessionStore) Get(clientID string) (store.Session, bool, error) {
	var x store.Session
	err := s.p.readTx(func(c *conn) error {
		var err error
		x, err = oneSession(c, clientID)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return store.Session{}, false, nil
	}
	if err != nil {
		return store.Session{}, false, s.p.mapErr(fmt.Sprintf("reading session %q", clientID), err)
	}
	return x, true, nil
}

// All implements store.Sessions.
func (s *sessionStore) All() ([]store.Session, error) {
	var out []store.Session
	err := s.p.readTx(func(c *conn) error {
		var err error
		out, err = allSessions(c)
		return err
	})
	return out, s.p.mapErr("reading sessions", err)
}

// SetDisconnected implements store.Sessions: a departed client's write.
func (s *sessionStore) SetDisconnected(clientID string, at time.Time) error {
	class := classDeparted
	if at.IsZero() {
		class = classAnswering // a reconnect: its CONNACK waits
	}
	err := s.p.w.doFor(clientID, class, false, false, func(t *wtx) error {
		res, err := t.exec(t.c.sessionDisconnected, store.UnixNanos(at), clientID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notHeld(clientID)
		}
		return nil
	})
	return s.p.mapErr(fmt.Sprintf("recording session %q's disconnect", clientID), err)
}

// End implements store.Sessions: the session, its filters, its window and
// its cursor go, the deliveries its ending returns to groups someone still
// holds are written, and each shared group it was the last holder of goes
// with its cursor and returned rows - one transaction, which may use the
// reserve for the returned rows.
func (s *sessionStore) End(clientID string, returned []store.Returned) error {
	ch := s.log.channel
	err := s.p.w.doFor(clientID, classDeparted, true, false, func(t *wtx) error {
		if err := held(t, clientID); err != nil {
			return err
		}
		left, err := sharedFilters(t, clientID)
		if err != nil {
			return err
		}
		for _, st := range []struct {
			stmt *sql.Stmt
			args []any
		}{
			{t.c.sessionDelete, []any{clientID}},
			{t.c.subDeleteAll, []any{clientID}},
			{t.c.inflightDeleteAll, []any{clientID}},
			{t.c.positionDrop, []any{ch.id, store.ReaderMQTT(clientID)}},
		} {
			if _, err := t.exec(st.stmt, st.args...); err != nil {
				return err
			}
		}
		// Written only for a group that has a row (a group nobody holds
		// keeps nothing); one this session alone held goes just below.
		for _, r := range returned {
			if _, err := t.exec(t.c.returnedHeld, int64(r.Offset), r.Group); err != nil {
				return err
			}
		}
		return leaveGroups(t, left)
	})
	return s.p.mapErr(fmt.Sprintf("ending session %q", clientID), err)
}

// InFlight implements store.Sessions.
func (s *sessionStore) InFlight(clientID string) ([]store.InFlight, error) {
	var out []store.InFlight
	err := s.p.readTx(func(c *conn) error {
		var one int64
		if err := c.sessionHeldBy.QueryRow(clientID).Scan(&one); err != nil {
			return err
		}
		var err error
		out, err = listInFlight(c, clientID)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notHeld(clientID)
	}
	return out, s.p.mapErr(fmt.Sprintf("reading session %q's window", clientID), err)
}

// AddInFlight implements store.Sessions.
func (s *sessionStore) AddInFlight(clientID string, entries []store.InFlight) error {
	err := s.p.w.doFor(clientID, classConnected, false, false, func(t *wtx) error {
		if err := held(t, clientID); err != nil {
			return err
		}
		for _, f := range entries {
			if _, err := t.exec(t.c.inflightAdd, clientID, int64(f.Offset), int64(f.PacketID), int64(f.QoS), boolInt(f.Released), f.ShareGroup); err != nil {
				return err
			}
		}
		return nil
	})
	return s.p.mapErr(fmt.Sprintf("storing session %q's window", clientID), err)
}

// MarkReleased implements store.Sessions.
func (s *sessionStore) MarkReleased(clientID string, key store.InFlightKey) error {
	err := s.p.w.doFor(clientID, classConnected, true, false, func(t *wtx) error {
		if err := held(t, clientID); err != nil {
			return err
		}
		res, err := t.exec(t.c.inflightRelease, clientID, int64(key.PacketID), int64(key.Offset))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("session %q: in-flight %d@%d: %w", clientID, key.PacketID, key.Offset, store.ErrNotFound)
		}
		return nil
	})
	return s.p.mapErr(fmt.Sprintf("storing session %q's window", clientID), err)
}

// Ack implements store.Sessions: the acknowledged entries (each named by
// packet identifier and offset) go and the cursor moves, in one transaction
// that may use the reserve.
func (s *sessionStore) Ack(clientID string, keys []store.InFlightKey, cursor uint64) error {
	ch := s.log.channel
	now := s.p.now()
	err := s.p.w.doFor(clientID, classConnected, true, false, func(t *wtx) error {
		if err := held(t, clientID); err != nil {
			return err
		}
		for _, k := range keys {
			if _, err := t.exec(t.c.inflightDelete, clientID, int64(k.PacketID), int64(k.Offset)); err != nil {
				return err
			}
		}
		_, err := t.exec(t.c.positionSave, ch.id, store.ReaderMQTT(clientID), int64(cursor), int64(0), store.UnixNanos(now))
		return err
	})
	return s.p.mapErr(fmt.Sprintf("storing session %q's acknowledgements", clientID), err)
}

// Cursor implements store.Sessions.
func (s *sessionStore) Cursor(clientID string) (uint64, bool, error) {
	pos, ok, err := s.log.Position(store.ReaderMQTT(clientID))
	return pos.Offset, ok, err
}

// Log implements store.Sessions.
func (s *sessionStore) Log() store.BroadcastLog { return s.log }

// GroupCursor implements store.Sessions.
func (s *sessionStore) GroupCursor(group string) (uint64, bool, error) {
	var c int64
	err := s.p.readConn(func(cc *conn) error { return cc.groupGet.QueryRow(group).Scan(&c) })
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, s.p.mapErr("reading group "+group, err)
	}
	return uint64(c), true, nil
}

// SaveGroupCursor implements store.Sessions (relieving).
func (s *sessionStore) SaveGroupCursor(group string, cursor uint64) error {
	err := s.p.w.do(classConnected, true, false, func(t *wtx) error {
		res, err := t.exec(t.c.groupSave, int64(cursor), group)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("shared group %q: no stored session holds it: %w", group, store.ErrNotFound)
		}
		return nil
	})
	return s.p.mapErr("storing group "+group+"'s cursor", err)
}

// Returned implements store.Sessions.
func (s *sessionStore) Returned(group string) ([]store.Returned, error) {
	var out []store.Returned
	err := s.p.readConn(func(c *conn) error {
		out = out[:0]
		rows, err := c.returnedList.Query(group)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var off int64
			if err := rows.Scan(&off); err != nil {
				return err
			}
			out = append(out, store.Returned{Group: group, Offset: uint64(off)})
		}
		return rows.Err()
	})
	return out, s.p.mapErr("reading group "+group+"'s returned deliveries", err)
}

// TakeReturned implements store.Sessions.
func (s *sessionStore) TakeReturned(group string, offset uint64) (bool, error) {
	var took bool
	err := s.p.w.do(classConnected, true, false, func(t *wtx) error {
		res, err := t.exec(t.c.returnedTake, group, int64(offset))
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		took = n > 0
		return nil
	})
	return took, s.p.mapErr("handing over a delivery returned to "+group, err)
}
