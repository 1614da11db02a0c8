package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// positions are the durable readers' cursors on one channel, in the same
// database as its records.
type positions struct{ ch *channel }

// Position implements store.Positions.
func (s positions) Position(reader string) (store.Position, bool, error) {
	ch := s.ch
	pos := store.Position{Reader: reader}
	var off, exp, saved int64
	err := ch.p.readConn(func(c *conn) error {
		return c.positionGet.QueryRow(ch.id, reader).Scan(&off, &exp, &saved)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return pos, false, nil
	}
	if err != nil {
		return pos, false, ch.p.mapErr("reading position "+reader+" on "+ch.name, err)
	}
	pos.Offset, pos.SessionExpiry, pos.SavedAt = uint64(off), time.Duration(exp), store.FromUnixNanos(saved)
	return pos, true, nil
}

// SavePosition implements store.Positions. A relieving write: it may use the
// reserve, so a full provider still records a consumer's progress.
func (s positions) SavePosition(pos store.Position) error {
	ch := s.ch
	if pos.SavedAt.IsZero() {
		pos.SavedAt = ch.p.now()
	}
	var beyond error
	err := ch.p.w.do(classConnected, true, false, func(t *wtx) error {
		// A position beyond next names a record that does not exist yet.
		if pos.Offset > ch.pNext {
			beyond = fmt.Errorf("channel %s: position %d of %s is beyond next %d", ch.name, pos.Offset, pos.Reader, ch.pNext)
			return beyond
		}
		_, err := t.exec(t.c.positionSave, ch.id, pos.Reader, int64(pos.Offset), int64(pos.SessionExpiry), store.UnixNanos(pos.SavedAt))
		return err
	})
	if beyond != nil {
		return beyond
	}
	return ch.p.mapErr("saving position "+pos.Reader+" on "+ch.name, err)
}

// DropPosition implements store.Positions.
func (s positions) DropPosition(reader string) (bool, error) {
	ch := s.ch
	var dropped bool
	err := ch.p.w.do(classConnected, true, false, func(t *wtx) error {
		res, err := t.exec(t.c.positionDrop, ch.id, reader)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		dropped = n > 0
		return nil
	})
	return dropped, ch.p.mapErr("dropping position "+reader+" on "+ch.name, err)
}

// LowestPosition implements store.Positions: min() and count() in one
// statement. It cannot fail by signature; a failed read is counted as a
// storage error and answers as though no reader held a position.
func (s positions) LowestPosition() (uint64, int) {
	ch := s.ch
	var low sql.NullInt64
	var n int64
	err := ch.p.readConn(func(c *conn) error {
		return c.positionLowest.QueryRow(ch.id).Scan(&low, &n)
	})
	if err != nil {
		ch.p.mapErr("reading the lowest position on "+ch.name, err)
		return ch.Next(), 0
	}
	if n == 0 || !low.Valid {
		return ch.Next(), 0
	}
	return uint64(low.Int64), int(n)
}

// FurthestBehind implements store.Positions: the positions_by_offset index
// walked from the lowest, max rows at most.
func (s positions) FurthestBehind(max int) ([]store.Position, error) {
	if max <= 0 {
		return nil, nil
	}
	ch := s.ch
	var out []store.Position
	err := ch.p.readConn(func(c *conn) error {
		rows, err := c.positionsBehind.Query(ch.id, max)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = out[:0]
		for rows.Next() {
			var p store.Position
			var off, exp, saved int64
			if err := rows.Scan(&p.Reader, &off, &exp, &saved); err != nil {
				return err
			}
			p.Offset, p.SessionExpiry, p.SavedAt = uint64(off), time.Duration(exp), store.FromUnixNanos(saved)
			out = append(out, p)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, ch.p.mapErr("listing the positions on "+ch.name, err)
	}
	return out, nil
}

// listPositions reads every position on ch (writer or read connection).
func listPositions(c *conn, chID int64) ([]store.Position, error) {
	rows, err := c.positionsAll.Query(chID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Position
	for rows.Next() {
		var p store.Position
		var off, exp, saved int64
		if err := rows.Scan(&p.Reader, &off, &exp, &saved); err != nil {
			return nil, err
		}
		p.Offset, p.SessionExpiry, p.SavedAt = uint64(off), time.Duration(exp), store.FromUnixNanos(saved)
		out = append(out, p)
	}
	return out, rows.Err()
}

// dropExpiredPositions runs once when a channel opens: a position whose
// session would have expired while the broker was down goes, unconditionally
// (a clean stop and a crash cannot be told apart and need not be). Only
// mqtt: readers: a bridge: reader has no session, and expiry 0 is a session
// that ended with its connection.
func (p *Provider) dropExpiredPositions(ch *channel) error {
	now := p.now()
	var dropped []string
	err := p.w.do(classAnswering, true, true, func(t *wtx) error {
		list, err := listPositions(t.c, ch.id)
		if err != nil {
			return t.dbFail(err)
		}
		dropped = dropped[:0]
		for _, pos := range list {
			if !strings.HasPrefix(pos.Reader, store.ReaderMQTTPrefix) || !positionExpired(pos, p.opts.MaxSessionExpiry, now) {
				continue
			}
			if _, err := t.exec(t.c.positionDrop, ch.id, pos.Reader); err != nil {
				return err
			}
			dropped = append(dropped, pos.Reader)
		}
		return nil
	})
	if err != nil {
		return p.mapErr("dropping expired positions on "+ch.name, err)
	}
	if h := p.opts.Hooks.PositionExpired; h != nil {
		for _, r := range dropped {
			h(ch.name, r)
		}
	}
	return nil
}

// positionExpired judges an mqtt: position by its session's expiry, capped
// by limits.max_session_expiry, counted from when it was last saved.
func positionExpired(pos store.Position, maxExpiry time.Duration, now time.Time) bool {
	exp := pos.SessionExpiry
	if maxExpiry > 0 && exp > maxExpiry {
		exp = maxExpiry
	}
	if exp <= 0 {
		return true
	}
	if pos.SavedAt.IsZero() {
		return false
	}
	return now.Sub(pos.SavedAt) > exp
}

// passedReaders lists the readers whose position a floor raised from
// oldFloor to newFloor passed: records they had a claim on are gone.
func passedReaders(list []store.Position, oldFloor, newFloor uint64) []string {
	var out []string
	for _, pos := range list {
		if pos.Offset >= oldFloor && pos.Offset < newFloor {
			out = append(out, pos.Reader)
		}
	}
	return out
}
