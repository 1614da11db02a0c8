package codec

// Ack is a PUBACK, PUBREC, PUBREL or PUBCOMP: Type says which. ReasonCode and
// Properties exist in MQTT 5 only.
type Ack struct {
	Type       Type
	PacketID   uint16
	ReasonCode ReasonCode
	Properties Properties
}

// Decode reads an acknowledgement of the type h names. Under MQTT 5 the
// reason code and properties may be left off (Remaining Length 2: Success;
// 3: no properties, MQTT 5 3.4.2.1).
func (p *Ack) Decode(h Header, body []byte, version uint8) error {
	p.Properties.Reset()
	p.Type, p.PacketID, p.ReasonCode = h.Type, 0, Success
	if h.Type < TypePuback || h.Type > TypePubcomp {
		return malformed("packet type " + h.Type.String() + " handed to the acknowledgement decoder")
	}
	if err := checkHeader(h, body, h.Type); err != nil {
		return err
	}
	name := h.Type.String()
	r := reader{b: body}
	var err error
	if p.PacketID, err = r.uint16("packet identifier"); err != nil {
		return prefixRule(name, err)
	}
	if p.PacketID == 0 {
		return protocol(name + " has packet identifier 0 (MQTT-2.2.1-3)")
	}
	if version == Version5 && r.remaining() > 0 {
		code, _ := r.byte1("reason code")
		p.ReasonCode = ReasonCode(code)
		allowed := &pubackCodes
		if h.Type == TypePubrel || h.Type == TypePubcomp {
			allowed = &pubrelCodes
		}
		if !allowed.has(p.ReasonCode) {
			return protocol(name + " reason code " + p.ReasonCode.String() + " is not one a " + name + " may carry")
		}
		if r.remaining() > 0 {
			if err := p.Properties.decode(&r, ctxPuback); err != nil {
				return prefixRule(name, err)
			}
		}
	}
	return r.finish(name)
}

// lengths are the Remaining Length of the shortest form and the property
// block's size within it.
func (p *Ack) lengths(version uint8) (n, props int) {
	if version != Version5 {
		return 2, 0
	}
	props = p.Properties.size(ctxPuback)
	return shortForm(2, p.ReasonCode, props), props
}

// shortForm is the Remaining Length of a packet whose reason code and
// properties may be left off: head bytes before the reason code, then the
// code only if it is not Success or properties follow, then the properties
// only if there are some.
func shortForm(head int, code ReasonCode, props int) int {
	switch {
	case props > 0:
		return head + 1 + prefixed(props)
	case code != Success:
		return head + 1
	default:
		return head
	}
}

// Size is the encoded packet's length in bytes, fixed header included.
func (p *Ack) Size(version uint8) int {
	n, _ := p.lengths(version)
	return headerLen(n) + n
}

// Append encodes the acknowledgement in its shortest form and appends it to dst.
func (p *Ack) Append(dst []byte, version uint8) []byte {
	n, props := p.lengths(version)
	dst = appendHeader(dst, p.Type, fixedFlags[p.Type&0x0F], n)
	dst = appendUint16(dst, p.PacketID)
	if n > 2 {
		dst = append(dst, byte(p.ReasonCode))
	}
	if n > 3 {
		dst = p.Properties.appendTo(dst, ctxPuback, props)
	}
	return dst
}
