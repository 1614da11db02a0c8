package broker

import (
	"time"

	records "github.com/saguin-edge/saguin/broker/channel"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// recordOf copies a publish into a store record the store may keep: its own
// memory for every byte (the publish aliases a read buffer), the User
// Properties as ordered headers, the other forwarded properties in the
// stored form broker/channel writes (records.EncodeProps).
func recordOf(p *codec.Publish, clientID string, now time.Time) store.Record {
	r := store.Record{
		Time:     now,
		Topic:    string(p.Topic),
		Payload:  append([]byte{}, p.Payload...),
		ClientID: clientID,
		QoS:      p.QoS,
		Retain:   p.Retain,
		Props:    records.EncodeProps(&p.Properties),
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
	records.DecodeProps(r.Props, &p.Properties)
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
