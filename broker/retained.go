package broker

import (
	"sync"
	"time"

	"saguin/codec/topic"
	"saguin/netloop"
)

// retainedStore keeps the last retained message of each broadcast topic, in
// memory and bounded in bytes: past the bound a new retained value is refused
// 0x97, as a full retained store is (RFC 0002). The stored, provider-backed
// store replaces it.
type retainedStore struct {
	mu    sync.RWMutex
	byKey map[string]retained
	bytes int
	limit int
}

type retained struct {
	m   *netloop.Message
	qos byte
}

// set stores m as topic's retained message, or deletes it for an empty
// payload. It reports false when the store has no room.
func (r *retainedStore) set(t string, m *netloop.Message, qos byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, had := r.byKey[t]
	if len(m.Payload) == 0 {
		if had {
			r.bytes -= old.m.Size()
			delete(r.byKey, t)
		}
		return true
	}
	grow := m.Size()
	if had {
		grow -= old.m.Size()
	}
	if r.limit > 0 && r.bytes+grow > r.limit {
		return false
	}
	if r.byKey == nil {
		r.byKey = make(map[string]retained)
	}
	r.byKey[t] = retained{m: m, qos: qos}
	r.bytes += grow
	return true
}

// each calls fn with every retained message whose topic filter matches; one
// whose Message Expiry Interval has run out is deleted instead.
func (r *retainedStore) each(filter string, fn func(*netloop.Message, byte)) {
	now := time.Now()
	r.mu.Lock()
	var hits []retained
	for t, v := range r.byKey {
		if v.m.Expired(now) {
			r.bytes -= v.m.Size()
			delete(r.byKey, t)
			continue
		}
		if topic.Match(filter, t) {
			hits = append(hits, v)
		}
	}
	r.mu.Unlock()
	for _, v := range hits {
		fn(v.m, v.qos)
	}
}
