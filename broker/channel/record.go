package channel

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"time"
	"unsafe"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/store"
)

// The User Property names Sagüin writes on channel deliveries, and the one a
// publisher may set (IDKey). Every other name under Prefix is the broker's.
const (
	Prefix       = "saguin-"
	IDKey        = "saguin-id"
	OffsetKey    = "saguin-offset"
	TimestampKey = "saguin-timestamp"
	ExpiresKey   = "saguin-expires"
	ChannelKey   = "saguin-channel"
	// FilterKey and DeletionsKey are the two a SUBSCRIBE may carry.
	FilterKey    = "saguin-filter"
	DeletionsKey = "saguin-deletions"
	// FloorKey and NextKey ride a refused seek's reply.
	FloorKey = "saguin-floor"
	NextKey  = "saguin-next"
)

// Limits are the per-publish bounds a record is checked against before
// anything is allocated for it (RFC 0002 "Publishing": limits.max_header_count
// and limits.max_header_bytes). Zero means no bound.
type Limits struct {
	MaxHeaderCount int
	MaxHeaderBytes int64
}

// CheckHeaders applies the header bounds to the User Properties as the
// publisher sent them: a saguin- name about to be stripped counts too (the
// bound is on the packet received, checklist E19). 0x97 over either.
func CheckHeaders(pr *codec.Properties, lim Limits) (codec.ReasonCode, string) {
	if lim.MaxHeaderCount > 0 && len(pr.User) > lim.MaxHeaderCount {
		return codec.QuotaExceeded, "the publish carries more User Properties than limits.max_header_count"
	}
	if lim.MaxHeaderBytes > 0 {
		var n int64
		for i := range pr.User {
			n += int64(len(pr.User[i].Key) + len(pr.User[i].Value))
		}
		if n > lim.MaxHeaderBytes {
			return codec.QuotaExceeded, "the publish's User Properties are larger than limits.max_header_bytes"
		}
	}
	return codec.Success, ""
}

// Reserved reports a User Property name the broker owns on a PUBLISH: every
// saguin- name but saguin-id, stripped so that a publisher cannot forge what
// consumers trust (RFC 0003 "Reserved prefix").
func Reserved(key []byte) bool {
	return bytes.HasPrefix(key, []byte(Prefix)) && string(key) != IDKey
}

// ClientID is the publisher's saguin-id: the first one it sent, verbatim
// (checklist E1: nothing refuses a value that is not a UUIDv7, and a bridge
// lifts it unchanged). ok is false when it sent none.
func ClientID(pr *codec.Properties) (id []byte, ok bool) {
	for i := range pr.User {
		if string(pr.User[i].Key) == IDKey {
			return pr.User[i].Value, true
		}
	}
	return nil, false
}

// UUIDv7 writes a version 7 UUID for the moment now into dst in its 36-byte
// text form (RFC 9562): 48 bits of Unix milliseconds, then 74 random bits.
// The random bits come from math/rand/v2's runtime generator (ChaCha8,
// seeded per process from the kernel): unguessable enough for an id, and
// far cheaper per record than a read of crypto/rand.
func UUIDv7(dst *[36]byte, now time.Time) {
	var u [16]byte
	ms := uint64(now.UnixMilli())
	u[0], u[1], u[2], u[3], u[4], u[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	binary.BigEndian.PutUint16(u[6:], uint16(rand.Uint32()))
	binary.BigEndian.PutUint64(u[8:], rand.Uint64())
	u[6] = u[6]&0x0f | 0x70 // version 7
	u[8] = u[8]&0x3f | 0x80 // variant 10
	const hex = "0123456789abcdef"
	j := 0
	for i, b := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst[j] = '-'
			j++
		}
		dst[j], dst[j+1] = hex[b>>4], hex[b&0x0f]
		j += 2
	}
}

// Size is what the record made from p would count against retention_bytes
// and max_bytes (store.RecordSize), computed from the packet before any
// allocation: payload, topic, message id (the publisher's, or a UUIDv7's 36
// bytes) and every header kept.
func Size(p *codec.Publish) int64 {
	n := len(p.Payload) + len(p.Topic)
	if id, ok := ClientID(&p.Properties); ok {
		n += len(id)
	} else {
		n += 36
	}
	for i := range p.Properties.User {
		u := &p.Properties.User[i]
		if string(u.Key) != IDKey && !Reserved(u.Key) {
			n += len(u.Key) + len(u.Value)
		}
	}
	return int64(n)
}

// RecordOf makes the record a publish becomes (RFC 0003 "From publish to
// record"): its Message ID (the publisher's first saguin-id, else a UUIDv7
// minted at now), the topic exactly as published, the payload, the User
// Properties in the publisher's order with repeats kept and every saguin-
// name stripped (saguin-id is the Message ID, delivered as the label), the
// five publish properties in the stored form (EncodeProps), the receipt time,
// the publisher's client id (No Local only) and its RETAIN flag (Retain As
// Published only). p aliases a read buffer: every byte is copied into one
// arena the store then owns, so a record costs two allocations (one with no
// headers). The caller checks bounds first (CheckHeaders, Size).
func RecordOf(p *codec.Publish, publisher string, now time.Time) store.Record {
	pr := &p.Properties
	id, hasID := ClientID(pr)
	kept, n := 0, len(p.Payload)+len(p.Topic)+len(id)
	if !hasID {
		n += 36
	}
	for i := range pr.User {
		u := &pr.User[i]
		if string(u.Key) == IDKey || Reserved(u.Key) {
			continue
		}
		kept++
		n += len(u.Key) + len(u.Value)
	}
	props := propsSize(pr)
	arena := make([]byte, 0, n+props+len(publisher))
	take := func(b []byte) string {
		start := len(arena)
		arena = append(arena, b...)
		return unsafe.String(unsafe.SliceData(arena[start:]), len(b))
	}
	r := store.Record{Time: now, QoS: p.QoS, Retain: p.Retain}
	start := len(arena)
	arena = append(arena, p.Payload...)
	r.Payload = arena[start:len(arena):len(arena)]
	r.Topic = take(p.Topic)
	if hasID {
		r.MessageID = take(id)
	} else {
		var u [36]byte
		UUIDv7(&u, now)
		r.MessageID = take(u[:])
	}
	if publisher != "" {
		start := len(arena)
		arena = append(arena, publisher...)
		r.ClientID = unsafe.String(unsafe.SliceData(arena[start:]), len(publisher))
	}
	if kept > 0 {
		r.Headers = make([]store.Header, 0, kept)
		for i := range pr.User {
			u := &pr.User[i]
			if string(u.Key) == IDKey || Reserved(u.Key) {
				continue
			}
			r.Headers = append(r.Headers, store.Header{Key: take(u.Key), Value: take(u.Value)})
		}
	}
	if props > 0 {
		start := len(arena)
		arena = appendProps(arena, pr)
		r.Props = arena[start:len(arena):len(arena)]
	}
	if len(r.Payload) == 0 {
		r.Payload = nil
	}
	return r
}
