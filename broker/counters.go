package broker

import (
	"sync/atomic"

	"saguin/store"
)

// Counters are what the broker counts for RFC 0005's metrics about sessions,
// the broadcast log, retained values and Wills. The metrics listener reads
// them; nothing here formats them.
type Counters struct {
	// StorageErrors: a store call failed (saguin_storage_errors_total).
	StorageErrors atomic.Uint64
	// ConnectionsRefusedStoreFull: a CONNECT whose Will the session store
	// had no room for (saguin_connections_refused_total{reason="session store full"}).
	ConnectionsRefusedStoreFull atomic.Uint64
	// SessionsRestored: sessions brought back from the store at a start
	// (saguin_sessions_restored_total).
	SessionsRestored atomic.Uint64
	// SessionsDroppedStorageFull: sessions that asked to outlive their
	// connection and were kept only as long as it
	// (saguin_sessions_dropped_total{cause="storage_full"}).
	SessionsDroppedStorageFull atomic.Uint64
	// SessionsExpired: sessions ended because their expiry passed, at a
	// start or while running (saguin_sessions_dropped_total{cause="expired"}).
	SessionsExpired atomic.Uint64
	// SessionExpiryShortened: restored sessions whose expiry was above
	// limits.max_session_expiry as it stands now
	// (saguin_session_expiry_shortened_total).
	SessionExpiryShortened atomic.Uint64
	// WillsPublished: Wills that went out (saguin_wills_published_total).
	WillsPublished atomic.Uint64
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
	// group with no member whose session outlives its connection, or held
	// past broker.share.expires_after
	// (saguin_session_deliveries_dropped_total{cause="no_shared_member"}).
	SharesDroppedNoMember atomic.Uint64
	// SharesDroppedMemberEnded: QoS 2 shared deliveries whose member ended
	// before its PUBREC, never handed to another (saguin_shares_dropped_total{cause="member_ended"}).
	SharesDroppedMemberEnded atomic.Uint64
	// SharesDroppedStorageFull: what shared groups were owed from the
	// broadcast log's oldest part when a full provider let it go, and
	// deliveries an ending member returned that found no room even in the
	// reserve (saguin_shares_dropped_total{cause="storage_full"}).
	SharesDroppedStorageFull atomic.Uint64
	// LogMessages and LogBytes are what the broadcast log holds
	// (saguin_session_queue_messages, saguin_session_queue_bytes).
	LogMessages atomic.Int64
	LogBytes    atomic.Int64
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
