package netloop

import (
	"bytes"
	"strings"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// onPacket handles one packet of a connected client.
func (c *Conn) onPacket(h codec.Header, body []byte, sc *scratch) {
	v := c.Version()
	switch h.Type {
	case codec.TypePublish:
		c.onPublish(h, body, sc)
	case codec.TypePuback, codec.TypePubrec, codec.TypePubrel, codec.TypePubcomp:
		a := &sc.ack
		if err := a.Decode(h, body, v); err != nil {
			c.protocolFault(err, sc)
			return
		}
		c.onAck(a, sc)
	case codec.TypeSubscribe:
		c.onSubscribe(h, body, sc)
	case codec.TypeUnsubscribe:
		c.onUnsubscribe(h, body, sc)
	case codec.TypePingreq:
		if len(body) != 0 || h.Flags != 0 {
			c.protocolFault(&codec.Error{Code: codec.MalformedPacket, Rule: "PINGREQ carries flags or a body"}, sc)
			return
		}
		sc.out = append(sc.out, 0xD0, 0x00)
	case codec.TypeDisconnect:
		c.onDisconnect(h, body, sc)
	case codec.TypeConnect:
		c.protocolFault(&codec.Error{Code: codec.ProtocolError, Rule: "a second CONNECT (MQTT-3.1.0-2)"}, sc)
	case codec.TypeAuth:
		if v == codec.Version5 {
			c.protocolFault(&codec.Error{Code: codec.ProtocolError, Rule: "AUTH: no connection here has an authentication method"}, sc)
			return
		}
		c.protocolFault(&codec.Error{Code: codec.MalformedPacket, Rule: "packet type 15 is reserved in MQTT 3.1.1"}, sc)
	case 0:
		c.protocolFault(&codec.Error{Code: codec.MalformedPacket, Rule: "packet type 0 is reserved"}, sc)
	default:
		c.protocolFault(&codec.Error{Code: codec.ProtocolError, Rule: h.Type.String() + " is not sent by a client"}, sc)
	}
}

// protocolFault ends a connection over a packet that broke a rule: an MQTT 5
// client is sent DISCONNECT with the rule's code, a 3.1.1 one is closed,
// having no code to be told.
func (c *Conn) protocolFault(err error, sc *scratch) {
	code := codec.MalformedPacket
	rule := err.Error()
	if e := codec.AsError(err); e != nil {
		code, rule = e.Code, e.Rule
	}
	c.logWarn("disconnected: protocol violation", "code", "0x"+hex2(byte(code)), "rule", rule)
	c.flushScratch(sc) // answers already decided go first, in order
	c.lingering = true
	c.endWith(code, rule, true, false)
}

// onPublish resolves the topic alias, applies the inbound window and hands
// the publish to the handler, answering QoS 1 with PUBACK and QoS 2 with
// PUBREC.
func (c *Conn) onPublish(h codec.Header, body []byte, sc *scratch) {
	c.srv.counters.PublishesReceived.Add(1)
	v := c.Version()
	p := &sc.publish
	if err := p.Decode(h, body, v); err != nil {
		c.protocolFault(err, sc)
		return
	}
	// The codec reads the property in either direction; from a client it is
	// a Protocol Error.
	if v == codec.Version5 && p.Properties.Present.Has(codec.PropSubscriptionID) {
		c.protocolFault(&codec.Error{Code: codec.ProtocolError, Rule: "a client's PUBLISH carries a Subscription Identifier (MQTT-3.3.4-6)"}, sc)
		return
	}
	if v == codec.Version5 && p.Properties.Present.Has(codec.PropTopicAlias) {
		a := p.Properties.TopicAlias
		if a > TopicAliasMaximum {
			c.protocolFault(&codec.Error{Code: codec.TopicAliasInvalid, Rule: "Topic Alias above the advertised maximum of 16"}, sc)
			return
		}
		own := c.rareState()
		if own.aliases == nil {
			own.aliases = new([TopicAliasMaximum + 1][]byte)
		}
		if len(p.Topic) > 0 {
			// Registering copies the topic: the read buffer is reused. Bounded
			// at 16 x max_topic_length per connection (invariant 13).
			own.aliases[a] = append(own.aliases[a][:0], p.Topic...)
		} else if own.aliases[a] == nil {
			c.protocolFault(&codec.Error{Code: codec.ProtocolError, Rule: "Topic Alias this connection never registered"}, sc)
			return
		} else {
			p.Topic = own.aliases[a]
		}
	}
	switch p.QoS {
	case 0:
		if p.Retain && c.waits(delivery.CallPublish, p, delivery.Ref{}) {
			c.goWait(&pendingCall{kind: delivery.CallPublish, pub: p.Clone()})
			return
		}
		c.srv.opts.Handler.Publish(c, p)
	case 1:
		if c.run != nil {
			// Behind a publish that waits: answered in order with it.
			c.run.pubs = append(c.run.pubs, p.Clone())
			return
		}
		if c.waits(delivery.CallPublish, p, delivery.Ref{}) {
			pc := &pendingCall{kind: delivery.CallPublish, pub: p.Clone()}
			if _, ok := c.srv.opts.Handler.(RunPublisher); ok {
				pc.pubs = append(pc.pubs, pc.pub)
				c.run = pc
				return
			}
			c.goWait(pc)
			return
		}
		code, why := c.srv.opts.Handler.Publish(c, p)
		c.publishAnswered(sc, 1, p.PacketID, p.Topic, code, why)
	case 2:
		n, held := c.heldQoS2(p.PacketID)
		if !held && c.srv.opts.Handler.Holds(c, p.PacketID) {
			held = true // kept from an earlier connection of the session
		}
		if held {
			// A resent PUBLISH of an exchange already owned: answer again,
			// route nothing (MQTT 5 4.3.3).
			c.appendAck(sc, codec.TypePubrec, p.PacketID, codec.Success)
			return
		}
		if n >= c.srv.opts.ReceiveMaximum {
			c.protocolFault(&codec.Error{Code: codec.ReceiveMaximumExceeded, Rule: "more QoS 2 exchanges unfinished than the Receive Maximum the CONNACK gave (MQTT-3.3.4-7)"}, sc)
			return
		}
		if c.waits(delivery.CallPublish, p, delivery.Ref{}) {
			c.goWait(&pendingCall{kind: delivery.CallPublish, pub: p.Clone()})
			return
		}
		code, why := c.srv.opts.Handler.Publish(c, p)
		c.publishAnswered(sc, 2, p.PacketID, p.Topic, code, why)
	}
}

// publishAnswered answers a QoS 1 or 2 PUBLISH with the handler's code:
// PUBACK, or PUBREC owning the exchange. QoS 0 has nothing to answer.
func (c *Conn) publishAnswered(sc *scratch, qos byte, packetID uint16, topic []byte, code codec.ReasonCode, why string) {
	if qos == 0 {
		return
	}
	if bytes.HasPrefix(topic, []byte("$saguin/consumer/")) {
		// A seek's reply, which the handler wrote to this connection,
		// goes on the wire before the PUBACK (RFC 0003 "Stock-client
		// notes").
		c.flush()
	}
	v := c.Version()
	if code.IsError() && v != codec.Version5 {
		// 3.1.1's PUBACK and PUBREC have no code: a refusal closes the
		// connection rather than acknowledging a discarded record (RFC 0002).
		c.logWarn("closed: a 3.1.1 publish was refused", "code", "0x"+hex2(byte(code)), "topic", string(topic))
		c.refused(delivery.ReasonOf(code), c.ClientID())
		c.flushScratch(sc)
		c.end(0, false, false)
		return
	}
	if qos == 1 {
		c.appendAckWhy(sc, codec.TypePuback, packetID, code, why)
		return
	}
	if code.IsError() {
		c.appendAckWhy(sc, codec.TypePubrec, packetID, code, why)
		return
	}
	own := c.rareState()
	if own.heldQoS2 == nil {
		own.heldQoS2 = make(map[uint16]struct{})
	}
	own.heldQoS2[packetID] = struct{}{}
	c.appendAck(sc, codec.TypePubrec, packetID, codec.Success)
}

// onAck handles the client's side of the QoS 1 and 2 exchanges.
func (c *Conn) onAck(a *codec.Ack, sc *scratch) {
	f, ok := c.inflight[a.PacketID]
	switch a.Type {
	case codec.TypePuback:
		// Only a QoS 1 delivery ends on PUBACK; any other identifier is the
		// client's mistake and changes nothing.
		if ok && f.QoS == 1 {
			c.settle(a.PacketID, f)
		}
	case codec.TypePubrec:
		switch {
		case !ok || f.QoS != 2:
			if c.Version() == codec.Version5 {
				c.appendAck(sc, codec.TypePubrel, a.PacketID, codec.PacketIdentifierNotFound)
			}
		case a.ReasonCode.IsError():
			c.settle(a.PacketID, f) // the client refused the message: the exchange ends
		default:
			if f.Ref != (delivery.Ref{}) {
				if c.waits(delivery.CallReceived, nil, f.Ref) {
					c.goWait(&pendingCall{kind: delivery.CallReceived, ref: f.Ref, packetID: a.PacketID})
					return
				}
				c.receivedAnswered(sc, a.PacketID, c.srv.opts.Handler.Received(c, f.Ref, a.PacketID))
				return
			}
			c.receivedAnswered(sc, a.PacketID, true)
		}
	case codec.TypePubcomp:
		if ok && f.QoS == 2 && f.Released {
			c.settle(a.PacketID, f)
		}
	case codec.TypePubrel:
		if c.rare != nil {
			delete(c.rare.heldQoS2, a.PacketID)
		}
		if c.waits(delivery.CallRelease, nil, delivery.Ref{}) {
			c.goWait(&pendingCall{kind: delivery.CallRelease, packetID: a.PacketID})
			return
		}
		code, why := c.srv.opts.Handler.Release(c, a.PacketID)
		c.releaseAnswered(sc, a.PacketID, code, why)
	}
	// A window this opened is used by the flush that follows every OnData.
}

// receivedAnswered sends the PUBREL of a QoS 2 delivery whose PUBREC the
// handler stored (ok); one it could not store ends the connection with 0x80
// and no PUBREL (RFC 0003 "Outbound QoS 2").
func (c *Conn) receivedAnswered(sc *scratch, packetID uint16, ok bool) {
	if !ok {
		c.logWarn("disconnected: the PUBREC of a delivery could not be stored", "packet_id", packetID)
		c.flushScratch(sc)
		c.end(codec.UnspecifiedError, true, false)
		return
	}
	if f, ok := c.inflight[packetID]; ok && f.QoS == 2 {
		f.Released = true
		c.inflight[packetID] = f
	}
	c.appendAck(sc, codec.TypePubrel, packetID, codec.Success)
}

// releaseAnswered answers a PUBREL with PUBCOMP: Success, or 0x92 for nothing
// held. Any other code is a release refused: no PUBCOMP, the message stays
// held, and the client's PUBREL on its next connection completes it (RFC
// 0003 "Exactly once").
func (c *Conn) releaseAnswered(sc *scratch, packetID uint16, code codec.ReasonCode, why string) {
	if code != codec.Success && code != codec.PacketIdentifierNotFound {
		c.logWarn("disconnected: an exactly-once release was refused", "code", "0x"+hex2(byte(code)), "why", why)
		c.flushScratch(sc)
		c.end(code, true, false)
		return
	}
	c.appendAck(sc, codec.TypePubcomp, packetID, code)
}

// settle ends an outbound exchange and gives its window place back.
func (c *Conn) settle(id uint16, f inflight) {
	// Full as CanTake counts it: what is on the wire and what is queued fill
	// the client's Receive Maximum exactly, so taking one off the wire opens
	// the window.
	full := len(c.inflight)+c.out.len() == int(c.clientRecvMax)
	delete(c.inflight, id)
	c.onWire.Store(int32(len(c.inflight)))
	if len(c.inflight) == 0 {
		c.giveInflight()
	}
	c.inflightBytes -= f.size
	f.msg.Release()
	c.reportAcked(f)
	if full {
		c.srv.opts.Handler.Room(c)
	}
}

// reportAcked hands the delivery's Ref back to the handler when its exchange
// ended (PUBACK, PUBCOMP, or a PUBREC refusing it). The zero Ref asks for no
// report, so a delivery nobody numbered pays this one test.
func (c *Conn) reportAcked(f inflight) {
	if f.Ref == (delivery.Ref{}) {
		return
	}
	c.srv.opts.Handler.Acked(c, f.Ref)
}

func (c *Conn) appendAck(sc *scratch, t codec.Type, id uint16, code codec.ReasonCode) {
	c.appendAckWhy(sc, t, id, code, "")
}

// appendAckWhy is appendAck with a Reason String for a refusal.
func (c *Conn) appendAckWhy(sc *scratch, t codec.Type, id uint16, code codec.ReasonCode, why string) {
	a := &sc.ack
	a.Type, a.PacketID, a.ReasonCode = t, id, code
	a.Properties.Reset()
	c.reasonString(&a.Properties, code, why, false)
	sc.out = a.Append(sc.out, c.Version())
	a.Properties.Reset()
}

// reasonString puts why on an MQTT 5 refusal: always on a CONNACK or
// DISCONNECT (final), elsewhere only to a client that did not send Request
// Problem Information 0, and never where it would take the packet past the
// client's Maximum Packet Size (a reason string is at most 256 bytes here,
// and left off when that maximum is under 512).
func (c *Conn) reasonString(p *codec.Properties, code codec.ReasonCode, why string, final bool) {
	if why == "" || !code.IsError() || c.Version() != codec.Version5 {
		return
	}
	if !final && c.noProblemInfo {
		return
	}
	if c.clientMaxPkt != 0 && c.clientMaxPkt < 512 {
		return
	}
	if len(why) > 256 {
		why = why[:256]
	}
	p.ReasonString = append(p.ReasonString[:0], why...)
	p.Present.Set(codec.PropReasonString)
}

// onSubscribe answers each filter with the handler's code; a 3.1.1 client
// sees 0x80 for every refusal.
func (c *Conn) onSubscribe(h codec.Header, body []byte, sc *scratch) {
	v := c.Version()
	s := &sc.sub
	if err := s.Decode(h, body, v); err != nil {
		c.protocolFault(err, sc)
		return
	}
	if v == codec.Version5 && hasUnreadSubscribeProperty(&s.Properties) {
		// An instruction Sagüin does not understand is refused, and it is
		// the packet's, so every filter is (RFC 0003 "The reserved prefix on
		// a client's own packets").
		sa := &sc.suback
		sa.PacketID = s.PacketID
		sa.Properties.Reset()
		sa.ReasonCodes = sa.ReasonCodes[:0]
		for range s.Subscriptions {
			sa.ReasonCodes = append(sa.ReasonCodes, codec.ImplementationSpecificError)
			c.srv.counters.SubscriptionsRefused.Add(delivery.ReasonOf(codec.ImplementationSpecificError))
		}
		c.reasonString(&sa.Properties, codec.ImplementationSpecificError, "SUBSCRIBE carries a saguin- User Property Sagüin does not read", false)
		sc.out = sa.Append(sc.out, v)
		sa.Properties.Reset()
		c.logWarn("subscribe refused: a saguin- User Property Sagüin does not read", "code", "0x83")
		return
	}
	var subID uint32
	if ids := s.Properties.SubscriptionIDs; len(ids) > 0 {
		subID = ids[0]
	}
	if v != codec.Version5 {
		for _, f := range s.Subscriptions {
			if topic.ValidateFilter(string(f.Filter)) != nil {
				// 3.1.1 has no code for a string that is not a filter at
				// all; the packet is refused whole, before any filter of it
				// is granted.
				c.protocolFault(&codec.Error{Code: codec.TopicFilterInvalid, Rule: "a 3.1.1 SUBSCRIBE carries a malformed filter (MQTT-4.7.1-1, -2)"}, sc)
				return
			}
		}
	}
	user := s.Properties.User
	optionsOf := func(i int) delivery.SubscribeOptions {
		f := &s.Subscriptions[i]
		return delivery.SubscribeOptions{QoS: f.QoS, NoLocal: f.NoLocal, RetainAsPublished: f.RetainAsPublished,
			RetainHandling: f.RetainHandling, SubscriptionID: subID, User: user, More: i < len(s.Subscriptions)-1}
	}
	if c.waits(delivery.CallSubscribe, nil, delivery.Ref{}) {
		// The call outlives the read buffer the properties alias.
		user = cloneUser(user)
		pc := &pendingCall{kind: delivery.CallSubscribe, packetID: s.PacketID}
		for i := range s.Subscriptions {
			f := &s.Subscriptions[i]
			pc.filters = append(pc.filters, bytes.Clone(f.Filter))
			pc.opts = append(pc.opts, optionsOf(i))
		}
		c.goWait(pc)
		return
	}
	var refused []string
	sa := &sc.suback
	sa.ReasonCodes = sa.ReasonCodes[:0]
	for i := range s.Subscriptions {
		f := &s.Subscriptions[i]
		code, why := c.srv.opts.Handler.Subscribe(c, f.Filter, optionsOf(i))
		if code.IsError() && why != "" {
			refused = append(refused, string(f.Filter)+": "+why)
		}
		sa.ReasonCodes = append(sa.ReasonCodes, code)
	}
	c.subscribeAnswered(sc, s.PacketID, refused)
}

// cloneUser copies User Properties out of the read buffer; nil for none.
func cloneUser(u []codec.UserProperty) []codec.UserProperty {
	if len(u) == 0 {
		return nil
	}
	out := make([]codec.UserProperty, len(u))
	for i := range u {
		out[i] = codec.UserProperty{Key: bytes.Clone(u[i].Key), Value: bytes.Clone(u[i].Value)}
	}
	return out
}

// subscribeAnswered writes the SUBACK carrying the codes in sc.suback, a
// 3.1.1 client seeing 0x80 for every refusal, and why to an MQTT 5 one.
func (c *Conn) subscribeAnswered(sc *scratch, packetID uint16, refused []string) {
	v := c.Version()
	sa := &sc.suback
	sa.PacketID = packetID
	sa.Properties.Reset()
	for i, code := range sa.ReasonCodes {
		if code.IsError() {
			c.srv.counters.SubscriptionsRefused.Add(delivery.ReasonOf(code)) // before 3.1.1's 0x80 hides it
			if v != codec.Version5 {
				sa.ReasonCodes[i] = codec.SubackFailure311
			}
		}
	}
	if len(refused) > 0 {
		c.reasonString(&sa.Properties, codec.UnspecifiedError, strings.Join(refused, "; "), false)
	}
	sc.out = sa.Append(sc.out, v)
	sa.Properties.Reset()
}

func (c *Conn) onUnsubscribe(h codec.Header, body []byte, sc *scratch) {
	v := c.Version()
	u := &sc.unsub
	if err := u.Decode(h, body, v); err != nil {
		c.protocolFault(err, sc)
		return
	}
	// An unread saguin- property does not stop an UNSUBSCRIBE (refusing
	// would leave the client subscribed to what it asked to stop); it is
	// named back as saguin-unread to a client that wants problems reported,
	// never echoed as itself (RFC 0003).
	var unread [][]byte
	for _, up := range u.Properties.User {
		if !bytes.HasPrefix(up.Key, []byte("saguin-")) {
			continue
		}
		c.logWarn("unsubscribe carried a saguin- User Property Sagüin does not read", "property", string(up.Key))
		if !c.noProblemInfo {
			unread = append(unread, up.Key)
		}
	}
	if c.waits(delivery.CallUnsubscribe, nil, delivery.Ref{}) {
		pc := &pendingCall{kind: delivery.CallUnsubscribe, packetID: u.PacketID}
		for _, f := range u.Filters {
			pc.filters = append(pc.filters, bytes.Clone(f))
		}
		for _, k := range unread {
			pc.unread = append(pc.unread, bytes.Clone(k))
		}
		c.goWait(pc)
		return
	}
	ua := &sc.unsuback
	ua.ReasonCodes = ua.ReasonCodes[:0]
	for _, f := range u.Filters {
		ua.ReasonCodes = append(ua.ReasonCodes, c.srv.opts.Handler.Unsubscribe(c, f))
	}
	c.unsubscribeAnswered(sc, u.PacketID, unread)
}

// unsubscribeAnswered writes the UNSUBACK carrying the codes in
// sc.unsuback, naming back the saguin- properties it did not read.
func (c *Conn) unsubscribeAnswered(sc *scratch, packetID uint16, unread [][]byte) {
	ua := &sc.unsuback
	ua.PacketID = packetID
	ua.Properties.Reset()
	for _, k := range unread {
		ua.Properties.AddUser([]byte("saguin-unread"), k)
		ua.Properties.Present.Set(codec.PropUserProperty)
	}
	sc.out = ua.Append(sc.out, c.Version())
	ua.Properties.Reset()
}

// onDisconnect ends the connection at the client's word. MQTT 5 lets it change
// its Session Expiry as it leaves, except from 0 to anything else, a protocol
// error; a value above max_session_expiry is kept at the cap, untold (RFC
// 0002 "max_session_expiry").
func (c *Conn) onDisconnect(h codec.Header, body []byte, sc *scratch) {
	v := c.Version()
	d := &sc.disc
	if err := d.Decode(h, body, v); err != nil {
		c.protocolFault(err, sc)
		return
	}
	if v == codec.Version5 && d.Properties.Present.Has(codec.PropSessionExpiry) {
		if c.sessionExpiry == 0 && d.Properties.SessionExpiry != 0 {
			c.protocolFault(&codec.Error{Code: codec.ProtocolError, Rule: "DISCONNECT sets a Session Expiry Interval on a session that had 0 (MQTT-3.14.2-2)"}, sc)
			return
		}
		c.sessionExpiry = min(d.Properties.SessionExpiry, uint32(min(c.srv.opts.MaxSessionExpiry.Seconds(), 1<<32-1)))
	}
	c.flushScratch(sc)
	graceful := d.ReasonCode == codec.NormalDisconnection
	if c.attached {
		// The connection closes only once the handler has stored what the
		// client acknowledged (Leaving): off the loop when that waits on a
		// disk, the connection reading nothing more meanwhile.
		if c.waits(delivery.CallDisconnect, nil, delivery.Ref{}) {
			c.goWait(&pendingCall{kind: delivery.CallDisconnect, reason: d.ReasonCode, graceful: graceful})
			return
		}
		c.srv.opts.Handler.Leaving(c, c.sessionExpiry, graceful)
	}
	c.disconnected(d.ReasonCode, graceful)
}

// disconnected ends the connection as a client's DISCONNECT with reason
// asks, once the handler has stored what it must first.
func (c *Conn) disconnected(reason codec.ReasonCode, graceful bool) {
	c.end(0, false, graceful)
	c.logInfo("disconnected by the client", "reason", reason.String())
}
