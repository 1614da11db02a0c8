package codec

// Publish is a PUBLISH packet. Topic, Payload and the byte slices in
// Properties alias the body handed to Decode: they are valid until the
// buffer is reused for the next read, so copy what is kept beyond it.
type Publish struct {
	Dup        bool
	QoS        uint8
	Retain     bool
	Topic      []byte // empty when an MQTT 5 publisher names the topic by alias only
	PacketID   uint16 // QoS 1 and 2 only
	Properties Properties
	Payload    []byte
}

// Decode reads a PUBLISH. It refuses both QoS bits set (0x81), DUP on a QoS 0
// publish (0x81), a topic that is not well-formed UTF-8 or holds U+0000
// (0x81), a topic holding + or # (0x82), an empty topic with no Topic Alias
// (0x82, and always under 3.1.1), packet identifier 0 at QoS 1 or 2 (0x82).
// Allocates nothing: Properties reuses its slices' capacity.
func (p *Publish) Decode(h Header, body []byte, version uint8) error {
	p.Dup, p.QoS, p.Retain, p.Topic, p.PacketID, p.Payload = false, 0, false, nil, 0, nil
	if err := checkHeader(h, body, TypePublish); err != nil {
		p.Properties.Reset()
		return err
	}
	p.Dup = h.Flags&0x08 != 0
	p.QoS = (h.Flags >> 1) & 0x03
	p.Retain = h.Flags&0x01 != 0
	if p.QoS == 3 {
		p.Properties.Reset()
		return malformed("PUBLISH has both QoS bits set (MQTT-3.3.1-4)")
	}
	if p.Dup && p.QoS == 0 {
		p.Properties.Reset()
		return malformed("PUBLISH at QoS 0 has DUP set (MQTT-3.3.1-2)")
	}
	r := reader{b: body}
	var err error
	if p.Topic, err = r.utf8("PUBLISH topic name"); err != nil {
		p.Properties.Reset()
		return err
	}
	if hasWildcard(p.Topic) {
		p.Properties.Reset()
		return protocol("PUBLISH topic name holds a wildcard (MQTT-3.3.2-2)")
	}
	if p.QoS > 0 {
		if p.PacketID, err = r.uint16("PUBLISH packet identifier"); err != nil {
			p.Properties.Reset()
			return err
		}
		if p.PacketID == 0 {
			p.Properties.Reset()
			return protocol("PUBLISH at QoS 1 or 2 has packet identifier 0 (MQTT-2.2.1-3)")
		}
	}
	if version == Version5 {
		if err := p.Properties.decode(&r, ctxPublish); err != nil {
			return err
		}
	} else {
		p.Properties.Reset()
	}
	if len(p.Topic) == 0 && !p.Properties.Present.Has(PropTopicAlias) {
		if version == Version5 {
			return protocol("PUBLISH has an empty topic name and no Topic Alias (MQTT 5 3.3.2.1)")
		}
		return protocol("PUBLISH has an empty topic name (MQTT-4.7.3-1)")
	}
	p.Payload = body[r.off:]
	return nil
}

// propSize is the property block's size at version (0 below MQTT 5).
func (p *Publish) propSize(version uint8) int {
	if version != Version5 {
		return 0
	}
	return p.Properties.size(ctxPublish)
}

func (p *Publish) remaining(version uint8, props int) int {
	n := 2 + len(p.Topic) + len(p.Payload)
	if p.QoS > 0 {
		n += 2
	}
	if version == Version5 {
		n += prefixed(props)
	}
	return n
}

// Size is the encoded packet's length in bytes, fixed header included: what
// a receiver's Maximum Packet Size is compared with.
func (p *Publish) Size(version uint8) int {
	n := p.remaining(version, p.propSize(version))
	return headerLen(n) + n
}

// Append encodes the PUBLISH and appends it to dst; it allocates nothing when
// dst has room. The packet identifier is written at QoS 1 and 2 only.
func (p *Publish) Append(dst []byte, version uint8) []byte {
	flags := (p.QoS & 0x03) << 1
	if p.Dup {
		flags |= 0x08
	}
	if p.Retain {
		flags |= 0x01
	}
	props := p.propSize(version)
	dst = appendHeader(dst, TypePublish, flags, p.remaining(version, props))
	dst = appendBytes(dst, p.Topic)
	if p.QoS > 0 {
		dst = appendUint16(dst, p.PacketID)
	}
	if version == Version5 {
		dst = p.Properties.appendTo(dst, ctxPublish, props)
	}
	return append(dst, p.Payload...)
}
