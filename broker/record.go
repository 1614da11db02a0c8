package broker

import (
	"encoding/binary"
	"time"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// recordOf copies a publish into a store record the store may keep: its own
// memory for every byte (the publish aliases a read buffer), the User
// Properties as ordered headers, the other forwarded properties in the
// broker's own encoding (encodeProps).
func recordOf(p *codec.Publish, clientID string, now time.Time) store.Record {
	r := store.Record{
		Time:     now,
		Topic:    string(p.Topic),
		Payload:  append([]byte{}, p.Payload...),
		ClientID: clientID,
		QoS:      p.QoS,
		Retain:   p.Retain,
		Props:    encodeProps(&p.Properties),
	}
	if n := len(p.Properties.User); n > 0 {
		r.Headers = make([]store.Header, n)
		for i, u := range p.Properties.User {
			r.Headers[i] = store.Header{Key: string(u.Key), Value: string(u.Value)}
		}
	}
	return r
}

// publishOf rebuilds the publish a stored record was made from, with its
// Message Expiry Interval counted down to now. ok is false when it has run
// out: an expired record is never sent.
func publishOf(r *store.Record, now time.Time, p *codec.Publish) (ok bool) {
	*p = codec.Publish{QoS: r.QoS, Retain: r.Retain, Topic: []byte(r.Topic), Payload: r.Payload}
	if p.Payload == nil {
		p.Payload = []byte{}
	}
	decodeProps(r.Props, &p.Properties)
	for _, h := range r.Headers {
		p.Properties.AddUser([]byte(h.Key), []byte(h.Value))
	}
	if p.Properties.Present.Has(codec.PropMessageExpiry) {
		left := time.Duration(p.Properties.MessageExpiry)*time.Second - now.Sub(r.Time)
		if left <= 0 {
			return false
		}
		p.Properties.MessageExpiry = uint32((left + time.Second - 1) / time.Second)
	}
	return true
}

// messageOf is the message a stored record delivers, nil when it expired.
func messageOf(r *store.Record, now time.Time) *delivery.Message {
	var p codec.Publish
	if !publishOf(r, now, &p) {
		return nil
	}
	return delivery.NewMessage(&p, func() time.Time { return now })
}

// The stored form of a record's publish properties: one byte naming the
// property, then its value - a byte, four bytes big-endian, or two bytes of
// length and the bytes. Only the five a record keeps are written (notes-0003
// "From publish to record"); User Properties are the record's headers.
func encodeProps(pr *codec.Properties) []byte {
	var n int
	has := pr.Present.Has
	if has(codec.PropPayloadFormat) {
		n += 2
	}
	if has(codec.PropMessageExpiry) {
		n += 5
	}
	for _, id := range [...]codec.PropID{codec.PropContentType, codec.PropResponseTopic, codec.PropCorrelationData} {
		if has(id) {
			n += 3 + len(binProp(pr, id))
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]byte, 0, n)
	if has(codec.PropPayloadFormat) {
		out = append(out, byte(codec.PropPayloadFormat), pr.PayloadFormat)
	}
	if has(codec.PropMessageExpiry) {
		out = append(out, byte(codec.PropMessageExpiry))
		out = binary.BigEndian.AppendUint32(out, pr.MessageExpiry)
	}
	bin := func(id codec.PropID, b []byte) {
		if has(id) {
			out = append(out, byte(id))
			out = binary.BigEndian.AppendUint16(out, uint16(len(b)))
			out = append(out, b...)
		}
	}
	bin(codec.PropContentType, pr.ContentType)
	bin(codec.PropResponseTopic, pr.ResponseTopic)
	bin(codec.PropCorrelationData, pr.CorrelationData)
	return out
}

// binProp is one of the three binary properties a record keeps.
func binProp(pr *codec.Properties, id codec.PropID) []byte {
	switch id {
	case codec.PropContentType:
		return pr.ContentType
	case codec.PropResponseTopic:
		return pr.ResponseTopic
	}
	return pr.CorrelationData
}

// decodeProps reads encodeProps' form into pr; what it cannot read it stops at
// (the store hands back exactly what it was given, so that is never reached).
func decodeProps(b []byte, pr *codec.Properties) {
	for len(b) > 0 {
		id := codec.PropID(b[0])
		b = b[1:]
		switch id {
		case codec.PropPayloadFormat:
			if len(b) < 1 {
				return
			}
			pr.PayloadFormat, b = b[0], b[1:]
		case codec.PropMessageExpiry:
			if len(b) < 4 {
				return
			}
			pr.MessageExpiry, b = binary.BigEndian.Uint32(b), b[4:]
		case codec.PropContentType, codec.PropResponseTopic, codec.PropCorrelationData:
			if len(b) < 2 || len(b) < 2+int(binary.BigEndian.Uint16(b)) {
				return
			}
			n := int(binary.BigEndian.Uint16(b))
			v := b[2 : 2+n : 2+n]
			b = b[2+n:]
			switch id {
			case codec.PropContentType:
				pr.ContentType = v
			case codec.PropResponseTopic:
				pr.ResponseTopic = v
			default:
				pr.CorrelationData = v
			}
		default:
			return
		}
		pr.Present.Set(id)
	}
}
