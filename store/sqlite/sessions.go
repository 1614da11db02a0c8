package sqlite

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"saguin/store"
)

// sessionStore keeps persistent sessions in the sessions table (the
// subscriptions and the Will as JSON, readable from the sqlite3 shell),
// their windows in session_inflight, each session's cursor in the broadcast
// log as a positions row on $saguin/broadcast, and the shared groups in
// share_groups and share_returned.
type sessionStore struct {
	p   *Provider
	log *broadcastLog
}

var _ store.Sessions = (*sessionStore)(nil)

// storedSubscription and storedWill are the JSON shapes of the sessions
// row's subscriptions and will columns.
type storedSubscription struct {
	Filter            string `json:"filter"`
	ShareGroup        string `json:"share_group,omitempty"`
	QoS               uint8  `json:"qos"`
	NoLocal           bool   `json:"no_local,omitempty"`
	RetainAsPublished bool   `json:"retain_as_published,omitempty"`
	RetainHandling    uint8  `json:"retain_handling,omitempty"`
	SubscriptionID    uint32 `json:"subscription_id,omitempty"`
	Partition         []byte `json:"partition,omitempty"`
	LogOffset         uint64 `json:"log_offset"`
}

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

func encodeSession(s *store.Session) (subs string, will any, err error) {
	list := make([]storedSubscription, len(s.Subscriptions))
	for i, x := range s.Subscriptions {
		list[i] = storedSubscription{x.Filter, x.ShareGroup, x.QoS, x.NoLocal, x.RetainAsPublished, x.RetainHandling, x.SubscriptionID, x.Partition, x.LogOffset}
	}
	b, err := json.Marshal(list)
	if err != nil {
		return "", nil, err
	}
	if w := s.Will; w != nil {
		sw := storedWill{Topic: w.Topic, Payload: w.Payload, Props: w.Props, QoS: w.QoS, Retain: w.Retain,
			DelayNS: int64(w.Delay), DueAt: store.UnixNanos(w.DueAt), AuthName: w.AuthName}
		for _, h := range w.Headers {
			sw.Headers = append(sw.Headers, [2]string{h.Key, h.Value})
		}
		wb, err := json.Marshal(sw)
		if err != nil {
			return "", nil, err
		}
		will = string(wb)
	}
	return string(b), will, nil
}

func scanSession(scan func(...any) error) (store.Session, error) {
	var s store.Session
	var expiry, gone, rm int64
	var subs string
	var will sql.NullString
	if err := scan(&s.ClientID, &expiry, &gone, &rm, &subs, &will); err != nil {
		return s, err
	}
	s.Expiry, s.DisconnectedAt, s.ReceiveMaximum = time.Duration(expiry), store.FromUnixNanos(gone), uint16(rm)
	var list []storedSubscription
	if err := json.Unmarshal([]byte(subs), &list); err != nil {
		return s, fmt.Errorf("session %q subscriptions: %w", s.ClientID, err)
	}
	for _, x := range list {
		s.Subscriptions = append(s.Subscriptions, store.Subscription{Filter: x.Filter, ShareGroup: x.ShareGroup, QoS: x.QoS,
			NoLocal: x.NoLocal, RetainAsPublished: x.RetainAsPublished, RetainHandling: x.RetainHandling,
			SubscriptionID: x.SubscriptionID, Partition: x.Partition, LogOffset: x.LogOffset})
	}
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
	return out, rows.Err()
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

// Put implements store.Sessions. A client's packet waits on it (CONNACK,
// SUBACK), so it goes with the answering writes; it may not use the reserve.
func (s *sessionStore) Put(x store.Session) error {
	subs, will, err := encodeSession(&x)
	if err != nil {
		return fmt.Errorf("session %q: %w", x.ClientID, err)
	}
	err = s.p.w.doFor(x.ClientID, classAnswering, false, false, func(t *wtx) error {
		_, err := t.exec(t.c.sessionPut, x.ClientID, int64(x.Expiry), store.UnixNanos(x.DisconnectedAt), int64(x.ReceiveMaximum), subs, will)
		return err
	})
	return s.p.mapErr(fmt.Sprintf("storing session %q", x.ClientID), err)
}

// Get implements store.Sessions, on a read connection: a SUBSCRIBE's read of
// its session must not queue behind every other client's writes.
func (s *sessionStore) Get(clientID string) (store.Session, bool, error) {
	var x store.Session
	err := s.p.readConn(func(c *conn) error {
		var err error
		x, err = scanSession(c.sessionGet.QueryRow(clientID).Scan)
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

// End implements store.Sessions: the session, its window and its cursor go,
// the deliveries its ending returns are written, and each shared group it was
// the last holder of goes with its cursor and returned rows - one
// transaction, which may use the reserve for the returned rows.
func (s *sessionStore) End(clientID string, returned []store.Returned) error {
	ch := s.log.channel
	err := s.p.w.doFor(clientID, classDeparted, true, false, func(t *wtx) error {
		x, err := scanSession(t.c.sessionGet.QueryRow(clientID).Scan)
		if errors.Is(err, sql.ErrNoRows) {
			return notHeld(clientID)
		}
		if err != nil {
			return t.dbFail(err)
		}
		for _, st := range []struct {
			stmt *sql.Stmt
			args []any
		}{
			{t.c.sessionDelete, []any{clientID}},
			{t.c.inflightDeleteAll, []any{clientID}},
			{t.c.positionDrop, []any{ch.id, store.ReaderMQTT(clientID)}},
		} {
			if _, err := t.exec(st.stmt, st.args...); err != nil {
				return err
			}
		}
		for _, r := range returned {
			if _, err := t.exec(t.c.returnedAdd, r.Group, int64(r.Offset)); err != nil {
				return err
			}
		}
		for _, sub := range x.Subscriptions {
			if sub.ShareGroup == "" {
				continue
			}
			var one int64
			err := t.c.groupHeldByOthers.QueryRow(clientID, sub.ShareGroup).Scan(&one)
			if err == nil {
				continue
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return t.dbFail(err)
			}
			if _, err := t.exec(t.c.groupDelete, sub.ShareGroup); err != nil {
				return err
			}
			if _, err := t.exec(t.c.returnedDeleteGroup, sub.ShareGroup); err != nil {
				return err
			}
		}
		return nil
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
		_, err := t.exec(t.c.groupSave, group, int64(cursor))
		return err
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
