package netloop

import (
	"sync/atomic"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

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
	ConnectionsRefused delivery.ReasonCounts
	// SubscriptionsRefused: topic filters a SUBACK refused, by the code
	// decided for each, counted before a 3.1.1 client's is written as 0x80
	// (saguin_subscriptions_refused_total{reason}).
	SubscriptionsRefused delivery.ReasonCounts
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
	// CallsOffLoop: handler calls run off the event loop because the
	// handler said they may wait on storage (Handler.Waits), each a
	// goroutine and a hand-over the loop would otherwise not pay; what a
	// publish that stores nothing costs on a disk provider shows here.
	CallsOffLoop atomic.Uint64
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

// refusal reports whether a connection the broker ends with reason was
// ended for a refusal, and so is a refused connection. Taken over,
// stopping, an operator's hang up and a keepalive that ran out are not
// refusals.
func refusal(reason codec.ReasonCode) bool {
	switch reason {
	case codec.Success, codec.SessionTakenOver, codec.ServerShuttingDown, codec.AdministrativeAction, codec.KeepAliveTimeout:
		return false
	}
	return true
}

// refused counts c as a refused connection under reason and tells
// Options.OnConnectRefused who it was: clientID (empty before the CONNECT
// named one) and the user name the CONNECT gave.
func (c *Conn) refused(reason delivery.Reason, clientID string) {
	c.srv.counters.ConnectionsRefused.Add(reason)
	if f := c.srv.opts.OnConnectRefused; f != nil {
		f(clientID, c.user, reason)
	}
}
