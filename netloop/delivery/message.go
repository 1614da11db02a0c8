package delivery

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// Message is a publication as it is routed: its own memory, never changed
// while anyone holds it, and shared by every delivery of it - each connection
// encodes it into its own PUBLISH with its own packet identifier.
//
// A message from AcquireMessage is pooled: it is counted, and its memory is
// made into another message once the last holder has let it go. Whoever
// keeps one past the call that handed it over (a connection's queue or its
// in-flight window, a session's carried deliveries, any Client) takes a
// reference with Retain and gives it back with Release. A message from
// NewMessage is left to the garbage collector; Retain and Release do nothing
// to it, so code that holds messages is written once for both.
type Message struct {
	Topic   []byte
	Payload []byte
	// Props are the MQTT 5 properties a subscriber receives: what the
	// publisher sent, without its Topic Alias (the broker never sends one)
	// or Subscription Identifiers (they belong to the receiving
	// subscription). Nil when there are none, which is the common case and
	// keeps a message small.
	Props *codec.Properties
	// expiresAt is when a Message Expiry Interval runs out, unix ns; 0 is
	// never. A delivery written later carries what remains, and one written
	// after it is not written at all (MQTT 5 3.3.2.3.3).
	expiresAt int64

	// Pooled messages only: the holders, and the memory kept for reuse.
	refs     atomic.Int32
	pooled   bool
	arena    []byte
	propsBuf *codec.Properties
}

// maxPooledArena is the largest arena a message keeps when it goes back to
// the pool: one large publish must not pin its size in every reused message.
const maxPooledArena = 4 << 10

var messagePool = sync.Pool{New: func() any { return &Message{pooled: true} }}

// NewMessage copies what a delivery needs out of p, whose slices alias a read
// buffer: one allocation for every byte, one more when User Properties exist.
// The message is the garbage collector's (see Message). now is the clock a
// Message Expiry Interval counts from, read only when p carries one: the
// caller's, so that expiry follows the clock the broker and netloop are given.
func NewMessage(p *codec.Publish, now func() time.Time) *Message {
	m := &Message{}
	m.fill(p, now, false)
	return m
}

// NewLabelledMessage is NewMessage for a delivery the broker built itself
// (a channel record with its saguin- labels, broker/channel.Out): every User
// Property is kept, the reserved names included - the publisher's were
// stripped when the record was made, and these are the broker's own.
func NewLabelledMessage(p *codec.Publish, now func() time.Time) *Message {
	m := &Message{}
	m.fill(p, now, true)
	return m
}

// AcquireMessage is NewMessage from the pool: the caller holds its one
// reference and gives it back with Release once every delivery is handed
// over. After warm-up it allocates nothing.
func AcquireMessage(p *codec.Publish, now func() time.Time) *Message {
	m := messagePool.Get().(*Message)
	m.refs.Store(1)
	m.fill(p, now, false)
	return m
}

// AcquireLabelledMessage is NewLabelledMessage from the pool, held and
// given back as AcquireMessage's.
func AcquireLabelledMessage(p *codec.Publish, now func() time.Time) *Message {
	m := messagePool.Get().(*Message)
	m.refs.Store(1)
	m.fill(p, now, true)
	return m
}

// Retain takes one more reference to a pooled message for a holder that keeps
// it past the call that handed it over.
func (m *Message) Retain() {
	if m != nil && m.pooled && m.refs.Add(1) <= 1 {
		panic("delivery: a Message retained after its last release")
	}
}

// Release gives back a reference taken by AcquireMessage or Retain; the last
// one returns the message's memory to the pool.
func (m *Message) Release() {
	if m == nil || !m.pooled {
		return
	}
	switch n := m.refs.Add(-1); {
	case n > 0:
		return
	case n < 0:
		panic("delivery: a Message released more often than it was held")
	}
	if raceEnabled {
		// Under -race (every test run) a holder that kept it without a
		// reference reads garbage, and the test it runs in fails.
		poison(m.arena[:cap(m.arena)])
	}
	if cap(m.arena) > maxPooledArena {
		m.arena = nil
	}
	m.Topic, m.Payload, m.Props, m.expiresAt = nil, nil, nil, 0
	messagePool.Put(m)
}

func poison(b []byte) {
	for i := range b {
		b[i] = 0xDB
	}
}

// fill copies p into m: every byte into one arena (m's own when it is large
// enough), the properties into m's kept ones when it has them. labelled
// keeps the reserved saguin- User Properties (NewLabelledMessage).
func (m *Message) fill(p *codec.Publish, now func() time.Time, labelled bool) {
	pr := &p.Properties
	n := len(p.Topic) + len(p.Payload) + len(pr.ContentType) + len(pr.ResponseTopic) + len(pr.CorrelationData)
	for _, u := range pr.User {
		n += len(u.Key) + len(u.Value)
	}
	arena := m.arena[:0]
	if cap(arena) < n {
		arena = make([]byte, 0, n)
	}
	take := func(b []byte) []byte {
		if len(b) == 0 {
			return nil
		}
		start := len(arena)
		arena = append(arena, b...)
		return arena[start:len(arena):len(arena)]
	}
	m.Topic, m.Payload = take(p.Topic), take(p.Payload)
	if p.Payload != nil && m.Payload == nil {
		m.Payload = []byte{}
	}
	if m.pooled {
		m.arena = arena
	}
	forwarded := pr.Present &^ (1<<codec.PropTopicAlias | 1<<codec.PropSubscriptionID)
	if forwarded == 0 && len(pr.User) == 0 {
		return
	}
	if pr.Present.Has(codec.PropMessageExpiry) {
		m.expiresAt = now().UnixNano() + int64(pr.MessageExpiry)*int64(time.Second)
	}
	props := m.propsBuf
	if props == nil {
		props = new(codec.Properties)
		if m.pooled {
			m.propsBuf = props
		}
	}
	*props = codec.Properties{
		Present:         forwarded,
		PayloadFormat:   pr.PayloadFormat,
		MessageExpiry:   pr.MessageExpiry,
		ContentType:     take(pr.ContentType),
		ResponseTopic:   take(pr.ResponseTopic),
		CorrelationData: take(pr.CorrelationData),
		User:            props.User[:0],
	}
	m.Props = props
	for _, u := range pr.User {
		if labelled || !reservedUserProperty(u.Key) {
			props.User = append(props.User, codec.UserProperty{Key: take(u.Key), Value: take(u.Value)})
		}
	}
	if len(props.User) == 0 {
		if !m.pooled {
			props.User = nil
		}
		props.Present &^= 1 << codec.PropUserProperty
	}
}

// reservedUserProperty reports a User Property a publisher may not set: every
// name beginning saguin- but saguin-id is the broker's to write, and is
// stripped so that a publisher cannot forge what consumers trust (RFC 0003
// "Reserved prefix"). This is the only change ever made to what a publisher
// sent.
func reservedUserProperty(key []byte) bool {
	return bytes.HasPrefix(key, []byte("saguin-")) && string(key) != "saguin-id"
}

// Expired reports whether the message's Message Expiry Interval has run out.
func (m *Message) Expired(now time.Time) bool {
	return m.expiresAt != 0 && now.UnixNano() >= m.expiresAt
}

// Bytes is what the message holds: its topic, payload and forwarded
// properties' bytes. An outbound queue charges it, with its entry's cost,
// against its bound.
func (m *Message) Bytes() int {
	n := len(m.Topic) + len(m.Payload)
	if pr := m.Props; pr != nil {
		n += len(pr.ContentType) + len(pr.ResponseTopic) + len(pr.CorrelationData)
		for _, u := range pr.User {
			n += len(u.Key) + len(u.Value)
		}
	}
	return n
}

// ExpiresAt is when the message's Message Expiry Interval runs out, unix ns;
// 0 is never. A delivery written later carries what remains.
func (m *Message) ExpiresAt() int64 { return m.expiresAt }

// Holders is how many references a pooled message has left (0 once the last
// holder let it go; always 0 for one from NewMessage): how a holder's test
// checks that it gave back what it took.
func (m *Message) Holders() int { return int(m.refs.Load()) }
