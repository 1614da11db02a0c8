package netloop

import (
	"bytes"
	"strconv"
	"strings"
	"time"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// connack311Version is the CONNACK refusing an unacceptable protocol version
// in 3.1 and 3.1.1's own vocabulary (return code 0x01; both protocols share
// the packet's shape).
var connack311Version = []byte{0x20, 2, 0x00, 0x01}

// refuseHeader answers a CONNECT whose fixed header was refused before its
// body was read: one declaring more than max_connect_size is answered 0x95
// when it says it speaks MQTT 5, and closed with nothing written otherwise
// (RFC 0002 "The largest CONNECT before authentication"); anything else is
// closed with nothing written. It returns false when the protocol level has
// not arrived yet and the caller must wait for it; those bytes are bounded.
func (c *Conn) refuseHeader(buf []byte, h codec.Header, err error, sc *scratch) bool {
	e := codec.AsError(err)
	if e == nil || e.Code != codec.PacketTooLarge || h.Type != codec.TypeConnect {
		c.logWarn("closed: unreadable bytes before CONNECT", "error", err)
		c.end(0, false, false)
		return true
	}
	// Protocol name (2+4 bytes) and level follow the fixed header.
	need := h.HeaderLen + 7
	if len(buf) < need {
		return false
	}
	name, level := buf[h.HeaderLen:h.HeaderLen+6], buf[h.HeaderLen+6]
	if bytes.Equal(name, []byte("\x00\x04MQTT")) && level == codec.Version5 {
		c.version.Store(codec.Version5)
		c.refuse(codec.Version5, delivery.ReasonOf(codec.PacketTooLarge), codec.PacketTooLarge, sc, "CONNECT declares more than limits.max_connect_size")
		return true
	}
	c.logWarn("closed: CONNECT declares more than limits.max_connect_size", "declared", h.Total(), "limit", c.srv.opts.MaxConnectSize)
	c.end(0, false, false)
	return true
}

// onConnect answers a CONNECT: every refusal of RFC 0002 "Every reason code,
// in one place" that is netloop's to make, then the handler's, then the
// CONNACK with the properties "what the CONNACK promises when it says yes".
func (c *Conn) onConnect(h codec.Header, body []byte, sc *scratch) {
	o := &c.srv.opts
	cp := &sc.connect
	if err := cp.Decode(h, body, 0); err != nil {
		e := codec.AsError(err)
		switch cp.Version {
		case codec.Version5:
			c.version.Store(codec.Version5)
			code := codec.MalformedPacket
			if e != nil {
				code = e.Code
			}
			c.refuse(codec.Version5, delivery.ReasonOf(code), code, sc, err.Error())
		case codec.Version31:
			c.refuseRaw(connack311Version, "MQTT 3.1 is never admitted")
		case codec.Version311:
			if e != nil && answerable311(e) {
				c.version.Store(codec.Version311)
				c.refuse(codec.Version311, delivery.ReasonOf(e.Code), codec.ReturnCode311(e), sc, e.Rule)
				return
			}
			c.logWarn("closed: unreadable 3.1.1 CONNECT", "error", err)
			c.end(0, false, false)
		default:
			c.logWarn("closed: CONNECT does not say which protocol it speaks", "error", err)
			c.end(0, false, false)
		}
		return
	}
	v := cp.Version
	// Who a refusal from here on is recorded under (RFC 0005
	// "GET /v1/operations/refused"): the client id as written, so a
	// zero-length one is listed under "", and the name the door vouched
	// for in place of the CONNECT's user name, as connectRequest does.
	c.claimedID, c.user = string(cp.ClientID), string(cp.Username)
	if c.principal() != nil {
		c.user = *c.principal()
	}
	if v < o.MinProtocolVersion {
		c.refuseRaw(connack311Version, "MQTT 3.1.1 is below broker.mqtt.min_protocol_version")
		return
	}
	c.version.Store(uint32(v))
	if v == codec.Version5 {
		// Known before any answer: no CONNACK may exceed it (MQTT-3.1.2-24).
		if cp.Properties.Present.Has(codec.PropMaximumPacketSize) {
			c.clientMaxPkt = cp.Properties.MaximumPacketSize
		}
		if cp.Properties.Present.Has(codec.PropAuthMethod) {
			c.refuse(v, delivery.ReasonOf(codec.BadAuthenticationMethod), codec.BadAuthenticationMethod, sc, "CONNECT names an Authentication Method; Sagüin runs no enhanced authentication")
			return
		}
		if hasReservedUserProperty(&cp.Properties) {
			c.refuse(v, delivery.ReasonOf(codec.ImplementationSpecificError), codec.ImplementationSpecificError, sc, "CONNECT carries a saguin- User Property")
			return
		}
	}
	if err := codec.CheckClientID(cp.ClientID, o.MaxClientIDLength); err != nil {
		c.refuseErr(v, err, sc)
		return
	}
	if err := codec.CheckEmptyClientID(cp); err != nil {
		c.refuseErr(v, err, sc)
		return
	}
	if cp.UsernameFlag {
		if err := codec.CheckUserName(cp.Username); err != nil {
			c.refuseErr(v, err, sc)
			return
		}
	}
	if c.principal() != nil {
		// A certificate's name holding a control character is nobody's:
		// 0x86, as for a CONNECT user name (RFC 0002 "Client certificates").
		if err := codec.CheckUserName([]byte(*c.principal())); err != nil {
			c.logWarn("refused: the name its certificate gives holds U+0000 or a control character", "principal", strconv.Quote(*c.principal()))
			c.refuseErr(v, err, sc)
			return
		}
	}
	// Session Expiry: capped at max_session_expiry, and told when capped.
	maxExpiry := uint32(min(o.MaxSessionExpiry/time.Second, 1<<32-1))
	asked := uint32(0)
	if v == codec.Version5 {
		asked = cp.Properties.SessionExpiry
	} else if !cp.CleanStart {
		asked = maxExpiry // a 3.1.1 persistent session lives as long as the cap allows
	}
	granted := min(asked, maxExpiry)

	// Keepalive: max_keepalive answers an MQTT 5 client asking for more, or
	// for zero, with Server Keep Alive; a 3.1.1 client keeps its own.
	keepalive := cp.KeepAlive
	serverKeepAlive := false
	if v == codec.Version5 && o.MaxKeepalive > 0 {
		ceiling := uint16(min(o.MaxKeepalive/time.Second, 65535))
		if keepalive == 0 || keepalive > ceiling {
			keepalive, serverKeepAlive = ceiling, true
		}
	}

	c.clientRecvMax = 65535
	if v == codec.Version5 {
		c.noProblemInfo = cp.Properties.Present.Has(codec.PropRequestProblemInfo) && cp.Properties.RequestProblemInfo == 0
		if cp.Properties.Present.Has(codec.PropReceiveMaximum) {
			c.clientRecvMax = int32(cp.Properties.ReceiveMaximum)
		}
	}

	id := c.claimedID
	assigned := id == ""
	if assigned {
		id = assignClientID()
	}
	c.id.Store(&id)
	c.sessionExpiry = granted

	plan := connackPlan{keepalive: keepalive, serverKeepAlive: serverKeepAlive, asked: asked, granted: granted,
		capped: asked > maxExpiry, assigned: assigned, cleanStart: cp.CleanStart}
	if !c.connackFits(sc, &plan, id) {
		c.closeUnanswered("the CONNACK would exceed the client's Maximum Packet Size (MQTT-3.1.2-24)")
		return
	}
	if c.waits(delivery.CallConnect, nil, delivery.Ref{}) {
		// The session record is written before the CONNACK: off the loop,
		// with the CONNECT's bytes copied out of the read buffer.
		cl := cp.Clone()
		pc := &pendingCall{kind: delivery.CallConnect, plan: plan}
		pc.req = c.connectRequest(cl, id, granted, keepalive)
		if cl.WillFlag {
			pc.req.Will = &codec.Publish{QoS: cl.WillQoS, Retain: cl.WillRetain, Topic: cl.WillTopic,
				Payload: cl.WillPayload, Properties: cl.WillProperties}
		}
		c.state.Store(stateConnecting)
		c.goWait(pc)
		return
	}
	req := c.connectRequest(cp, id, granted, keepalive)
	if cp.WillFlag {
		w := &sc.publish
		w.Dup, w.QoS, w.Retain, w.PacketID = false, cp.WillQoS, cp.WillRetain, 0
		w.Topic, w.Payload = cp.WillTopic, cp.WillPayload
		w.Properties = cp.WillProperties
		req.Will = w
		defer func() { w.Properties = codec.Properties{} }() // the CONNECT's slices stay the CONNECT's
	}
	present, code := o.Handler.Connect(c, &req)
	c.connectAnswered(sc, &req, &plan, present, code)
}

// connackPlan is what a CONNACK says beside the handler's answer, decided
// before the handler is asked.
type connackPlan struct {
	keepalive       uint16
	serverKeepAlive bool
	asked, granted  uint32 // Session Expiry asked for and granted
	capped          bool   // max_session_expiry granted less than asked
	assigned        bool   // the client identifier is ours
	cleanStart      bool
	// maxQoS1, noShared: features the handler took away (ConnectRequest).
	maxQoS1, noShared bool
}

// connectRequest is what the handler is given of cp.
func (c *Conn) connectRequest(cp *codec.Connect, id string, granted uint32, keepalive uint16) ConnectRequest {
	req := ConnectRequest{
		Keepalive:     keepalive,
		Version:       cp.Version,
		ClientID:      id,
		CleanStart:    cp.CleanStart,
		SessionExpiry: granted,
		Username:      cp.Username,
		Password:      cp.Password,
		Door:          *c.door,
		Remote:        c.t.RemoteAddr(),
	}
	if c.principal() != nil {
		// The certificate's name is the user name, whatever the CONNECT
		// says: one client, one identity (RFC 0002 "Client certificates").
		req.Username, req.Password, req.Certified = []byte(*c.principal()), nil, true
	}
	return req
}

// attachConnected records that the handler took the connection: from here
// its end is the handler's to hear. A session store with no room may have
// shortened the Session Expiry, which the CONNACK then tells.
func (c *Conn) attachConnected(req *ConnectRequest, plan *connackPlan) {
	if req.SessionExpiryShortened && req.SessionExpiry < plan.granted {
		plan.granted = req.SessionExpiry
		c.sessionExpiry = plan.granted
		plan.asked = max(plan.asked, plan.granted+1) // the CONNACK tells an MQTT 5 client what it got
	}
	plan.maxQoS1, plan.noShared = req.MaximumQoS1, req.NoSharedSubscriptions
	c.attached = true
}

// connectAnswered writes the CONNACK for the handler's answer to a CONNECT.
func (c *Conn) connectAnswered(sc *scratch, req *ConnectRequest, plan *connackPlan, present bool, code codec.ReasonCode) {
	v := req.Version
	if code != codec.Success {
		reason := delivery.ReasonOf(code)
		if code == codec.QuotaExceeded {
			reason = delivery.ReasonSessionStoreFull // at CONNECT, 0x97 is only ever the session store's room
		}
		c.refuse(v, reason, mapCode(v, code), sc, "refused by the broker")
		return
	}
	cs := &c.srv.counters
	cs.ConnectionsTotal.Add(1)
	cs.Connections.Add(1)
	if plan.capped {
		cs.SessionExpiryShortened.Add(1)
	}
	c.attachConnected(req, plan)
	c.state.Store(stateConnected)
	if plan.keepalive > 0 {
		ms := int32(plan.keepalive) * 1500
		c.keepaliveMS.Store(ms)
		c.srv.timers.schedule(c, c.lastRead.Load()+int64(ms)*int64(time.Millisecond)) // armed before the CONNACK is written
	}

	ack := &sc.connack
	ack.SessionPresent = present
	ack.ReasonCode = codec.Success
	ack.Properties.Reset()
	if v == codec.Version5 {
		c.connackProps(&ack.Properties, plan, req.ClientID)
	}
	sc.out = ack.Append(sc.out, v)
	ack.Properties.Reset()
	if c.srv.infoOn() { // its arguments alone cost allocations every connect
		args := []any{"protocol", protocolName(v), "clean_start", plan.cleanStart,
			"keepalive", plan.keepalive, "session_expiry", plan.granted, "session_present", present}
		if c.principal() != nil {
			args = append(args, "principal", *c.principal()) // the user name its certificate gave
		}
		c.logInfo("client connected", args...)
	}
}

// connackProps are the properties of an MQTT 5 CONNACK saying yes (RFC 0002
// "what the CONNACK promises when it says yes").
func (c *Conn) connackProps(pr *codec.Properties, plan *connackPlan, clientID string) {
	o := &c.srv.opts
	pr.TopicAliasMaximum = TopicAliasMaximum
	pr.Present.Set(codec.PropTopicAliasMaximum)
	pr.MaximumPacketSize = uint32(o.MaxMessageSize)
	pr.Present.Set(codec.PropMaximumPacketSize)
	pr.ReceiveMaximum = uint16(o.ReceiveMaximum)
	pr.Present.Set(codec.PropReceiveMaximum)
	if !o.RetainAvailable {
		pr.RetainAvailable = 0
		pr.Present.Set(codec.PropRetainAvailable)
	}
	if plan.asked > plan.granted {
		pr.SessionExpiry = plan.granted
		pr.Present.Set(codec.PropSessionExpiry)
	}
	if plan.maxQoS1 {
		pr.MaximumQoS = 1
		pr.Present.Set(codec.PropMaximumQoS)
	}
	if plan.noShared {
		pr.SharedSubAvailable = 0
		pr.Present.Set(codec.PropSharedSubAvailable)
	}
	if plan.serverKeepAlive {
		pr.ServerKeepAlive = plan.keepalive
		pr.Present.Set(codec.PropServerKeepAlive)
	}
	if plan.assigned {
		pr.AssignedClientID = []byte(clientID)
		pr.Present.Set(codec.PropAssignedClientID)
	}
}

// connackFits reports whether the CONNACK saying yes fits the client's
// Maximum Packet Size, asked before the handler makes a session: one that
// does not is never sent (MQTT-3.1.2-24), and the connection is closed with
// no session made. A session store with no room may shorten the Session
// Expiry and add that property after the handler answers, so it is counted
// whenever an expiry is granted (docs/sessions.md "Readings chosen").
func (c *Conn) connackFits(sc *scratch, plan *connackPlan, clientID string) bool {
	if c.clientMaxPkt == 0 {
		return true
	}
	worst := *plan
	if c.srv.opts.MayDenyFeatures {
		worst.maxQoS1, worst.noShared = true, true // an acl_file may take either away
	}
	if worst.granted > 0 {
		worst.asked = max(worst.asked, worst.granted+1)
	}
	ack := &sc.connack
	ack.SessionPresent, ack.ReasonCode = true, codec.Success
	ack.Properties.Reset()
	c.connackProps(&ack.Properties, &worst, clientID)
	fits := ack.Size(codec.Version5) <= int(c.clientMaxPkt)
	ack.Properties.Reset()
	return fits
}

// closeUnanswered ends a connection at CONNECT with nothing written: its
// answer would not fit the client's Maximum Packet Size.
func (c *Conn) closeUnanswered(why string) {
	c.refused(delivery.ReasonOf(codec.PacketTooLarge), c.claimedID)
	c.state.Store(stateEnding)
	c.slotRelease()
	c.out.close()
	c.logWarn("closed: CONNECT unanswered", "protocol", protocolName(c.Version()), "max_packet_size", c.clientMaxPkt, "why", why)
	c.finish()
}

// answerable311 reports the CONNECT refusals RFC 0002 gives a 3.1.1 return
// code: the flag rules of its table (reserved flag, Will QoS 3, Will QoS or
// Retain with no Will, password without user name) and a user name that is
// not UTF-8. Every other unreadable 3.1.1 CONNECT is closed with nothing
// written: 3.1.1 has no return code for a packet it cannot read.
func answerable311(e *codec.Error) bool {
	for _, rule := range []string{"MQTT-3.1.2-3)", "MQTT-3.1.2-11)", "MQTT-3.1.2-12)", "MQTT-3.1.2-13)", "MQTT-3.1.2-22)"} {
		if strings.HasSuffix(e.Rule, rule) {
			return true
		}
	}
	return e.Rule == codec.RuleUserNameUTF8
}

// mapCode is code in v's vocabulary: itself under MQTT 5, the 3.1.1 return
// code RFC 0002's table maps it to otherwise.
func mapCode(v byte, code codec.ReasonCode) codec.ReasonCode {
	if v == codec.Version5 {
		return code
	}
	return codec.ReturnCode311(&codec.Error{Code: code})
}

// refuseErr refuses with the code a codec check returned.
func (c *Conn) refuseErr(v byte, err error, sc *scratch) {
	e := codec.AsError(err)
	c.refuse(v, delivery.ReasonOf(e.Code), mapCode(v, e.Code), sc, e.Rule)
}

// refuse ends a connection at CONNECT: the slot goes back, then the CONNACK
// carrying code (in v's vocabulary) is written, then the socket closes. It
// is counted under reason, the MQTT 5 code decided whatever v was told.
func (c *Conn) refuse(v byte, reason delivery.Reason, code codec.ReasonCode, sc *scratch, why string) {
	c.refused(reason, c.claimedID)
	c.state.Store(stateEnding)
	c.slotRelease()
	c.out.close()
	ack := &sc.connack
	ack.SessionPresent = false
	ack.ReasonCode = code
	ack.Properties.Reset()
	c.reasonString(&ack.Properties, code, why, true)
	if c.clientMaxPkt != 0 && ack.Size(v) > int(c.clientMaxPkt) {
		ack.Properties.Reset() // the Reason String goes first (MQTT-3.1.2-24)
	}
	if c.clientMaxPkt == 0 || ack.Size(v) <= int(c.clientMaxPkt) {
		sc.out = ack.Append(sc.out, v)
	}
	ack.Properties.Reset()
	c.flushScratch(sc)
	c.logWarn("connection refused", "protocol", protocolName(v), "code", "0x"+strings.ToUpper(hex2(byte(code))), "why", why)
	c.finish()
}

// refuseRaw refuses with a CONNACK written as bytes (the 3.1 and 3.1.1
// version refusal, answered before a protocol is settled).
func (c *Conn) refuseRaw(b []byte, why string) {
	c.refused(delivery.ReasonOf(codec.UnsupportedProtocolVersion), c.claimedID)
	c.state.Store(stateEnding)
	c.slotRelease()
	c.out.close()
	c.t.Write(b)
	c.srv.counters.BytesSent.Add(uint64(len(b)))
	c.logWarn("connection refused", "code", "0x01", "why", why)
	c.finish()
}

func protocolName(v byte) string {
	if v == codec.Version5 {
		return "5"
	}
	return "3.1.1"
}

func hex2(b byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&15]})
}
