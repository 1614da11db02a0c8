package broker

import "sync"

// matches collects, for one publish, the sessions its topic reaches, merging
// a session's overlapping filters into one delivery. It is pooled: routing a
// publish allocates nothing but the message and any identifiers it carries.
type matches struct {
	list   []match
	at     map[*session]int // index into list, kept across uses
	mapped bool             // at is in use for this publish: the list grew long
}

// match is one session's merged delivery.
type match struct {
	s   *session
	qos byte
	rap bool     // some matching filter asked for Retain As Published
	ids []uint32 // Subscription Identifiers of the matching filters
	// read is the first matching filter's remembered read grant: one hit
	// answers for the session; a miss is asked per topic.
	read *readGrant
}

// linearMatches is how long the list is searched before the map is used.
const linearMatches = 8

var matchPool = sync.Pool{New: func() any { return &matches{} }}

func (ms *matches) add(s *session, sub subscription) {
	i := ms.find(s)
	if i < 0 {
		ms.list = append(ms.list, match{s: s, qos: sub.qos, rap: sub.retainAsPublished, read: sub.read})
		i = len(ms.list) - 1
		switch {
		case ms.mapped:
			ms.at[s] = i
		case len(ms.list) > linearMatches:
			if ms.at == nil {
				ms.at = make(map[*session]int)
			}
			for j, x := range ms.list {
				ms.at[x.s] = j
			}
			ms.mapped = true
		}
	} else {
		x := &ms.list[i]
		x.qos = max(x.qos, sub.qos)
		x.rap = x.rap || sub.retainAsPublished
	}
	if sub.id != 0 {
		// A fresh slice per delivery: it is kept with the queued delivery.
		ms.list[i].ids = append(ms.list[i].ids, sub.id)
	}
}

func (ms *matches) find(s *session) int {
	if ms.mapped {
		if i, ok := ms.at[s]; ok {
			return i
		}
		return -1
	}
	for i := range ms.list {
		if ms.list[i].s == s {
			return i
		}
	}
	return -1
}

// release empties the collection and returns it to the pool; a list grown by
// a very wide fan-out is not kept.
func (ms *matches) release() {
	clear(ms.list)
	ms.list = ms.list[:0]
	if cap(ms.list) > 4096 {
		ms.list = nil
	}
	if ms.mapped {
		clear(ms.at)
		ms.mapped = false
	}
	if len(ms.at) > 0 || cap(ms.list) == 0 {
		ms.at = nil
	}
	matchPool.Put(ms)
}
