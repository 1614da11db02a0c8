package netloop

import (
	"bytes"
	"time"

	"saguin/codec"
)

// Message is a publication as it is routed: its own memory, never changed once
// made, and shared by every delivery of it - each connection encodes it into
// its own PUBLISH with its own packet identifier.
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
}

// NewMessage copies what a delivery needs out of p, whose slices alias a read
// buffer: one allocation for every byte, one more when User Properties exist.
func NewMessage(p *codec.Publish) *Message {
	pr := &p.Properties
	n := len(p.Topic) + len(p.Payload) + len(pr.ContentType) + len(pr.ResponseTopic) + len(pr.CorrelationData)
	for _, u := range pr.User {
		n += len(u.Key) + len(u.Value)
	}
	arena := make([]byte, 0, n)
	take := func(b []byte) []byte {
		if len(b) == 0 {
			return nil
		}
		start := len(arena)
		arena = append(arena, b...)
		return arena[start:len(arena):len(arena)]
	}
	m := &Message{Topic: take(p.Topic), Payload: take(p.Payload)}
	if p.Payload != nil && m.Payload == nil {
		m.Payload = []byte{}
	}
	forwarded := pr.Present &^ (1<<codec.PropTopicAlias | 1<<codec.PropSubscriptionID)
	if forwarded == 0 && len(pr.User) == 0 {
		return m
	}
	if pr.Present.Has(codec.PropMessageExpiry) {
		m.expiresAt = time.Now().UnixNano() + int64(pr.MessageExpiry)*int64(time.Second)
	}
	m.Props = &codec.Properties{
		Present:         forwarded,
		PayloadFormat:   pr.PayloadFormat,
		MessageExpiry:   pr.MessageExpiry,
		ContentType:     take(pr.ContentType),
		ResponseTopic:   take(pr.ResponseTopic),
		CorrelationData: take(pr.CorrelationData),
	}
	kept := 0
	for _, u := range pr.User {
		if !reservedUserProperty(u.Key) {
			kept++
		}
	}
	if kept > 0 {
		m.Props.User = make([]codec.UserProperty, 0, kept)
		for _, u := range pr.User {
			if !reservedUserProperty(u.Key) {
				m.Props.User = append(m.Props.User, codec.UserProperty{Key: take(u.Key), Value: take(u.Value)})
			}
		}
	} else {
		m.Props.Present &^= 1 << codec.PropUserProperty
	}
	return m
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

// Size is what the message is charged against an outbound queue's bound:
// its bytes and the fixed cost of the entry that holds it.
func (m *Message) Size() int {
	n := len(m.Topic) + len(m.Payload)
	if pr := m.Props; pr != nil {
		n += len(pr.ContentType) + len(pr.ResponseTopic) + len(pr.CorrelationData)
		for _, u := range pr.User {
			n += len(u.Key) + len(u.Value)
		}
	}
	return n + outEntryCost
}
