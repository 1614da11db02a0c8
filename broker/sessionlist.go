package broker

import (
	"cmp"
	"slices"
	"time"

	"github.com/saguin-edge/saguin/netloop"
)

// connInfo is what a session's latest connection said of itself. The client
// chose the user name, so it is kept cut to limits.max_topic_length, the
// bound every client string outliving its packet is held to (RFC 0005 "What
// the /v1 routes answer with").
type connInfo struct {
	user       string
	door       string
	remote     string
	keepalive  uint16
	version    byte
	cleanStart bool
}

func (b *Broker) connInfoOf(req *netloop.ConnectRequest) connInfo {
	return connInfo{
		user:       string(Cut(req.Username, b.opts.MaxTopicLength)),
		door:       req.Door,
		remote:     req.Remote,
		keepalive:  req.Keepalive,
		version:    req.Version,
		cleanStart: req.CleanStart,
	}
}

// Cut is s bounded to n bytes, never splitting a UTF-8 sequence.
func Cut(s []byte, n int) []byte {
	if n <= 0 || len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// SessionRow is one session as /v1/operations/sessions lists it.
type SessionRow struct {
	ClientID  string
	Connected bool
	User      string
	// Protocol is the CONNECT's protocol level, 4 or 5; 0 for a session
	// restored at a start and not connected since.
	Protocol  byte
	Listener  string
	Remote    string
	Keepalive uint16
	// ExpiresAfter is the Session Expiry Interval granted while connected,
	// and what is left of it while away.
	ExpiresAfter  time.Duration
	CleanStart    bool
	Subscriptions int
	// Partitions are the slices its subscriptions declared (saguin-filter),
	// one for each filter that declared one, in filter order; nil for none.
	Partitions []PartitionRow
}

// PartitionRow is the slice one filter declared: the client's own numbers,
// shown here and in no metric (RFC 0005 "What the /v1 routes answer with").
type PartitionRow struct {
	Filter  string
	Count   uint32
	Indices []uint32
}

// SessionList is the sessions route's answer: at most limit rows, the held
// (offline) sessions first and each part in client id order, with the
// totals beside them.
type SessionList struct {
	Rows                      []SessionRow
	Total, Connected, Offline int
}

// ListSessions lists the sessions, one shard lock at a time, copying each row
// under its shard's lock: what a request costs, never what a publish does.
func (b *Broker) ListSessions(limit int) SessionList {
	now := b.now()
	var all []SessionRow
	for i := range b.shards {
		sh := &b.shards[i]
		sh.mu.Lock()
		for _, s := range sh.sessions {
			r := SessionRow{
				ClientID:      s.id,
				Connected:     s.client.Load() != nil,
				User:          s.conn.user,
				Protocol:      s.conn.version,
				Listener:      s.conn.door,
				Remote:        s.conn.remote,
				Keepalive:     s.conn.keepalive,
				ExpiresAfter:  s.expiry,
				CleanStart:    s.conn.cleanStart,
				Subscriptions: len(s.filters),
			}
			for f, sub := range s.filters {
				if sub.part != nil {
					r.Partitions = append(r.Partitions, PartitionRow{Filter: f, Count: sub.part.Count, Indices: slices.Clone(sub.part.Indices)})
				}
			}
			slices.SortFunc(r.Partitions, func(a, b PartitionRow) int { return cmp.Compare(a.Filter, b.Filter) })
			if !r.Connected && s.awaySince != 0 {
				r.ExpiresAfter = max(0, s.expiry-now.Sub(s.away()))
			}
			all = append(all, r)
		}
		sh.mu.Unlock()
	}
	l := SessionList{Total: len(all)}
	for _, r := range all {
		if r.Connected {
			l.Connected++
		}
	}
	l.Offline = l.Total - l.Connected
	slices.SortFunc(all, func(a, b SessionRow) int {
		if a.Connected != b.Connected {
			if !a.Connected {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.ClientID, b.ClientID)
	})
	l.Rows = all[:min(limit, len(all))]
	return l
}
