package codec

// Packet is what every packet struct implements.
type Packet interface {
	// Decode reads the packet from body, the Remaining Length bytes after
	// the fixed header h, for a connection speaking version.
	Decode(h Header, body []byte, version uint8) error
	// Append encodes the packet for version and appends it to dst.
	Append(dst []byte, version uint8) []byte
	// Size is the encoded length, fixed header included.
	Size(version uint8) int
}

// Packets holds one reusable struct of each packet type, so that a connection
// decodes everything it reads without allocating: Decode fills the struct
// for h.Type and returns it. What it returns is overwritten by the next
// Decode of the same type, and its byte slices alias body.
type Packets struct {
	Connect     Connect
	Connack     Connack
	Publish     Publish
	Ack         Ack
	Subscribe   Subscribe
	Suback      Suback
	Unsubscribe Unsubscribe
	Unsuback    Unsuback
	Pingreq     Pingreq
	Pingresp    Pingresp
	Disconnect  Disconnect
	Auth        Auth
}

// Decode dispatches on h.Type. Type 0 is reserved in both protocols and
// malformed (0x81), as type 15 is under 3.1.1.
func (ps *Packets) Decode(h Header, body []byte, version uint8) (Packet, error) {
	var p Packet
	switch h.Type {
	case TypeConnect:
		p = &ps.Connect
	case TypeConnack:
		p = &ps.Connack
	case TypePublish:
		p = &ps.Publish
	case TypePuback, TypePubrec, TypePubrel, TypePubcomp:
		p = &ps.Ack
	case TypeSubscribe:
		p = &ps.Subscribe
	case TypeSuback:
		p = &ps.Suback
	case TypeUnsubscribe:
		p = &ps.Unsubscribe
	case TypeUnsuback:
		p = &ps.Unsuback
	case TypePingreq:
		p = &ps.Pingreq
	case TypePingresp:
		p = &ps.Pingresp
	case TypeDisconnect:
		p = &ps.Disconnect
	case TypeAuth:
		p = &ps.Auth
	default:
		return nil, malformed("packet type 0 is reserved (MQTT 2.1.2)")
	}
	if err := p.Decode(h, body, version); err != nil {
		return nil, err
	}
	return p, nil
}
