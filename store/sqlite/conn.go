package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime/debug"
)

// recordCols are the record's columns in the order every statement and every
// scan here uses them.
const recordCols = `message_id, ts, topic, headers, props, payload, client_id, bridge, qos, retain, size`

// conn is one connection with every statement it runs prepared once, when
// the provider opens (notes-0004 "Prepared statements"): SQL text handed to
// the driver per append would be parsed per append.
type conn struct {
	c *sql.Conn

	begin, commit, rollback *sql.Stmt
	pageCount               *sql.Stmt

	channelByName, insertChannel, updateCounters, updateFloor, setCounters *sql.Stmt

	insertRecord, readRecords, readWindowHead, firstAtOrAfter *sql.Stmt
	oldestRecords, oldestTime, deleteRecordsBelow             *sql.Stmt

	latestGet, latestGetFull, latestTrimmable, latestAnyTrimmable, latestUpdate, latestInsert, latestChanges, latestCount *sql.Stmt
	latestOldest, latestDeleteRow, latestRange                                                                            *sql.Stmt

	queueInsert, queueSetAttempts, queueMin, queueRead, queueGet, queueLease, queueDelete, queueSums, queueExpired, queueListed *sql.Stmt

	positionGet, positionSave, positionDrop, positionLowest, positionsAll, positionsBehind *sql.Stmt

	holdPut, holdGet, holdDrop, holdList *sql.Stmt

	sessionPut, sessionGet, sessionAll, sessionDisconnected, sessionDelete, sessionHeldBy *sql.Stmt
	sessionUpdate, subPut, subList, subAll, subDelete, subDeleteAll, subShared, subOf     *sql.Stmt
	groupJoin, groupLeave, groupOrphaned, groupCursorFirst, returnedOrphaned              *sql.Stmt
	inflightAdd, inflightList, inflightRelease, inflightDelete, inflightDeleteAll         *sql.Stmt
	groupGet, groupSave, groupDelete, returnedList, returnedTake                          *sql.Stmt
	returnedDeleteGroup, returnedHeld                                                     *sql.Stmt
	recordSizeAt, recordDelete, recordsMin, recordsOldest, recordsCount                   *sql.Stmt
}

// statement texts, prepared on every connection (a read connection prepares
// the writes too: preparing does not execute, and one set keeps the pool
// uniform).
func (c *conn) statements() []struct {
	dst **sql.Stmt
	sql string
} {
	return []struct {
		dst **sql.Stmt
		sql string
	}{
		{&c.begin, `BEGIN`},
		{&c.commit, `COMMIT`},
		{&c.rollback, `ROLLBACK`},
		{&c.pageCount, `PRAGMA page_count`},

		{&c.channelByName, `SELECT id, kind, next, floor, bytes FROM channels WHERE name = ?`},
		{&c.insertChannel, `INSERT INTO channels (name, kind, next, floor, bytes) VALUES (?, ?, 1, 1, 0)`},
		{&c.updateCounters, `UPDATE channels SET next = ?, bytes = ? WHERE id = ?`},
		{&c.setCounters, `UPDATE channels SET next = ?, floor = ?, bytes = ? WHERE id = ?`},
		{&c.updateFloor, `UPDATE channels SET floor = ?, bytes = ? WHERE id = ?`},

		{&c.insertRecord, `INSERT INTO records (channel, offset, ` + recordCols + `, for_shares, owed_to) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&c.readRecords, `SELECT offset, ` + recordCols + `, for_shares, owed_to FROM records WHERE channel = ? AND offset >= ? ORDER BY offset LIMIT ?`},
		{&c.readWindowHead, `SELECT next, floor FROM channels WHERE id = ?`},
		// Every candidate is examined: receipt times are not monotonic in
		// offset order after a clock step, so no search on ts can be trusted.
		{&c.firstAtOrAfter, `SELECT min(offset) FROM records WHERE channel = ? AND ts >= ? AND ts != 0`},
		{&c.oldestRecords, `SELECT offset, ts, size FROM records WHERE channel = ? ORDER BY offset LIMIT ?`},
		{&c.oldestTime, `SELECT ts FROM records WHERE channel = ? ORDER BY offset LIMIT 1`},
		{&c.deleteRecordsBelow, `DELETE FROM records WHERE channel = ? AND offset < ?`},

		{&c.latestGet, `SELECT offset, deleted, size FROM latest_values WHERE channel = ? AND topic = ?`},
		{&c.latestGetFull, `SELECT offset, deleted, ` + recordCols + ` FROM latest_values WHERE channel = ? AND topic = ?`},
		{&c.latestTrimmable, `SELECT offset, deleted, size, topic FROM latest_values WHERE channel = ? AND ts != 0 AND ((deleted = 0 AND ts < ?) OR (deleted = 1 AND ts < ?))`},
		{&c.latestAnyTrimmable, `SELECT 1 FROM latest_values WHERE channel = ? AND ts != 0 AND ((deleted = 0 AND ts < ?) OR (deleted = 1 AND ts < ?)) LIMIT 1`},
		{&c.latestUpdate, `UPDATE latest_values SET offset = ?, deleted = ?, message_id = ?, ts = ?, headers = ?, props = ?, payload = ?, client_id = ?, bridge = ?, qos = ?, retain = ?, size = ? WHERE channel = ? AND topic = ?`},
		{&c.latestInsert, `INSERT INTO latest_values (channel, topic, offset, deleted, message_id, ts, headers, props, payload, client_id, bridge, qos, retain, size) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&c.latestChanges, `SELECT offset, deleted, ` + recordCols + ` FROM latest_values WHERE channel = ? AND offset >= ? ORDER BY offset LIMIT ?`},
		{&c.latestCount, `SELECT count(*), coalesce(sum(deleted), 0), coalesce(sum(size), 0) FROM latest_values WHERE channel = ?`},
		{&c.latestOldest, `SELECT offset, deleted, ts, size, topic FROM latest_values WHERE channel = ? ORDER BY offset LIMIT ?`},
		{&c.latestDeleteRow, `DELETE FROM latest_values WHERE channel = ? AND topic = ?`},
		{&c.latestRange, `SELECT offset, deleted, ` + recordCols + ` FROM latest_values WHERE channel = ? AND deleted = 0 ORDER BY topic`},

		{&c.queueInsert, `INSERT INTO queue_items (channel, offset, ` + recordCols + `, attempts, first_delivery, last_delivery) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0)`},
		{&c.queueSetAttempts, `UPDATE queue_items SET attempts = ?, first_delivery = ?, last_delivery = ? WHERE channel = ? AND offset = ?`},
		{&c.queueMin, `SELECT min(offset) FROM queue_items WHERE channel = ?`},
		{&c.queueRead, `SELECT offset, ` + recordCols + `, attempts, first_delivery, last_delivery FROM queue_items WHERE channel = ? AND offset >= ? ORDER BY offset LIMIT ?`},
		{&c.queueGet, `SELECT offset, ` + recordCols + `, attempts, first_delivery, last_delivery FROM queue_items WHERE channel = ? AND offset = ?`},
		{&c.queueLease, `UPDATE queue_items SET attempts = attempts + 1, first_delivery = CASE first_delivery WHEN 0 THEN ? ELSE first_delivery END, last_delivery = ? WHERE channel = ? AND offset = ?`},
		{&c.queueDelete, `DELETE FROM queue_items WHERE channel = ? AND offset = ?`},
		{&c.queueListed, `SELECT topic, first_delivery, last_delivery FROM queue_items WHERE channel = ? AND offset = ?`},
		{&c.queueSums, `SELECT offset, size, attempts FROM queue_items WHERE channel = ? ORDER BY offset`},
		{&c.queueExpired, `SELECT offset, ` + recordCols + `, attempts, first_delivery, last_delivery FROM queue_items WHERE channel = ? AND offset >= ? AND ts != 0 AND ts < ? ORDER BY offset LIMIT ?`},

		{&c.positionGet, `SELECT offset, session_expiry, saved_at FROM positions WHERE channel = ? AND reader = ?`},
		{&c.positionSave, `INSERT INTO positions (channel, reader, offset, session_expiry, saved_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (channel, reader) DO UPDATE SET offset = excluded.offset, session_expiry = excluded.session_expiry, saved_at = excluded.saved_at`},
		{&c.positionDrop, `DELETE FROM positions WHERE channel = ? AND reader = ?`},
		// The lowest position and the count in one statement over the same
		// rows: asking twice would double the cost of every scrape.
		{&c.positionLowest, `SELECT min(offset), count(*) FROM positions WHERE channel = ?`},
		{&c.positionsAll, `SELECT reader, offset, session_expiry, saved_at FROM positions WHERE channel = ? ORDER BY reader`},
		{&c.positionsBehind, `SELECT reader, offset, session_expiry, saved_at FROM positions WHERE channel = ? ORDER BY offset, reader LIMIT ?`},

		{&c.holdPut, `INSERT INTO held_publishes (channel, client, packet_id, held_at, ` + recordCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (channel, client, packet_id) DO UPDATE SET held_at = excluded.held_at, message_id = excluded.message_id, ts = excluded.ts,
			topic = excluded.topic, headers = excluded.headers, props = excluded.props, payload = excluded.payload, client_id = excluded.client_id,
			bridge = excluded.bridge, qos = excluded.qos, retain = excluded.retain, size = excluded.size`},
		{&c.holdGet, `SELECT held_at, ` + recordCols + ` FROM held_publishes WHERE channel = ? AND client = ? AND packet_id = ?`},
		{&c.holdDrop, `DELETE FROM held_publishes WHERE channel = ? AND client = ? AND packet_id = ?`},
		{&c.sessionPut, `INSERT INTO sessions (client_id, expiry, disconnected_at, receive_maximum, will) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (client_id) DO UPDATE SET expiry = excluded.expiry, disconnected_at = excluded.disconnected_at,
			receive_maximum = excluded.receive_maximum, will = excluded.will`},
		{&c.sessionUpdate, `UPDATE sessions SET expiry = ?, disconnected_at = ?, receive_maximum = ?, will = ? WHERE client_id = ?`},
		{&c.sessionGet, `SELECT client_id, expiry, disconnected_at, receive_maximum, will FROM sessions WHERE client_id = ?`},
		{&c.sessionAll, `SELECT client_id, expiry, disconnected_at, receive_maximum, will FROM sessions ORDER BY client_id`},
		{&c.subPut, `INSERT INTO session_subscriptions (client_id, ` + subCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (client_id, filter) DO UPDATE SET share_group = excluded.share_group, qos = excluded.qos, no_local = excluded.no_local,
			retain_as_published = excluded.retain_as_published, retain_handling = excluded.retain_handling,
			subscription_id = excluded.subscription_id, partition = excluded.partition, log_offset = excluded.log_offset`},
		{&c.subList, `SELECT ` + subCols + ` FROM session_subscriptions WHERE client_id = ? ORDER BY filter`},
		{&c.subAll, `SELECT client_id, ` + subCols + ` FROM session_subscriptions ORDER BY client_id, filter`},
		{&c.subOf, `SELECT share_group FROM session_subscriptions WHERE client_id = ? AND filter = ?`},
		{&c.subDelete, `DELETE FROM session_subscriptions WHERE client_id = ? AND filter = ?`},
		{&c.subDeleteAll, `DELETE FROM session_subscriptions WHERE client_id = ?`},
		{&c.subShared, `SELECT filter FROM session_subscriptions WHERE client_id = ? AND share_group != ''`},
		{&c.sessionDisconnected, `UPDATE sessions SET disconnected_at = ? WHERE client_id = ?`},
		{&c.sessionDelete, `DELETE FROM sessions WHERE client_id = ?`},
		{&c.sessionHeldBy, `SELECT 1 FROM sessions WHERE client_id = ?`},
		{&c.inflightAdd, `INSERT INTO session_inflight (client_id, offset, packet_id, qos, released, share_group) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (client_id, packet_id, offset) DO UPDATE SET qos = excluded.qos, released = excluded.released, share_group = excluded.share_group`},
		{&c.inflightList, `SELECT offset, packet_id, qos, released, share_group FROM session_inflight WHERE client_id = ? ORDER BY offset, packet_id`},
		{&c.inflightRelease, `UPDATE session_inflight SET released = 1 WHERE client_id = ? AND packet_id = ? AND offset = ?`},
		{&c.inflightDelete, `DELETE FROM session_inflight WHERE client_id = ? AND packet_id = ? AND offset = ?`},
		{&c.inflightDeleteAll, `DELETE FROM session_inflight WHERE client_id = ?`},
		{&c.groupGet, `SELECT cursor FROM share_groups WHERE grp = ? AND cursor IS NOT NULL`},
		{&c.groupSave, `UPDATE share_groups SET cursor = ? WHERE grp = ?`},
		{&c.groupDelete, `DELETE FROM share_groups WHERE grp = ? AND members <= 0`},
		{&c.groupJoin, `INSERT INTO share_groups (grp, cursor, members) VALUES (?, ?, 1)
			ON CONFLICT (grp) DO UPDATE SET members = members + 1, cursor = coalesce(cursor, excluded.cursor)`},
		{&c.groupLeave, `UPDATE share_groups SET members = members - 1 WHERE grp = ?`},
		{&c.groupCursorFirst, `UPDATE share_groups SET cursor = coalesce(cursor, ?) WHERE grp = ?`},
		{&c.groupOrphaned, `DELETE FROM share_groups WHERE members <= 0`},
		{&c.returnedList, `SELECT offset FROM share_returned WHERE grp = ? ORDER BY offset`},
		{&c.returnedTake, `DELETE FROM share_returned WHERE grp = ? AND offset = ?`},
		{&c.returnedDeleteGroup, `DELETE FROM share_returned WHERE grp = ?`},
		{&c.returnedOrphaned, `DELETE FROM share_returned WHERE grp NOT IN (SELECT grp FROM share_groups)`},
		{&c.returnedHeld, `INSERT INTO share_returned (grp, offset) SELECT grp, ? FROM share_groups WHERE grp = ? ON CONFLICT DO NOTHING`},
		{&c.recordSizeAt, `SELECT size FROM records WHERE channel = ? AND offset = ?`},
		{&c.recordDelete, `DELETE FROM records WHERE channel = ? AND offset = ?`},
		{&c.recordsMin, `SELECT min(offset) FROM records WHERE channel = ?`},
		{&c.recordsOldest, `SELECT offset FROM records WHERE channel = ? ORDER BY offset LIMIT ?`},
		{&c.recordsCount, `SELECT count(*) FROM records WHERE channel = ?`},
		{&c.holdList, `SELECT client, packet_id, held_at, ` + recordCols + ` FROM held_publishes WHERE channel = ? ORDER BY held_at, client, packet_id`},
	}
}

// prepare prepares every statement on c.
func prepare(c *sql.Conn) (*conn, error) {
	cc := &conn{c: c}
	ctx := context.Background()
	for _, s := range cc.statements() {
		st, err := c.PrepareContext(ctx, s.sql)
		if err != nil {
			cc.close()
			return nil, fmt.Errorf("preparing %q: %w", s.sql, err)
		}
		*s.dst = st
	}
	return cc, nil
}

func (c *conn) close() error {
	var errs []error
	for _, s := range c.statements() {
		if *s.dst != nil {
			errs = append(errs, (*s.dst).Close())
		}
	}
	errs = append(errs, c.c.Close())
	return errors.Join(errs...)
}

// writerName is the build's revision from the binary itself, never a
// hand-kept constant that goes stale; opts.Writer overrides it.
func writerName(given string) string {
	if given != "" {
		return given
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return s.Value[:12]
			}
		}
		if bi.Main.Version != "" {
			return bi.Main.Version
		}
	}
	return "unknown"
}
