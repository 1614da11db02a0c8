// Package broker is the core the connections hand their packets to: sessions
// (sharded by client-id hash), the subscription index (read-mostly), and the
// routing of a publish to the subscribers it reaches.
//
// This is the first delivery path: broadcast at QoS 0, 1 and 2 to current
// subscribers, plain filters, sessions that outlive their connection by
// their Session Expiry Interval (holding their filters, not yet the messages
// published while they are away), and the retained store for broadcast
// topics in memory. Channels, shared subscriptions, Wills and stored sessions
// build on this shape.
package broker

import (
	"hash/maphash"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"saguin/codec"
	"saguin/codec/topic"
	"saguin/netloop"
)

// Options are the limits the broker enforces on what a client sends.
type Options struct {
	MaxTopicLength   int // limits.max_topic_length
	MaxTopicLevels   int // limits.max_topic_levels
	MaxSubscriptions int // limits.max_subscriptions
	// RetainedMaxBytes bounds the in-memory retained store; past it a new
	// retained value is refused 0x97.
	RetainedMaxBytes int
	MaxHeaderCount   int   // limits.max_header_count: User Properties on a publish
	MaxHeaderBytes   int   // limits.max_header_bytes: their names and values together
	PublishRate      int64 // limits.publish_rate, messages a second per client; 0 none
	PublishBytes     int64 // limits.publish_bytes, bytes a second per client; 0 none
	Logger           *slog.Logger
}

// RFC 0002 defaults.
const (
	DefaultMaxTopicLength   = 1024
	DefaultMaxTopicLevels   = 200
	DefaultMaxSubscriptions = 10000
	DefaultRetainedMaxBytes = 64 << 20
	DefaultMaxHeaderCount   = 32
	DefaultMaxHeaderBytes   = 8 << 10
)

// sessionShards is how many locks the sessions are spread over.
const sessionShards = 64

// Broker routes publishes between sessions. It implements netloop.Handler.
type Broker struct {
	opts     Options
	log      *slog.Logger
	seed     maphash.Seed
	shards   [sessionShards]shard
	subs     index
	retained retainedStore
	budgets  *budgets // nil when neither publish_rate nor publish_bytes is set
}

type shard struct {
	mu       sync.Mutex
	sessions map[string]*session
}

// session is what the broker keeps for a client id: its filters, and the
// connection serving it while there is one.
type session struct {
	id      string
	client  atomic.Pointer[clientRef]
	filters map[string]subscription // guarded by the shard lock
	// expiry is the Session Expiry Interval in force, seconds: 0 is a
	// session that ends with its connection. Guarded by the shard lock.
	expiry uint32
	// quotaSaid: a max_subscriptions refusal was logged since the session
	// last added a filter - one warning per episode (RFC 0002).
	quotaSaid bool
	// expiry is the generation of the pending expiry timer; a reconnect or a
	// newer disconnect makes an older timer do nothing.
	gen uint64
}

// clientRef boxes the interface so it can sit in an atomic.Pointer.
type clientRef struct{ c netloop.Client }

// New returns a broker with opts (zero fields take RFC 0002's defaults).
func New(opts Options) *Broker {
	if opts.MaxTopicLength == 0 {
		opts.MaxTopicLength = DefaultMaxTopicLength
	}
	if opts.MaxTopicLevels == 0 {
		opts.MaxTopicLevels = DefaultMaxTopicLevels
	}
	if opts.MaxSubscriptions == 0 {
		opts.MaxSubscriptions = DefaultMaxSubscriptions
	}
	if opts.MaxHeaderCount == 0 {
		opts.MaxHeaderCount = DefaultMaxHeaderCount
	}
	if opts.MaxHeaderBytes == 0 {
		opts.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if opts.RetainedMaxBytes == 0 {
		opts.RetainedMaxBytes = DefaultRetainedMaxBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	b := &Broker{opts: opts, log: opts.Logger, seed: maphash.MakeSeed()}
	b.retained.limit = opts.RetainedMaxBytes
	b.budgets = newBudgets(opts.PublishRate, opts.PublishBytes)
	for i := range b.shards {
		b.shards[i].sessions = make(map[string]*session)
	}
	return b
}

func (b *Broker) shard(id string) *shard {
	return &b.shards[maphash.String(b.seed, id)%sessionShards]
}

// Connect attaches c to the session its client id names, taking it over from
// a connection that holds it (0x8E to the old one), or starting it new.
func (b *Broker) Connect(c netloop.Client, req *netloop.ConnectRequest) (bool, codec.ReasonCode) {
	if req.Will != nil {
		if why := b.undeliverableWill(req.Will.Topic); why != "" {
			b.log.Warn("connection refused", "client_id", req.ClientID, "code", codec.TopicNameInvalid.String(), "why", why)
			return false, codec.TopicNameInvalid
		}
	}
	sh := b.shard(req.ClientID)
	sh.mu.Lock()
	s := sh.sessions[req.ClientID]
	var old netloop.Client
	if s != nil {
		if ref := s.client.Load(); ref != nil {
			old = ref.c
		}
	}
	// A session that ends with its connection ends at the takeover that
	// closes that connection, so it is not there to resume (MQTT 5
	// 3.1.2.11.2, Session Expiry 0).
	bound := s != nil && old != nil && s.expiry == 0
	present := s != nil && !req.CleanStart && !bound
	if s != nil && (req.CleanStart || bound) {
		b.dropFilters(s)
		delete(sh.sessions, req.ClientID)
		s = nil
	}
	if s == nil {
		s = &session{id: req.ClientID, filters: make(map[string]subscription)}
		sh.sessions[req.ClientID] = s
	}
	s.gen++
	s.expiry = req.SessionExpiry
	s.client.Store(&clientRef{c})
	sh.mu.Unlock()
	if old != nil {
		b.log.Info("session taken over", "client_id", req.ClientID)
		old.Kick(codec.SessionTakenOver)
	}
	return present, codec.Success
}

// Disconnected ends the connection's hold on its session. The session outlives
// it by sessionExpiry seconds, or ends now at 0. A connection that was taken
// over no longer holds the session and changes nothing (invariant 17).
func (b *Broker) Disconnected(c netloop.Client, sessionExpiry uint32, _ bool) {
	id := c.ClientID()
	sh := b.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s := sh.sessions[id]
	if s == nil {
		return
	}
	ref := s.client.Load()
	if ref == nil || ref.c != c {
		return
	}
	s.client.Store(nil)
	s.gen++
	s.expiry = sessionExpiry
	if sessionExpiry == 0 {
		b.dropFilters(s)
		delete(sh.sessions, id)
		return
	}
	gen := s.gen
	time.AfterFunc(time.Duration(sessionExpiry)*time.Second, func() {
		sh.mu.Lock()
		defer sh.mu.Unlock()
		if cur := sh.sessions[id]; cur == s && s.gen == gen && s.client.Load() == nil {
			b.dropFilters(s)
			delete(sh.sessions, id)
		}
	})
}

// dropFilters removes every filter of s from the index; shard lock held.
func (b *Broker) dropFilters(s *session) {
	for f := range s.filters {
		b.subs.remove(f, s)
	}
	clear(s.filters)
}

// Publish routes p to the subscribers it reaches and answers its PUBACK
// code, with why for a refusal.
func (b *Broker) Publish(c netloop.Client, p *codec.Publish) (codec.ReasonCode, string) {
	// The rate comes first: before the topic is resolved or anything kept,
	// so nothing accumulates whatever an over-eager client does. Said at
	// debug, since a client held to its rate makes one line per publish.
	if !b.budgets.take(c.ClientID(), len(p.Payload), time.Now()) {
		b.log.Debug("publish refused", "client_id", c.ClientID(), "topic", string(p.Topic), "code", codec.QuotaExceeded.String(), "why", "publish rate exceeded")
		return codec.QuotaExceeded, "over limits.publish_rate or limits.publish_bytes"
	}
	if n, size := headers(&p.Properties); n > b.opts.MaxHeaderCount {
		return b.refusePublish(c, p, codec.QuotaExceeded, "more User Properties than limits.max_header_count")
	} else if size > b.opts.MaxHeaderBytes {
		return b.refusePublish(c, p, codec.QuotaExceeded, "User Properties larger than limits.max_header_bytes")
	}
	if code, why := b.checkTopic(p.Topic); code != codec.Success {
		return b.refusePublish(c, p, code, why)
	}
	if err := codec.CheckPayloadFormat(p); err != nil {
		return b.refusePublish(c, p, codec.PayloadFormatInvalid, "Payload Format Indicator says UTF-8 and the payload is not")
	}
	var m *netloop.Message
	if p.Retain {
		m = netloop.NewMessage(p)
		if !b.retained.set(string(p.Topic), m, p.QoS) {
			return b.refusePublish(c, p, codec.QuotaExceeded, "the retained store is full")
		}
	}
	ms := matchPool.Get().(*matches)
	defer ms.release()
	publisher := c.ClientID()
	b.subs.match(p.Topic, func(s *session, sub subscription) {
		if sub.noLocal && s.id == publisher {
			return
		}
		if s.client.Load() == nil {
			return // away: holding messages for it comes with stored sessions
		}
		ms.add(s, sub)
	})
	// One copy per session, at the highest QoS its matching filters were
	// granted, carrying every identifier (RFC 0003; MQTT 5 3.3.4).
	for i := range ms.list {
		x := &ms.list[i]
		ref := x.s.client.Load()
		if ref == nil {
			continue
		}
		if m == nil {
			m = netloop.NewMessage(p)
		}
		ref.c.Deliver(m, netloop.Delivery{QoS: min(p.QoS, x.qos), Retain: p.Retain && x.rap, SubscriptionIDs: x.ids})
	}
	return codec.Success, ""
}

// headers counts a publish's User Properties and their bytes, names and
// values together.
func headers(p *codec.Properties) (n, size int) {
	for _, u := range p.User {
		size += len(u.Key) + len(u.Value)
	}
	return len(p.User), size
}

// refusePublish logs a refused publish, whatever its QoS (RFC 0002: every
// refusal is logged, so one with no reply at all is still visible).
func (b *Broker) refusePublish(c netloop.Client, p *codec.Publish, code codec.ReasonCode, why string) (codec.ReasonCode, string) {
	b.log.Warn("publish refused", "client_id", c.ClientID(), "topic", string(p.Topic), "qos", p.QoS, "code", code.String(), "why", why)
	return code, why
}

// checkTopic applies RFC 0002 "Publishing" to a topic name: 0x90 over
// max_topic_length or max_topic_levels, in the reserved $saguin/ space, or
// beginning $share/; 0x87 in the $SYS tree.
func (b *Broker) checkTopic(t []byte) (codec.ReasonCode, string) {
	s := string(t)
	switch {
	case len(t) > b.opts.MaxTopicLength:
		return codec.TopicNameInvalid, "topic is longer than limits.max_topic_length"
	case topic.Levels(s) > b.opts.MaxTopicLevels:
		return codec.TopicNameInvalid, "topic is deeper than limits.max_topic_levels"
	case strings.HasPrefix(s, "$saguin/"):
		return codec.TopicNameInvalid, "topic is in the reserved $saguin/ space"
	case strings.HasPrefix(s, "$share/"):
		return codec.TopicNameInvalid, "$share/ is a subscription form, not a topic"
	case strings.HasPrefix(s, "$SYS"):
		return codec.NotAuthorized, "topic is in the $SYS tree"
	}
	return codec.Success, ""
}

// undeliverableWill names why a Will on topic could never be delivered - RFC
// 0002's 0x90 at CONNECT - or returns "". A Will is a publish the broker
// makes for the client later, so it is held to every rule a publish is, and
// one that could only ever be refused is refused now, while the client can
// still be told.
func (b *Broker) undeliverableWill(t []byte) string {
	if topic.ValidateName(string(t)) != nil {
		return "the Will topic is not a topic name"
	}
	if code, why := b.checkTopic(t); code != codec.Success {
		return "the Will topic: " + why
	}
	return ""
}

// Subscribe grants one filter (the QoS asked for, at most 2) and sends the
// retained messages it matches; a refusal comes with why.
func (b *Broker) Subscribe(c netloop.Client, f []byte, o netloop.SubscribeOptions) (codec.ReasonCode, string) {
	filter := string(f)
	switch {
	case topic.ValidateFilter(filter) != nil:
		return codec.TopicFilterInvalid, "not a topic filter: + and # take a whole level, # only the last"
	case topic.Levels(filter) > b.opts.MaxTopicLevels:
		return codec.TopicFilterInvalid, "deeper than limits.max_topic_levels"
	case strings.HasPrefix(filter, "$share/") || strings.HasPrefix(filter, "$SHARE/"):
		return codec.SharedSubscriptionsNotSupported, "shared subscriptions are not served yet"
	case strings.HasPrefix(filter, "$saguin/queue/"):
		return codec.TopicFilterInvalid, "names no queue"
	case strings.HasPrefix(filter, "$saguin/"):
		return codec.NotAuthorized, "nothing is delivered under $saguin/ but a queue's form and a seek reply"
	case strings.HasPrefix(filter, "$SYS"):
		return codec.NotAuthorized, "nothing is delivered under $SYS"
	}
	id := c.ClientID()
	sh := b.shard(id)
	sh.mu.Lock()
	s := sh.sessions[id]
	if s == nil || s.client.Load() == nil || s.client.Load().c != c {
		sh.mu.Unlock()
		return codec.UnspecifiedError, "the session was taken over" // between packets
	}
	_, existed := s.filters[filter]
	if !existed && len(s.filters) >= b.opts.MaxSubscriptions {
		say := !s.quotaSaid
		s.quotaSaid = true
		sh.mu.Unlock()
		if say {
			b.log.Warn("subscription refused", "client_id", id, "code", codec.QuotaExceeded.String(), "why", "limits.max_subscriptions", "max_subscriptions", b.opts.MaxSubscriptions)
		}
		return codec.QuotaExceeded, "past limits.max_subscriptions"
	}
	if !existed {
		s.quotaSaid = false
	}
	sub := subscription{qos: min(o.QoS, 2), noLocal: o.NoLocal, retainAsPublished: o.RetainAsPublished, id: o.SubscriptionID}
	s.filters[filter] = sub
	b.subs.add(filter, s, sub)
	sh.mu.Unlock()
	if o.RetainHandling == 0 || (o.RetainHandling == 1 && !existed) {
		b.retained.each(filter, func(m *netloop.Message, qos byte) {
			d := netloop.Delivery{QoS: min(qos, sub.qos), Retain: true}
			if sub.id != 0 {
				d.SubscriptionIDs = []uint32{sub.id}
			}
			c.Deliver(m, d)
		})
	}
	return codec.ReasonCode(sub.qos), ""
}

// Unsubscribe removes one filter: 0x00, or 0x11 when the session held none.
func (b *Broker) Unsubscribe(c netloop.Client, f []byte) codec.ReasonCode {
	filter := string(f)
	id := c.ClientID()
	sh := b.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s := sh.sessions[id]
	if s == nil || s.client.Load() == nil || s.client.Load().c != c {
		return codec.NoSubscriptionExisted // taken over: not this connection's session
	}
	if _, ok := s.filters[filter]; !ok {
		return codec.NoSubscriptionExisted
	}
	delete(s.filters, filter)
	b.subs.remove(filter, s)
	return codec.Success
}

// Sessions reports how many sessions are held, connected or not.
func (b *Broker) Sessions() int {
	n := 0
	for i := range b.shards {
		sh := &b.shards[i]
		sh.mu.Lock()
		n += len(sh.sessions)
		sh.mu.Unlock()
	}
	return n
}
