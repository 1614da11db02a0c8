package sqlite

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/saguin-edge/saguin/store"
)

// holder keeps a channel's exactly-once publishes between PUBREC and PUBREL
// in held_publishes: no offset, so no reader and no retention sees them, but
// their pages count against the provider's bound.
type holder struct {
	ch *channel
	// pub is how a released record is written: append, latest set or enqueue.
	pub pubKind
}

// Hold implements store.Holder. It may not use the reserve.
func (h holder) Hold(x store.Held) error {
	ch := h.ch
	if x.HeldAt.IsZero() {
		x.HeldAt = ch.p.now()
	}
	err := ch.p.w.do(classAnswering, false, false, func(t *wtx) error {
		var hdr any
		t.w.hbuf, hdr = encodeHeaders(t.w.hbuf, x.Record.Headers)
		a := recordArgs(&x.Record, hdr, store.RecordSize(&x.Record))
		_, err := t.exec(t.c.holdPut, ch.id, x.ClientID, int64(x.PacketID), store.UnixNanos(x.HeldAt),
			a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10])
		return err
	})
	return ch.p.mapErr(fmt.Sprintf("holding %s/%d on %s", x.ClientID, x.PacketID, ch.name), err)
}

// ReleaseHeld implements store.Holder: the record is written at the channel's
// next offset and the hold deleted in one transaction, which may use the
// reserve. The channel's own max_bytes still applies.
func (h holder) ReleaseHeld(clientID string, packetID uint16) (store.Record, error) {
	ch := h.ch
	var out store.Record
	err := ch.p.w.do(classAnswering, true, true, func(t *wtx) error {
		x, err := getHeld(t.c, ch.id, clientID, packetID)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("channel %s: no publish held for %s/%d: %w", ch.name, clientID, packetID, store.ErrNotFound)
		}
		if err != nil {
			return t.dbFail(err)
		}
		o := op{pub: h.pub, ch: ch, rec: x.Record}
		t.w.execPublish(t, &o)
		if t.err != nil {
			return &dbError{t.err}
		}
		if o.err != nil {
			return o.err
		}
		out = o.out
		_, err = t.exec(t.c.holdDrop, ch.id, clientID, int64(packetID))
		return err
	})
	if err != nil {
		return store.Record{}, ch.p.mapErr(fmt.Sprintf("releasing %s/%d on %s", clientID, packetID, ch.name), err)
	}
	return out, nil
}

// DropHeld implements store.Holder.
func (h holder) DropHeld(clientID string, packetID uint16) (bool, error) {
	ch := h.ch
	var dropped bool
	err := ch.p.w.do(classConnected, true, false, func(t *wtx) error {
		res, err := t.exec(t.c.holdDrop, ch.id, clientID, int64(packetID))
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		dropped = n > 0
		return nil
	})
	return dropped, ch.p.mapErr(fmt.Sprintf("dropping %s/%d on %s", clientID, packetID, ch.name), err)
}

// Held implements store.Holder: every hold, oldest first.
func (h holder) Held() ([]store.Held, error) {
	ch := h.ch
	var out []store.Held
	err := ch.p.readConn(func(c *conn) error {
		var err error
		out, err = h.heldOn(c)
		return err
	})
	if err != nil {
		return nil, ch.p.mapErr("listing held publishes on "+ch.name, err)
	}
	return out, nil
}

func (h holder) heldOn(c *conn) ([]store.Held, error) {
	rows, err := c.holdList.Query(h.ch.id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Held
	for rows.Next() {
		var x store.Held
		var pid, at int64
		var rs recordScan
		if err := rows.Scan(append([]any{&x.ClientID, &pid, &at}, rs.dest()...)...); err != nil {
			return nil, err
		}
		if x.Record, err = rs.record(0); err != nil {
			return nil, err
		}
		x.PacketID, x.HeldAt = uint16(pid), store.FromUnixNanos(at)
		out = append(out, x)
	}
	return out, rows.Err()
}

func getHeld(c *conn, chID int64, clientID string, packetID uint16) (store.Held, error) {
	x := store.Held{ClientID: clientID, PacketID: packetID}
	var at int64
	var rs recordScan
	if err := c.holdGet.QueryRow(chID, clientID, int64(packetID)).Scan(append([]any{&at}, rs.dest()...)...); err != nil {
		return x, err
	}
	var err error
	x.Record, err = rs.record(0)
	x.HeldAt = store.FromUnixNanos(at)
	return x, err
}
