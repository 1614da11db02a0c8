package broker

import "github.com/saguin-edge/saguin/netloop/delivery"

// logRef names a broadcast delivery for its acknowledgement: offset is its
// place in the broadcast log (0 for one handed from memory), group the
// shared group that handed it over ("" for none). netloop hands it back
// unread on the client's PUBACK, PUBREC and PUBCOMP.
func logRef(offset uint64, group string) delivery.Ref {
	return delivery.Ref{Kind: delivery.KindBroadcast, N: offset, Name: group}
}

// passRef names a retained pass's QoS 1 or 2 delivery from memory (N 0, no
// group): Attempt carries its size, so that its acknowledgement gives the
// pass that much room back (retainedSender.acked). No other broadcast
// delivery from memory outside a group asks for a report.
func passRef(size int64) delivery.Ref {
	return delivery.Ref{Kind: delivery.KindBroadcast, Attempt: uint32(min(size, 1<<31))}
}
