package codec

// Connack is a CONNACK packet. ReasonCode holds the MQTT 5 reason code or, on
// a 3.1.1 connection, the return code (ConnAccepted311 ... ConnRefusedNotAuthorized311).
type Connack struct {
	SessionPresent bool
	ReasonCode     ReasonCode
	Properties     Properties // MQTT 5 only
}

// Decode reads a CONNACK.
func (p *Connack) Decode(h Header, body []byte, version uint8) error {
	p.Properties.Reset()
	p.SessionPresent, p.ReasonCode = false, 0
	if err := checkHeader(h, body, TypeConnack); err != nil {
		return err
	}
	r := reader{b: body}
	flags, err := r.byte1("CONNACK flags")
	if err != nil {
		return err
	}
	if flags&0xFE != 0 {
		return malformed("CONNACK acknowledge flags 7-1 are reserved (MQTT-3.2.2-1)")
	}
	p.SessionPresent = flags&0x01 != 0
	code, err := r.byte1("CONNACK reason code")
	if err != nil {
		return err
	}
	p.ReasonCode = ReasonCode(code)
	if version == Version5 {
		if !connackCodes.has(p.ReasonCode) {
			return protocol("CONNACK reason code " + p.ReasonCode.String() + " is not one a CONNACK may carry (MQTT 5 3.2.2.2)")
		}
		if err := p.Properties.decode(&r, ctxConnack); err != nil {
			return err
		}
	} else if code > 5 {
		return protocol("CONNACK return code " + itoa(int(code)) + " is not one MQTT 3.1.1 defines (MQTT 3.1.1 3.2.2.3)")
	}
	if p.SessionPresent && p.ReasonCode != Success {
		return protocol("CONNACK refusing a connection sets Session Present (MQTT-3.2.2-6)")
	}
	return r.finish("CONNACK")
}

func (p *Connack) remaining(version uint8, props int) int {
	if version == Version5 {
		return 2 + prefixed(props)
	}
	return 2
}

// propSize is the property block's size at version (0 below MQTT 5).
func (p *Connack) propSize(version uint8) int {
	if version != Version5 {
		return 0
	}
	return p.Properties.size(ctxConnack)
}

// Size is the encoded packet's length in bytes, fixed header included.
func (p *Connack) Size(version uint8) int {
	n := p.remaining(version, p.propSize(version))
	return headerLen(n) + n
}

// Append encodes the CONNACK and appends it to dst.
func (p *Connack) Append(dst []byte, version uint8) []byte {
	props := p.propSize(version)
	dst = appendHeader(dst, TypeConnack, 0, p.remaining(version, props))
	var flags byte
	if p.SessionPresent {
		flags = 1
	}
	dst = append(dst, flags, byte(p.ReasonCode))
	if version == Version5 {
		dst = p.Properties.appendTo(dst, ctxConnack, props)
	}
	return dst
}
