package channel

import (
	"strconv"
	"time"
	"unsafe"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/store"
)

// Out builds channel deliveries. One delivery routine keeps one and reuses it
// for every record it sends: Build fills Publish, whose slices alias the
// record and Out's own buffer until the next Build, so the caller copies it
// into a message (delivery.NewMessage) before building the next.
type Out struct {
	Publish codec.Publish
	num     [64]byte
}

// Label is what a delivery is labelled for: the receiving connection's
// protocol, and what the subscriptions the record matched ask of it.
type Label struct {
	Version uint8
	// Channel is the record's channel name, written as saguin-channel only
	// when a subscription the record matched reaches more than one channel
	// (RFC 0003 "Which channel a record came from"; checklist E5). "" for
	// none.
	Channel string
	// RetainAsPublished: some matching subscription asked for the
	// publisher's own flag; otherwise RETAIN is never set on an append
	// delivery, replay included (RFC 0003 "The retain flag on a delivery").
	RetainAsPublished bool
	// QoS is the delivery's QoS, the QoS granted (checklist E2).
	QoS uint8
}

// Build makes the PUBLISH a channel delivers record r as (checklist A2): the
// topic and payload as published; for MQTT 5 the publisher's headers and its
// five publish properties unchanged, with the Message Expiry Interval counted
// down to now and left out once it has run out (the record is still
// delivered: expiry never removes a channel record), then Sagüin's labels
// saguin-id, saguin-offset, saguin-timestamp (only for a record stored with a
// time: never a zero date), saguin-expires (only where the publisher set an
// expiry) and saguin-channel (l.Channel). A 3.1.1 connection gets topic and
// payload only. Allocates nothing once Publish's slices have grown.
func (o *Out) Build(r *store.Record, l Label, now time.Time) *codec.Publish {
	p := &o.Publish
	user := p.Properties.User[:0]
	ids := p.Properties.SubscriptionIDs[:0]
	*p = codec.Publish{QoS: l.QoS, Retain: l.RetainAsPublished && r.Retain, Topic: str(r.Topic), Payload: r.Payload}
	if p.Payload == nil {
		p.Payload = []byte{}
	}
	p.Properties.User, p.Properties.SubscriptionIDs = user, ids
	if l.Version != codec.Version5 {
		return p
	}
	pr := &p.Properties
	DecodeProps(r.Props, pr)
	var expiresAt time.Time
	if pr.Present.Has(codec.PropMessageExpiry) {
		if !r.Time.IsZero() {
			expiresAt = r.Time.Add(time.Duration(pr.MessageExpiry) * time.Second)
			left := expiresAt.Sub(now)
			if left <= 0 {
				pr.Present &^= 1 << codec.PropMessageExpiry
				pr.MessageExpiry = 0
			} else {
				pr.MessageExpiry = uint32((left + time.Second - 1) / time.Second)
			}
		}
	}
	for i := range r.Headers {
		pr.User = append(pr.User, codec.UserProperty{Key: str(r.Headers[i].Key), Value: str(r.Headers[i].Value)})
	}
	num := o.num[:0]
	label := func(key string, v []byte) {
		pr.User = append(pr.User, codec.UserProperty{Key: str(key), Value: v})
	}
	label(IDKey, str(r.MessageID))
	start := len(num)
	num = strconv.AppendUint(num, r.Offset, 10)
	label(OffsetKey, num[start:len(num):len(num)])
	if !r.Time.IsZero() {
		start = len(num)
		num = strconv.AppendInt(num, r.Time.UnixMilli(), 10)
		label(TimestampKey, num[start:len(num):len(num)])
	}
	if !expiresAt.IsZero() {
		start = len(num)
		num = strconv.AppendInt(num, expiresAt.UnixMilli(), 10)
		label(ExpiresKey, num[start:len(num):len(num)])
	}
	if l.Channel != "" {
		label(ChannelKey, str(l.Channel))
	}
	pr.Present.Set(codec.PropUserProperty)
	return p
}

// str views a string's bytes without copying; nothing writes through it.
func str(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
