package broker

import (
	"sync/atomic"

	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// Counters are what the broker counts for RFC 0005's metrics about sessions,
// the broadcast log, retained values and Wills. The metrics listener reads
// them; nothing here formats them.
type Counters struct {
	// StorageErrors: a store call failed (saguin_storage_errors_total).
	StorageErrors atomic.Uint64
	// SessionStorageErrors and RetainedStorageErrors are the part of
	// StorageErrors the broker met calling the session store (its broadcast
	// log included) and the retained store, so that each failure is put on
	// the provider behind the store (saguin_storage_errors_total{provider});
	// the rest are the providers' own, counted through their hooks.
	SessionStorageErrors  atomic.Uint64
	RetainedStorageErrors atomic.Uint64
	// BroadcastPublished: publishes routed as broadcast - a client's, a
	// released exactly-once one, a Will - whether or not anybody was
	// subscribed (saguin_published_total{channel="broadcast"}).
	BroadcastPublished atomic.Uint64
	// SessionsRestored: sessions brought back from the store at a start
	// (saguin_sessions_restored_total).
	SessionsRestored atomic.Uint64
	// SessionsDroppedStorageFull: sessions that asked to outlive their
	// connection and were kept only as long as it
	// (saguin_sessions_dropped_total{cause="storage_full"}).
	SessionsDroppedStorageFull atomic.Uint64
	// SessionsExpiredWhileStopped: sessions whose expiry passed while the
	// broker was stopped, ended at the start
	// (saguin_sessions_dropped_total{cause="expired_while_stopped"}).
	SessionsExpiredWhileStopped atomic.Uint64
	// SessionsDroppedSubscriptionRefused: sessions ended at a start because
	// they held a subscription the rules now refuse - a channel that became
	// a queue, most often
	// (saguin_sessions_dropped_total{cause="subscription_refused"}).
	SessionsDroppedSubscriptionRefused atomic.Uint64
	// SessionExpiryShortened: restored sessions whose expiry was above
	// limits.max_session_expiry as it stands now
	// (saguin_session_expiry_shortened_total).
	SessionExpiryShortened atomic.Uint64
	// WillsPublished: Wills that went out, by what made each due
	// (saguin_wills_published_total{cause}, indexed by WillCause).
	WillsPublished [willCauses]atomic.Uint64
	// WillsCancelled: Wills a client cancelled by resuming its session
	// before they went out [MQTT-3.1.3-9] (saguin_wills_cancelled_total).
	WillsCancelled atomic.Uint64
	// PublishRefused: publishes refused, by the code answered - 0x97 split
	// into publish rate exceeded and inflight allowance exceeded - QoS 0
	// ones included and the $SYS refusal left out, as RFC 0005 says
	// (saguin_publish_refused_total{reason}).
	PublishRefused delivery.ReasonCounts
	// Subscriptions: the filters every session holds, plain and shared
	// (saguin_subscriptions).
	Subscriptions atomic.Int64
	// BroadcastUnmatched: publishes no subscription matched
	// (saguin_broadcast_unmatched_total).
	BroadcastUnmatched atomic.Uint64
	// DeliveriesDroppedQueue: broadcast-log messages an away session lost
	// to limits.session_queue_bytes
	// (saguin_session_deliveries_dropped_total{cause="session_queue"}).
	DeliveriesDroppedQueue atomic.Uint64
	// DeliveriesDroppedStorageFull: messages an away session was owed that
	// the provider had no room to keep
	// (saguin_session_deliveries_dropped_total{cause="storage_full"}).
	DeliveriesDroppedStorageFull atomic.Uint64
	// DeliveriesExpired: owed messages whose Message Expiry ran out before
	// the session reached them (saguin_deliveries_expired_total).
	DeliveriesExpired atomic.Uint64
	// QoS2Held: exactly-once publishes between PUBREC and PUBREL
	// (saguin_qos2_held).
	QoS2Held atomic.Int64
	// QoS2Abandoned: holds dropped past expires_after, with their session,
	// or at a start for a session that did not come back
	// (saguin_qos2_abandoned_total).
	QoS2Abandoned atomic.Uint64
	// SharesDroppedNoMember: shared deliveries no member could take, in a
	// group with no member whose session outlives its connection, or
	// returned by an ending member and taken by no other
	// (saguin_session_deliveries_dropped_total{cause="no_shared_member"}).
	SharesDroppedNoMember atomic.Uint64
	// SharesDroppedNotAuthorized: shared deliveries the acl_file let none of
	// the group's members read (saguin_shares_dropped_total{cause="not_authorized"}).
	SharesDroppedNotAuthorized atomic.Uint64
	// SharesHeld: deliveries put on a shared group's list, at a publish
	// nobody could take or at a start (saguin_shares_held_total).
	SharesHeld atomic.Uint64
	// SharesDrained: deliveries a group's list handed to a member
	// (saguin_shares_drained_total).
	SharesDrained atomic.Uint64
	// SharesDroppedBacklogFull: a group's oldest held delivery given up at
	// limits.session_queue_bytes
	// (saguin_shares_dropped_total{cause="backlog_full"}).
	SharesDroppedBacklogFull atomic.Uint64
	// SharesDroppedNoMemberLeft: what a group held when its last member
	// left it (saguin_shares_dropped_total{cause="no_member_left"}).
	SharesDroppedNoMemberLeft atomic.Uint64
	// SharesDroppedExpired: held past broker.share.expires_after
	// (saguin_shares_dropped_total{cause="expired"}).
	SharesDroppedExpired atomic.Uint64
	// SharesDroppedStorageFull: a delivery a group was owed that the
	// broadcast log's provider had no room to keep, that went from the log's
	// oldest part to make room, or that an ending member gave back and found
	// no room even in the reserve
	// (saguin_shares_dropped_total{cause="storage_full"}).
	SharesDroppedStorageFull atomic.Uint64
	// SharesDroppedMemberEnded: QoS 2 shared deliveries whose member ended
	// before its PUBREC, never handed to another (saguin_shares_dropped_total{cause="member_ended"}).
	SharesDroppedMemberEnded atomic.Uint64
	// LogMessages and LogBytes are what the broadcast log holds
	// (saguin_session_queue_messages, saguin_session_queue_bytes).
	LogMessages atomic.Int64
	LogBytes    atomic.Int64
}

// WillCause is what made a Will due: the cause label of
// saguin_wills_published_total.
type WillCause uint8

const (
	// WillImmediate: a connection ended without DISCONNECT and no Will
	// Delay Interval, or was taken over.
	WillImmediate WillCause = iota
	// WillDelayed: its Will Delay Interval ran out.
	WillDelayed
	// WillSessionEnded: its session ended while the Will was still due.
	WillSessionEnded
	// WillStart: found owed when the broker started.
	WillStart
	willCauses
)

// String is the cause label as RFC 0005 writes it.
func (w WillCause) String() string {
	return [...]string{"immediate", "delayed", "session_ended", "start"}[w]
}

func (c *Counters) sessionStorageError() {
	c.StorageErrors.Add(1)
	c.SessionStorageErrors.Add(1)
}

func (c *Counters) retainedStorageError() {
	c.StorageErrors.Add(1)
	c.RetainedStorageErrors.Add(1)
}

// Counters are the broker's counters, for the metrics to read.
func (b *Broker) Counters() *Counters { return b.counters }

// StoreHooks are the store hooks that count into c: storage failures the
// providers meet on their own (a periodic flush) and exactly-once holds a
// provider abandons at load.
func StoreHooks(c *Counters) store.Hooks {
	return store.Hooks{
		StorageError:  func(error) { c.StorageErrors.Add(1) },
		HoldAbandoned: func(_ string, n int) { c.QoS2Abandoned.Add(uint64(n)) },
	}
}
