package sqlite

import (
	"database/sql"
	"fmt"

	"github.com/saguin-edge/saguin/store"
)

// broadcastLog is the one log of QoS 1/2 broadcasts owed to sessions that
// outlive their connection, kept in the records table under the reserved
// channel $saguin/broadcast: written once however many sessions are owed a
// message, released from anywhere once nobody owes it, so it may have gaps;
// its floor is the lowest offset still held and no offset is reused. A
// window's read (ReadFrom) runs on a read connection: an acknowledgement that
// makes room for the next delivery must not wait behind a group commit and
// its fsync. It sees every append whose caller was answered (each read is a
// fresh transaction after that commit); one it finds released meanwhile was
// owed by nobody.
type broadcastLog struct {
	*channel
	positions
	holder
}

var _ store.BroadcastLog = (*broadcastLog)(nil)

func (p *Provider) openBroadcastLog() (*broadcastLog, error) {
	ch, err := p.openChannel(broadcastChannel, kindBroadcast)
	if err != nil {
		return nil, err
	}
	var n int64
	err = p.w.read(func(c *conn) error { return c.recordsCount.QueryRow(ch.id).Scan(&n) })
	if err != nil {
		return nil, p.mapErr("counting the broadcast log", err)
	}
	ch.count.Store(n)
	ch.resetPending()
	return &broadcastLog{channel: ch, positions: positions{ch}, holder: holder{ch, pubBroadcast}}, nil
}

// Append implements store.BroadcastLog: a publish path, batched with the
// others.
func (l *broadcastLog) Append(e store.BroadcastEntry) (store.BroadcastEntry, error) {
	o := getOp()
	o.pub, o.ch, o.rec = pubBroadcast, l.channel, e.Record
	o.extra = broadcastExtra{forShares: e.ForShares, owedTo: e.OwedTo}
	err := l.p.w.submit(o)
	out := o.out
	putOp(o)
	if err != nil {
		return store.BroadcastEntry{}, err
	}
	e.Record = out
	return e, nil
}

// ReadFrom implements store.BroadcastLog, on a read connection (the write
// connection with read_connections: 0).
func (l *broadcastLog) ReadFrom(from uint64, max int, dst []store.BroadcastEntry) ([]store.BroadcastEntry, error) {
	out := dst[:0]
	if max <= 0 {
		return out, nil
	}
	var recs []store.Record
	var extras []broadcastExtra
	err := l.p.readConn(func(c *conn) error {
		var err error
		recs, err = scanRecords(c.readRecords, nil, &extras, l.id, int64(from), int64(max))
		return err
	})
	if err != nil {
		return nil, l.p.mapErr("reading the broadcast log", err)
	}
	for i, r := range recs {
		out = append(out, store.BroadcastEntry{Record: r, ForShares: extras[i].forShares, OwedTo: extras[i].owedTo})
	}
	return out, nil
}

// Release implements store.BroadcastLog: the messages go and the floor rises
// to the lowest offset still held, in one transaction (relieving).
func (l *broadcastLog) Release(offsets []uint64) (int64, error) {
	var freed int64
	err := l.p.w.do(classConnected, true, true, func(t *wtx) error {
		freed = 0
		removed := 0
		for _, off := range offsets {
			var size int64
			err := t.c.recordSizeAt.QueryRow(l.id, int64(off)).Scan(&size)
			if err == sql.ErrNoRows {
				continue
			}
			if err != nil {
				return t.dbFail(err)
			}
			if _, err := t.exec(t.c.recordDelete, l.id, int64(off)); err != nil {
				return err
			}
			freed += size
			removed++
		}
		if removed == 0 {
			return nil
		}
		return l.removedRows(t, t.c.recordsMin, int64(removed), freed)
	})
	if err != nil {
		return 0, l.p.mapErr(fmt.Sprintf("releasing %d broadcast messages", len(offsets)), err)
	}
	return freed, nil
}

// Oldest implements store.BroadcastLog.
func (l *broadcastLog) Oldest(max int) ([]uint64, error) {
	var out []uint64
	err := l.p.w.read(func(c *conn) error {
		rows, err := c.recordsOldest.Query(l.id, max)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var off int64
			if err := rows.Scan(&off); err != nil {
				return err
			}
			out = append(out, uint64(off))
		}
		return rows.Err()
	})
	return out, l.p.mapErr("reading the broadcast log's oldest", err)
}
