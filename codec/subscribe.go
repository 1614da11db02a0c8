package codec

import (
	"bytes"

	"github.com/saguin-edge/saguin/codec/topic"
)

// Subscription is one topic filter of a SUBSCRIBE with its options. Filter
// aliases the body handed to Decode.
type Subscription struct {
	Filter            []byte
	QoS               uint8 // the maximum QoS asked for
	NoLocal           bool  // MQTT 5
	RetainAsPublished bool  // MQTT 5
	RetainHandling    uint8 // MQTT 5: 0 send retained, 1 only on a new subscription, 2 never
}

// Subscribe is a SUBSCRIBE packet.
type Subscribe struct {
	PacketID      uint16
	Properties    Properties // MQTT 5 only: Subscription Identifier, User Property
	Subscriptions []Subscription
}

var sharePrefix = []byte(topic.SharePrefix)

// Decode reads a SUBSCRIBE. Refused as it is read: no filters (0x82,
// MQTT-3.8.3-2), a zero-length filter (0x82, RFC 0002: a field the client did
// not send), QoS 3 (0x81 under 3.1.1; 0x82 under 5), option bits MQTT
// reserves (0x81, MQTT-3.8.3-5), Retain Handling 3 (0x82), No Local on a
// $share/ filter (0x82, MQTT-3.8.3-4), packet identifier 0 (0x82), a filter
// that is not well-formed UTF-8 (0x81). Whether a filter's wildcards are well
// placed is not decided here: RFC 0002 answers that per filter in the SUBACK
// (0x8F), and codec/topic holds the syntax.
func (p *Subscribe) Decode(h Header, body []byte, version uint8) error {
	p.Properties.Reset()
	p.PacketID, p.Subscriptions = 0, reuse(p.Subscriptions)
	if err := checkHeader(h, body, TypeSubscribe); err != nil {
		return err
	}
	r := reader{b: body}
	var err error
	if p.PacketID, err = r.uint16("SUBSCRIBE packet identifier"); err != nil {
		return err
	}
	if p.PacketID == 0 {
		return protocol("SUBSCRIBE has packet identifier 0 (MQTT-2.2.1-3)")
	}
	if version == Version5 {
		if err := p.Properties.decode(&r, ctxSubscribe); err != nil {
			return err
		}
	}
	if n := countFields(body[r.off:], 1); n > cap(p.Subscriptions) {
		p.Subscriptions = make([]Subscription, 0, n)
	}
	for r.remaining() > 0 {
		var s Subscription
		if s.Filter, err = r.utf8("SUBSCRIBE topic filter"); err != nil {
			return err
		}
		if len(s.Filter) == 0 {
			return protocol("SUBSCRIBE carries a zero-length topic filter (MQTT-4.7.3-1)")
		}
		opts, err := r.byte1("SUBSCRIBE subscription options")
		if err != nil {
			return err
		}
		s.QoS = opts & 0x03
		if version == Version5 {
			if opts&0xC0 != 0 {
				return malformed("SUBSCRIBE subscription options bits 7-6 are reserved (MQTT-3.8.3-5)")
			}
			s.NoLocal = opts&0x04 != 0
			s.RetainAsPublished = opts&0x08 != 0
			s.RetainHandling = (opts >> 4) & 0x03
			if s.QoS == 3 {
				return protocol("SUBSCRIBE asks for QoS 3 (MQTT 5 3.8.3.1)")
			}
			if s.RetainHandling == 3 {
				return protocol("SUBSCRIBE asks for Retain Handling 3 (MQTT 5 3.8.3.1)")
			}
			if s.NoLocal && bytes.HasPrefix(s.Filter, sharePrefix) {
				return protocol("SUBSCRIBE asks for No Local on a shared subscription (MQTT-3.8.3-4)")
			}
		} else if opts&0xFC != 0 || s.QoS == 3 {
			return malformed("SUBSCRIBE requested QoS byte has reserved bits set or QoS 3 (MQTT-3-8.3-4)")
		}
		p.Subscriptions = append(p.Subscriptions, s)
	}
	if len(p.Subscriptions) == 0 {
		return protocol("SUBSCRIBE carries no topic filter (MQTT-3.8.3-2)")
	}
	return nil
}

// propSize is the property block's size at version (0 below MQTT 5).
func (p *Subscribe) propSize(version uint8) int {
	if version != Version5 {
		return 0
	}
	return p.Properties.size(ctxSubscribe)
}

func (p *Subscribe) remaining(version uint8, props int) int {
	n := 2
	if version == Version5 {
		n += prefixed(props)
	}
	for i := range p.Subscriptions {
		n += 3 + len(p.Subscriptions[i].Filter)
	}
	return n
}

// Size is the encoded packet's length in bytes, fixed header included.
func (p *Subscribe) Size(version uint8) int {
	n := p.remaining(version, p.propSize(version))
	return headerLen(n) + n
}

// Append encodes the SUBSCRIBE and appends it to dst. Under 3.1.1 only each
// subscription's QoS is written.
func (p *Subscribe) Append(dst []byte, version uint8) []byte {
	props := p.propSize(version)
	dst = appendHeader(dst, TypeSubscribe, fixedFlags[TypeSubscribe], p.remaining(version, props))
	dst = appendUint16(dst, p.PacketID)
	if version == Version5 {
		dst = p.Properties.appendTo(dst, ctxSubscribe, props)
	}
	for i := range p.Subscriptions {
		s := &p.Subscriptions[i]
		dst = appendBytes(dst, s.Filter)
		opts := s.QoS & 0x03
		if version == Version5 {
			if s.NoLocal {
				opts |= 0x04
			}
			if s.RetainAsPublished {
				opts |= 0x08
			}
			opts |= (s.RetainHandling & 0x03) << 4
		}
		dst = append(dst, opts)
	}
	return dst
}

// Suback is a SUBACK packet: one reason code per filter, in order.
type Suback struct {
	PacketID    uint16
	Properties  Properties // MQTT 5 only
	ReasonCodes []ReasonCode
}

// Decode reads a SUBACK; under 3.1.1 each code must be 0, 1, 2 or 0x80.
func (p *Suback) Decode(h Header, body []byte, version uint8) error {
	p.Properties.Reset()
	p.PacketID, p.ReasonCodes = 0, reuse(p.ReasonCodes)
	if err := checkHeader(h, body, TypeSuback); err != nil {
		return err
	}
	r := reader{b: body}
	var err error
	if p.PacketID, err = r.uint16("SUBACK packet identifier"); err != nil {
		return err
	}
	if p.PacketID == 0 {
		return protocol("SUBACK has packet identifier 0 (MQTT-2.2.1-3)")
	}
	allowed := &subackCodes311
	if version == Version5 {
		allowed = &subackCodes
		if err := p.Properties.decode(&r, ctxSuback); err != nil {
			return err
		}
	}
	if n := r.remaining(); n > cap(p.ReasonCodes) {
		p.ReasonCodes = make([]ReasonCode, 0, n)
	}
	for r.remaining() > 0 {
		c, _ := r.byte1("SUBACK reason code")
		if !allowed.has(ReasonCode(c)) {
			return protocol("SUBACK reason code " + ReasonCode(c).String() + " is not one a SUBACK may carry (MQTT 5 3.9.3)")
		}
		p.ReasonCodes = append(p.ReasonCodes, ReasonCode(c))
	}
	if len(p.ReasonCodes) == 0 {
		return protocol("SUBACK carries no reason code")
	}
	return nil
}

// propSize is the property block's size at version (0 below MQTT 5).
func (p *Suback) propSize(version uint8) int {
	if version != Version5 {
		return 0
	}
	return p.Properties.size(ctxSuback)
}

func (p *Suback) remaining(version uint8, props int) int {
	n := 2 + len(p.ReasonCodes)
	if version == Version5 {
		n += prefixed(props)
	}
	return n
}

// Size is the encoded packet's length in bytes, fixed header included.
func (p *Suback) Size(version uint8) int {
	n := p.remaining(version, p.propSize(version))
	return headerLen(n) + n
}

// Append encodes the SUBACK and appends it to dst.
func (p *Suback) Append(dst []byte, version uint8) []byte {
	props := p.propSize(version)
	dst = appendHeader(dst, TypeSuback, 0, p.remaining(version, props))
	dst = appendUint16(dst, p.PacketID)
	if version == Version5 {
		dst = p.Properties.appendTo(dst, ctxSuback, props)
	}
	for _, c := range p.ReasonCodes {
		dst = append(dst, byte(c))
	}
	return dst
}
