package netloop

import (
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// NopHandler is a Handler that accepts everything, keeps nothing and waits
// on nothing: a test's handler embeds it and writes only the calls it
// watches.
type NopHandler struct{}

func (NopHandler) Connect(delivery.Client, *ConnectRequest) (bool, codec.ReasonCode) {
	return false, codec.Success
}
func (NopHandler) Publish(delivery.Client, *codec.Publish) (codec.ReasonCode, string) {
	return codec.Success, ""
}
func (NopHandler) Subscribe(_ delivery.Client, _ []byte, o delivery.SubscribeOptions) (codec.ReasonCode, string) {
	return codec.ReasonCode(o.QoS), ""
}
func (NopHandler) Unsubscribe(delivery.Client, []byte) codec.ReasonCode { return codec.Success }
func (NopHandler) Disconnected(delivery.Client, uint32, bool)           {}
func (NopHandler) Leaving(delivery.Client, uint32, bool)                {}
func (NopHandler) Holds(delivery.Client, uint16) bool                   { return false }
func (NopHandler) Release(delivery.Client, uint16) (codec.ReasonCode, string) {
	return codec.Success, ""
}
func (NopHandler) Received(delivery.Client, delivery.Ref, uint16) bool { return true }
func (NopHandler) Acked(delivery.Client, delivery.Ref)                 {}
func (NopHandler) Room(delivery.Client)                                {}
func (NopHandler) Unfinished(delivery.Client, []delivery.Unfinished)   {}
func (NopHandler) Waits(delivery.Client, delivery.Call, *codec.Publish, delivery.Ref) bool {
	return false
}
