package codec

// Pingreq is a PINGREQ packet: a fixed header and nothing else.
type Pingreq struct{}

// Decode reads a PINGREQ: flags 0, no body.
func (p *Pingreq) Decode(h Header, body []byte, _ uint8) error {
	return decodeEmpty(h, body, TypePingreq)
}

// Size is the encoded packet's length in bytes.
func (p *Pingreq) Size(uint8) int { return 2 }

// Append appends a PINGREQ to dst.
func (p *Pingreq) Append(dst []byte, _ uint8) []byte {
	return append(dst, byte(TypePingreq)<<4, 0)
}

// Pingresp is a PINGRESP packet: a fixed header and nothing else.
type Pingresp struct{}

// Decode reads a PINGRESP: flags 0, no body.
func (p *Pingresp) Decode(h Header, body []byte, _ uint8) error {
	return decodeEmpty(h, body, TypePingresp)
}

// Size is the encoded packet's length in bytes.
func (p *Pingresp) Size(uint8) int { return 2 }

// Append appends a PINGRESP to dst.
func (p *Pingresp) Append(dst []byte, _ uint8) []byte {
	return append(dst, byte(TypePingresp)<<4, 0)
}

func decodeEmpty(h Header, body []byte, t Type) error {
	if err := checkHeader(h, body, t); err != nil {
		return err
	}
	if len(body) != 0 {
		return malformed(t.String() + " has bytes after its fixed header")
	}
	return nil
}

// Disconnect is a DISCONNECT packet. Under 3.1.1 it has no body; under MQTT 5
// a reason code and properties, both optional (Remaining Length 0 means
// Normal disconnection, MQTT 5 3.14.2.1).
type Disconnect struct {
	ReasonCode ReasonCode
	Properties Properties // MQTT 5 only
}

// Decode reads a DISCONNECT.
func (p *Disconnect) Decode(h Header, body []byte, version uint8) error {
	p.Properties.Reset()
	p.ReasonCode = NormalDisconnection
	if err := checkHeader(h, body, TypeDisconnect); err != nil {
		return err
	}
	if version != Version5 {
		if len(body) != 0 {
			return malformed("MQTT 3.1.1 DISCONNECT has bytes after its fixed header")
		}
		return nil
	}
	r := reader{b: body}
	if r.remaining() > 0 {
		c, _ := r.byte1("DISCONNECT reason code")
		p.ReasonCode = ReasonCode(c)
		if !disconnectCodes.has(p.ReasonCode) {
			return protocol("DISCONNECT reason code " + p.ReasonCode.String() + " is not one a DISCONNECT may carry (MQTT 5 3.14.2.1)")
		}
		if r.remaining() > 0 {
			if err := p.Properties.decode(&r, ctxDisconnect); err != nil {
				return err
			}
		}
	}
	return r.finish("DISCONNECT")
}

// lengths are the Remaining Length of the shortest form and the property
// block's size within it.
func (p *Disconnect) lengths(version uint8) (n, props int) {
	if version != Version5 {
		return 0, 0
	}
	props = p.Properties.size(ctxDisconnect)
	return shortForm(0, p.ReasonCode, props), props
}

// Size is the encoded packet's length in bytes, fixed header included.
func (p *Disconnect) Size(version uint8) int {
	n, _ := p.lengths(version)
	return headerLen(n) + n
}

// Append encodes the DISCONNECT in its shortest form and appends it to dst.
func (p *Disconnect) Append(dst []byte, version uint8) []byte {
	n, props := p.lengths(version)
	dst = appendHeader(dst, TypeDisconnect, 0, n)
	if n > 0 {
		dst = append(dst, byte(p.ReasonCode))
	}
	if n > 1 {
		dst = p.Properties.appendTo(dst, ctxDisconnect, props)
	}
	return dst
}

// Auth is an AUTH packet (MQTT 5 only; in 3.1.1 type 15 is reserved).
type Auth struct {
	ReasonCode ReasonCode
	Properties Properties
}

// Decode reads an AUTH. Under 3.1.1 the type is reserved and the packet is
// malformed; under MQTT 5 Remaining Length 0 means Success with no
// properties, and an AUTH that carries a reason code must name its
// Authentication Method.
func (p *Auth) Decode(h Header, body []byte, version uint8) error {
	p.Properties.Reset()
	p.ReasonCode = Success
	if version != Version5 {
		return malformed("packet type 15 is reserved in MQTT 3.1.1 (MQTT 3.1.1 2.2.1)")
	}
	if err := checkHeader(h, body, TypeAuth); err != nil {
		return err
	}
	r := reader{b: body}
	if r.remaining() > 0 {
		c, _ := r.byte1("AUTH reason code")
		p.ReasonCode = ReasonCode(c)
		if !authCodes.has(p.ReasonCode) {
			return protocol("AUTH reason code " + p.ReasonCode.String() + " is not one an AUTH may carry (MQTT 5 3.15.2.1)")
		}
		if r.remaining() > 0 {
			if err := p.Properties.decode(&r, ctxAuth); err != nil {
				return err
			}
		}
		if !p.Properties.Present.Has(PropAuthMethod) {
			return protocol("AUTH omits the Authentication Method (MQTT 5 3.15.2.2.2)")
		}
	}
	return r.finish("AUTH")
}

// lengths are the Remaining Length of the shortest form and the property
// block's size within it.
func (p *Auth) lengths() (n, props int) {
	props = p.Properties.size(ctxAuth)
	return shortForm(0, p.ReasonCode, props), props
}

// Size is the encoded packet's length in bytes, fixed header included.
func (p *Auth) Size(uint8) int {
	n, _ := p.lengths()
	return headerLen(n) + n
}

// Append encodes the AUTH in its shortest form and appends it to dst.
func (p *Auth) Append(dst []byte, _ uint8) []byte {
	n, props := p.lengths()
	dst = appendHeader(dst, TypeAuth, 0, n)
	if n > 0 {
		dst = append(dst, byte(p.ReasonCode))
	}
	if n > 1 {
		dst = p.Properties.appendTo(dst, ctxAuth, props)
	}
	return dst
}
