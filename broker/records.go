package broker

import (
	"github.com/saguin-edge/saguin/broker/ledger"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// The broker's two bounded records for the operations listener (RFC 0005
// "What the /v1 routes answer with"): who was refused and whose position
// retention passed. In memory, emptied by a restart, like the counters
// beside them.

// Refusals is the record behind /v1/operations/refused.
func (b *Broker) Refusals() *ledger.Refusals { return b.refusals }

// Losses is the record behind /v1/operations/position-lost.
func (b *Broker) Losses() *ledger.Losses { return b.losses }

// ConnectRefused records a refused connection at the broker's clock: the
// netloop.Options.OnConnectRefused hook.
func (b *Broker) ConnectRefused(clientID, user string, reason delivery.Reason) {
	b.refusals.Note(clientID, user, reason.String(), b.now())
}

// PositionLost records that the retention floor passed reader's position on
// channel, at the broker's clock; kind is ledger.KindConsumer,
// KindSession or KindBridge, reported whether the reader was told.
func (b *Broker) PositionLost(reader, channel, kind string, reported bool, position, floor uint64) {
	b.losses.Note(reader, channel, kind, reported, position, floor, b.now())
}

// Connected reports whether clientID's session has a connection now: what
// /v1/operations/consumers reads a reader's last_seen from (now while it is
// connected, its position's last write while it is away).
func (b *Broker) Connected(clientID string) bool {
	return host{b: b}.Client(clientID) != nil
}
