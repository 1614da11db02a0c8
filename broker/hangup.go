package broker

import (
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// HangUpTopic is where a client asks the broker to end another client's
// connection (RFC 0002 "Hanging up a client: broker: sessions").
const HangUpTopic = topic.SaguinPrefix + "sessions/disconnect"

// The two replies: the target was connected and its DISCONNECT is on its
// way, or nothing is connected under that id.
const (
	replyHungUp       = "hung-up"
	replyNoSuchClient = "no-such-client"
)

// hangUp answers a publish to $saguin/sessions/disconnect: the payload is the
// client id to hang up, the reply goes to the Response Topic on the asking
// connection. The target is sent DISCONNECT 0x98 (3.1.1: closed) and its
// session is left as it is - the device reconnects and resumes; it costs it
// one reconnection. A refusal at QoS 0 has nothing to be carried on and is
// dropped, as the reserved space drops every one.
func (b *Broker) hangUp(c delivery.Client, p *codec.Publish) (codec.ReasonCode, string) {
	id := c.ClientID()
	if c.Version() != codec.Version5 {
		// The request needs a Response Topic, which 3.1.1 does not have:
		// the refusal ends the asking connection, never the one named.
		b.log.Warn("closed: $saguin/sessions/disconnect from a 3.1.1 client, which has no Response Topic to be answered on", "client_id", id)
		c.Kick(codec.NotAuthorized)
		return codec.ImplementationSpecificError, "a 3.1.1 client cannot ask for a hang-up"
	}
	if a := b.access.Load(); a != nil && a.ACL != nil {
		if !b.grantsFor(b.whoOf(c), id).MayHangUp() {
			return b.refusePublish(id, p, codec.NotAuthorized, "the acl_file grants this client no broker: sessions disconnect")
		}
	}
	target := string(p.Payload)
	switch {
	case len(p.Properties.ResponseTopic) == 0:
		return b.refusePublish(id, p, codec.ImplementationSpecificError, "no Response Topic to answer on: nothing is hung up")
	case target == "":
		return b.refusePublish(id, p, codec.ImplementationSpecificError, "the payload names no client id")
	case target == id:
		return b.refusePublish(id, p, codec.ImplementationSpecificError, "a client cannot hang itself up: it can send DISCONNECT")
	}
	reply := replyNoSuchClient
	sh := b.shard(target)
	sh.mu.Lock()
	var victim delivery.Client
	if s := sh.sessions[target]; s != nil {
		if ref := s.client.Load(); ref != nil {
			victim = ref.c
		}
	}
	sh.mu.Unlock()
	if victim != nil {
		// Kick does not wait on the stranger's socket: the connection ends
		// within limits.write_timeout whether or not it is still reading.
		victim.Kick(codec.AdministrativeAction)
		reply = replyHungUp
		b.log.Info("client hung up", "client_id", target, "by", id)
	}
	answer := codec.Publish{Topic: p.Properties.ResponseTopic, Payload: []byte(reply)}
	if p.Properties.Present.Has(codec.PropCorrelationData) {
		answer.Properties.CorrelationData = p.Properties.CorrelationData
		answer.Properties.Present.Set(codec.PropCorrelationData)
	}
	m := delivery.AcquireMessage(&answer, b.now)
	c.Deliver(m, delivery.Delivery{})
	m.Release()
	return codec.Success, ""
}
