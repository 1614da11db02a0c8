package broker

import "github.com/saguin-edge/saguin/netloop/delivery"

// logRef names a broadcast delivery for its acknowledgement: offset is its
// place in the broadcast log (0 for one handed from memory), group the
// shared group that handed it over ("" for none). netloop hands it back
// unread on the client's PUBACK, PUBREC and PUBCOMP.
func logRef(offset uint64, group string) delivery.Ref {
	return delivery.Ref{Kind: delivery.KindBroadcast, N: offset, Name: group}
}
