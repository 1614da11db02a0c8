package broker

// Census is what RFC 0005 has a scrape derive from the session table rather
// than keep by increments, because a gauge moved at every connect, disconnect,
// delay and resume is one that drifts.
type Census struct {
	// SessionsOffline: sessions held with no connection
	// (saguin_sessions_offline).
	SessionsOffline int
	// WillsWaiting: Wills waiting out their Will Delay Interval
	// (saguin_wills_waiting).
	WillsWaiting int
}

// Census walks every session, one shard lock at a time: a scrape's cost,
// never a publish's.
func (b *Broker) Census() Census {
	var c Census
	for i := range b.shards {
		sh := &b.shards[i]
		sh.mu.Lock()
		for _, s := range sh.sessions {
			if s.client.Load() != nil {
				continue
			}
			c.SessionsOffline++
			if s.will != nil && !s.will.DueAt.IsZero() {
				c.WillsWaiting++
			}
		}
		sh.mu.Unlock()
	}
	return c
}

// RetainedMessages is how many retained values the broadcast topics hold, as
// the retained store counts them (saguin_retained_messages).
func (b *Broker) RetainedMessages() int { return b.retained.Count() }
