package netloop

import (
	"strings"
	"sync/atomic"

	"github.com/saguin-edge/saguin/codec"
)

// Reason is a label of RFC 0005's refusal counters
// (saguin_connections_refused_total, saguin_publish_refused_total,
// saguin_subscriptions_refused_total): an MQTT reason code, or one of the
// splits RFC 0005 makes of 0x97 so that "am I throttling my own devices" and
// "is something full" read apart. The set is closed - 256 codes and the
// splits - so no client-chosen string ever becomes a series.
type Reason uint16

// The splits of 0x97 Quota exceeded.
const (
	// ReasonPublishRateExceeded: a publish over limits.publish_rate or
	// limits.publish_bytes.
	ReasonPublishRateExceeded Reason = 256 + iota
	// ReasonInflightAllowanceExceeded: a QoS 2 publish from a client
	// already holding broker.qos2.max_inflight_per_client exchanges.
	ReasonInflightAllowanceExceeded
	// ReasonSessionStoreFull: a CONNECT refused 0x97, which at CONNECT is
	// always the session store having no room (a Will, a group's cursor).
	ReasonSessionStoreFull
	reasonCount
)

// ReasonOf is the label of a plain reason code.
func ReasonOf(code codec.ReasonCode) Reason { return Reason(code) }

// String is the label's text: the MQTT specification's name for the code, in
// lower case as RFC 0005 writes them ("not authorized"), or the split's name.
func (r Reason) String() string {
	switch r {
	case ReasonPublishRateExceeded:
		return "publish rate exceeded"
	case ReasonInflightAllowanceExceeded:
		return "inflight allowance exceeded"
	case ReasonSessionStoreFull:
		return "session store full"
	}
	return strings.ToLower(codec.ReasonCode(r).String())
}

// ReasonCounts counts by Reason: a fixed array, so counting is one atomic
// add at an index - no map, no lock on the path that counts.
type ReasonCounts [reasonCount]atomic.Uint64

// Add counts one refusal for r.
func (rc *ReasonCounts) Add(r Reason) { rc[r].Add(1) }

// Load is the count for r.
func (rc *ReasonCounts) Load(r Reason) uint64 { return rc[r].Load() }

// Each calls fn for every reason counted at least once, in code order: a
// refusal nobody has been answered with has no series (RFC 0005).
func (rc *ReasonCounts) Each(fn func(r Reason, n uint64)) {
	for i := range rc {
		if n := rc[i].Load(); n > 0 {
			fn(Reason(i), n)
		}
	}
}

// Counters are what netloop counts for RFC 0005's metrics - what the wire and
// the connections see. The metrics listener reads them (Server.Counters);
// nothing here formats them. Every field is advanced with one atomic add
// where its event happens.
type Counters struct {
	// Connections: connections whose CONNECT was accepted and that have not
	// ended (saguin_connections).
	Connections atomic.Int64
	// ConnectionsTotal: CONNECTs accepted since start, CONNACK 0x00
	// (saguin_connections_total).
	ConnectionsTotal atomic.Uint64
	// ConnectionsRefused: CONNECTs refused, connections ended for a
	// refusal (a server DISCONNECT naming an error, a 3.1.1 connection
	// closed for a refused publish), and sockets closed for want of a
	// max_connections slot (server busy), by the MQTT 5 code decided -
	// whatever the client's protocol was told
	// (saguin_connections_refused_total{reason}).
	ConnectionsRefused ReasonCounts
	// SubscriptionsRefused: topic filters a SUBACK refused, by the code
	// decided for each, counted before a 3.1.1 client's is written as 0x80
	// (saguin_subscriptions_refused_total{reason}).
	SubscriptionsRefused ReasonCounts
	// BytesReceived and BytesSent: every byte read from and handed to an
	// MQTT connection (saguin_bytes_received_total, saguin_bytes_sent_total).
	BytesReceived atomic.Uint64
	BytesSent     atomic.Uint64
	// PublishesReceived: PUBLISH packets clients sent, refused ones
	// included (saguin_publishes_received_total).
	PublishesReceived atomic.Uint64
	// DeliveriesSent: PUBLISH packets written to subscribers, re-sends
	// included (saguin_deliveries_sent_total).
	DeliveriesSent atomic.Uint64
	// DeliveriesDropped: QoS 0 deliveries discarded because the client's
	// outbound queue was full (saguin_deliveries_dropped_total).
	DeliveriesDropped atomic.Uint64
	// DeliveriesDroppedQueue: QoS 1 and 2 deliveries not yet written that a
	// connection's outbound queue let go, oldest first, to stay inside
	// limits.session_queue_bytes
	// (saguin_session_deliveries_dropped_total{cause="session_queue_full"},
	// beside the broker's count of the same cause).
	DeliveriesDroppedQueue atomic.Uint64
	// DeliveriesTooLarge: deliveries larger than the client's Maximum
	// Packet Size, discarded as if delivered [MQTT-3.1.2-25]
	// (saguin_session_deliveries_dropped_total{cause="too_large"}).
	DeliveriesTooLarge atomic.Uint64
	// DeliveriesExpired: deliveries whose Message Expiry ran out while
	// they waited in a connection's queue, not sent
	// (saguin_deliveries_expired_total, beside the broker's count).
	DeliveriesExpired atomic.Uint64
	// SessionExpiryShortened: CONNECTs that asked for a Session Expiry
	// Interval above limits.max_session_expiry and were given the cap
	// (saguin_session_expiry_shortened_total, beside the broker's count of
	// restored sessions capped).
	SessionExpiryShortened atomic.Uint64
}

// Counters are the server's counters, for the metrics to read.
func (s *Server) Counters() *Counters { return &s.counters }

// ConnectedByProtocol counts the connections whose CONNECT was accepted by
// the protocol each spoke, from the connection table rather than by
// increments, so it cannot drift (saguin_connections_by_protocol). It walks
// every connection: a scrape's cost, never the hot path's.
func (s *Server) ConnectedByProtocol() (v311, v5 int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.state.Load() != stateConnected {
			continue
		}
		if c.Version() == codec.Version5 {
			v5++
		} else {
			v311++
		}
	}
	return v311, v5
}

// countEnd counts a connection the broker ends with reason: one ended for a
// refusal is a refused connection. Taken over, stopping, an operator's hang
// up and a keepalive that ran out are not refusals.
func (cs *Counters) countEnd(reason codec.ReasonCode) {
	switch reason {
	case codec.Success, codec.SessionTakenOver, codec.ServerShuttingDown, codec.AdministrativeAction, codec.KeepAliveTimeout:
		return
	}
	cs.ConnectionsRefused.Add(ReasonOf(reason))
}
