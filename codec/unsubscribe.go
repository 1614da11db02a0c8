package codec

// Unsubscribe is an UNSUBSCRIBE packet. Filters alias the body handed to Decode.
type Unsubscribe struct {
	PacketID   uint16
	Properties Properties // MQTT 5 only: User Property
	Filters    [][]byte
}

// Decode reads an UNSUBSCRIBE: at least one filter (0x82, MQTT-3.10.3-2),
// each well-formed UTF-8 and not empty (0x82, MQTT-4.7.3-1).
func (p *Unsubscribe) Decode(h Header, body []byte, version uint8) error {
	p.Properties.Reset()
	p.PacketID, p.Filters = 0, reuse(p.Filters)
	if err := checkHeader(h, body, TypeUnsubscribe); err != nil {
		return err
	}
	r := reader{b: body}
	var err error
	if p.PacketID, err = r.uint16("UNSUBSCRIBE packet identifier"); err != nil {
		return err
	}
	if p.PacketID == 0 {
		return protocol("UNSUBSCRIBE has packet identifier 0 (MQTT-2.2.1-3)")
	}
	if version == Version5 {
		if err := p.Properties.decode(&r, ctxUnsubscribe); err != nil {
			return err
		}
	}
	if n := countFields(body[r.off:], 0); n > cap(p.Filters) {
		p.Filters = make([][]byte, 0, n)
	}
	for r.remaining() > 0 {
		f, err := r.utf8("UNSUBSCRIBE topic filter")
		if err != nil {
			return err
		}
		if len(f) == 0 {
			return protocol("UNSUBSCRIBE carries a zero-length topic filter (MQTT-4.7.3-1)")
		}
		p.Filters = append(p.Filters, f)
	}
	if len(p.Filters) == 0 {
		return protocol("UNSUBSCRIBE carries no topic filter (MQTT-3.10.3-2)")
	}
	return nil
}

// propSize is the property block's size at version (0 below MQTT 5).
func (p *Unsubscribe) propSize(version uint8) int {
	if version != Version5 {
		return 0
	}
	return p.Properties.size(ctxUnsubscribe)
}

func (p *Unsubscribe) remaining(version uint8, props int) int {
	n := 2
	if version == Version5 {
		n += prefixed(props)
	}
	for _, f := range p.Filters {
		n += 2 + len(f)
	}
	return n
}

// Size is the encoded packet's length in bytes, fixed header included.
func (p *Unsubscribe) Size(version uint8) int {
	n := p.remaining(version, p.propSize(version))
	return headerLen(n) + n
}

// Append encodes the UNSUBSCRIBE and appends it to dst.
func (p *Unsubscribe) Append(dst []byte, version uint8) []byte {
	props := p.propSize(version)
	dst = appendHeader(dst, TypeUnsubscribe, fixedFlags[TypeUnsubscribe], p.remaining(version, props))
	dst = appendUint16(dst, p.PacketID)
	if version == Version5 {
		dst = p.Properties.appendTo(dst, ctxUnsubscribe, props)
	}
	for _, f := range p.Filters {
		dst = appendBytes(dst, f)
	}
	return dst
}

// Unsuback is an UNSUBACK packet. Under 3.1.1 it carries only the packet
// identifier; under MQTT 5 one reason code per filter.
type Unsuback struct {
	PacketID    uint16
	Properties  Properties // MQTT 5 only
	ReasonCodes []ReasonCode
}

// Decode reads an UNSUBACK.
func (p *Unsuback) Decode(h Header, body []byte, version uint8) error {
	p.Properties.Reset()
	p.PacketID, p.ReasonCodes = 0, reuse(p.ReasonCodes)
	if err := checkHeader(h, body, TypeUnsuback); err != nil {
		return err
	}
	r := reader{b: body}
	var err error
	if p.PacketID, err = r.uint16("UNSUBACK packet identifier"); err != nil {
		return err
	}
	if p.PacketID == 0 {
		return protocol("UNSUBACK has packet identifier 0 (MQTT-2.2.1-3)")
	}
	if version != Version5 {
		return r.finish("UNSUBACK")
	}
	if err := p.Properties.decode(&r, ctxUnsuback); err != nil {
		return err
	}
	if n := r.remaining(); n > cap(p.ReasonCodes) {
		p.ReasonCodes = make([]ReasonCode, 0, n)
	}
	for r.remaining() > 0 {
		c, _ := r.byte1("UNSUBACK reason code")
		if !unsubackCodes.has(ReasonCode(c)) {
			return protocol("UNSUBACK reason code " + ReasonCode(c).String() + " is not one an UNSUBACK may carry (MQTT 5 3.11.3)")
		}
		p.ReasonCodes = append(p.ReasonCodes, ReasonCode(c))
	}
	if len(p.ReasonCodes) == 0 {
		return protocol("UNSUBACK carries no reason code")
	}
	return nil
}

// propSize is the property block's size at version (0 below MQTT 5).
func (p *Unsuback) propSize(version uint8) int {
	if version != Version5 {
		return 0
	}
	return p.Properties.size(ctxUnsuback)
}

func (p *Unsuback) remaining(version uint8, props int) int {
	if version != Version5 {
		return 2
	}
	return 2 + prefixed(props) + len(p.ReasonCodes)
}

// Size is the encoded packet's length in bytes, fixed header included.
func (p *Unsuback) Size(version uint8) int {
	n := p.remaining(version, p.propSize(version))
	return headerLen(n) + n
}

// Append encodes the UNSUBACK and appends it to dst (reason codes under MQTT 5 only).
func (p *Unsuback) Append(dst []byte, version uint8) []byte {
	props := p.propSize(version)
	dst = appendHeader(dst, TypeUnsuback, 0, p.remaining(version, props))
	dst = appendUint16(dst, p.PacketID)
	if version == Version5 {
		dst = p.Properties.appendTo(dst, ctxUnsuback, props)
		for _, c := range p.ReasonCodes {
			dst = append(dst, byte(c))
		}
	}
	return dst
}
