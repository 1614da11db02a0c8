package broker

import (
	"sync"
	"time"
)

// logEvery is how often one cause of a repeated refusal or storage failure
// is written: at most one line per cause in that time, carrying how many
// went unwritten since the last, as RFC 0002 already does for the broadcast
// log's give-way. A client refused a thousand times a second then costs the
// log one line every ten seconds rather than one per packet, and a full disk
// is not written to once per publish to say that it is full (issue 16).
const logEvery = 10 * time.Second

// logBound decides, per cause and client, whether a line is written now, so
// that every client's first refusal of a kind is seen and a client repeating
// it is written once every ten seconds. The map is bounded: at maxBound
// entries the ones that have been quiet for logEvery are swept out, and when
// every entry is recent a newcomer shares its cause's line with every other
// client (a fleet refused at once is one line per cause, not one per client).
const maxBound = 4096

type logBound struct {
	mu     sync.Mutex
	causes map[string]*boundCause
}

type boundCause struct {
	at      time.Time
	unsaid  uint64
	written bool
}

// allow reports whether a line for cause is written at now, and how many
// lines for it were held back since the last one written.
func (l *logBound) allow(cause, client string, now time.Time) (bool, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.causes == nil {
		l.causes = map[string]*boundCause{}
	}
	key := cause + "\x00" + client
	c := l.causes[key]
	if c == nil && len(l.causes) >= maxBound {
		for k, e := range l.causes {
			if now.Sub(e.at) >= logEvery {
				delete(l.causes, k)
			}
		}
		if len(l.causes) >= maxBound {
			key = cause // every entry recent: one line for the cause
			c = l.causes[key]
		}
	}
	if c == nil {
		c = &boundCause{}
		l.causes[key] = c
	}
	if c.written && now.Sub(c.at) < logEvery {
		c.unsaid++
		return false, 0
	}
	n := c.unsaid
	c.at, c.unsaid, c.written = now, 0, true
	return true, n
}
