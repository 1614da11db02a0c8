// Package ledger keeps the two bounded records the operations listener
// lists (RFC 0005 "What the /v1 routes answer with"): which clients this
// broker refused (/v1/operations/refused) and which readers the retention
// floor passed (/v1/operations/position-lost). Both are held in memory and
// emptied by a restart, like the process-lifetime counters they stand in
// front of, and both are bounded: their keys are strings strangers choose,
// so each holds at most Held rows, each string cut to the bound a log line
// keeps it to, and says in Beyond how much did not fit.
package ledger

import (
	"cmp"
	"slices"
	"sync"
	"time"
	"unicode/utf8"
)

// Held is how many rows each record keeps (RFC 0005: "the same thousand held").
const Held = 1000

// cut bounds s to n bytes at a character boundary (limits.max_topic_length:
// a CONNECT carries up to 65,535 bytes of a client id and the record
// outlives the connection). n <= 0 keeps s whole.
func cut(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Refusal is one row of the refusal record: every refusal of one client id
// and user name, with the most recent one's reason and time.
type Refusal struct {
	ClientID, User string
	Reason         string // the MQTT specification's name for the code decided
	Count          uint64
	LastSeen       time.Time
}

type refusalKey struct{ clientID, user string }

// Refusals is the record behind /v1/operations/refused. Safe for concurrent
// use; Note takes one mutex and allocates only for a new row.
type Refusals struct {
	mu     sync.Mutex
	maxLen int
	held   int
	rows   map[refusalKey]*Refusal
	// once are the rows refused exactly once: what a newcomer may displace
	// when the record is full, so a device that starts flapping later is
	// still seen and what goes is always a one-off.
	once   map[refusalKey]struct{}
	beyond uint64
}

// NewRefusals keeps at most Held rows, client ids and user names cut to
// maxLen bytes.
func NewRefusals(maxLen int) *Refusals { return newRefusals(maxLen, Held) }

func newRefusals(maxLen, held int) *Refusals {
	return &Refusals{maxLen: maxLen, held: held, rows: map[refusalKey]*Refusal{}, once: map[refusalKey]struct{}{}}
}

// Note records one refusal. When the record is full a newcomer displaces a
// client refused exactly once; when every row is a repeat offender the
// newcomer is what does not fit. Either way Beyond counts it.
func (r *Refusals) Note(clientID, user, reason string, at time.Time) {
	k := refusalKey{cut(clientID, r.maxLen), cut(user, r.maxLen)}
	r.mu.Lock()
	defer r.mu.Unlock()
	if row, ok := r.rows[k]; ok {
		row.Count++
		row.Reason, row.LastSeen = reason, at
		delete(r.once, k)
		return
	}
	if len(r.rows) >= r.held {
		r.beyond++
		var victim refusalKey
		found := false
		for v := range r.once {
			victim, found = v, true
			break
		}
		if !found {
			return
		}
		delete(r.once, victim)
		delete(r.rows, victim)
	}
	r.rows[k] = &Refusal{ClientID: k.clientID, User: k.user, Reason: reason, Count: 1, LastSeen: at}
	r.once[k] = struct{}{}
}

// List is the n worst rows - most refusals first, then the most recent -
// with how many rows are held and how many refusals did not fit.
func (r *Refusals) List(n int) (rows []Refusal, tracked int, beyond uint64) {
	r.mu.Lock()
	all := make([]Refusal, 0, len(r.rows))
	for _, row := range r.rows {
		all = append(all, *row)
	}
	tracked, beyond = len(r.rows), r.beyond
	r.mu.Unlock()
	slices.SortFunc(all, func(a, b Refusal) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		if c := b.LastSeen.Compare(a.LastSeen); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.ClientID, b.ClientID), cmp.Compare(a.User, b.User))
	})
	return all[:min(n, len(all))], tracked, beyond
}

// The kinds of passing (RFC 0005 "GET /v1/operations/position-lost").
const (
	// KindConsumer: overtaken while connected and reading; MQTT gives no
	// way to tell it.
	KindConsumer = "consumer"
	// KindSession: its stored position had already been passed when it
	// came back (RFC 0005: told so with Session Present = 0).
	KindSession = "session"
	// KindBridge: an outbound rule's position; the peer is told nothing.
	KindBridge = "bridge"
)

// Loss is one row of the position-lost record: every passing of one reader
// on one channel.
type Loss struct {
	Reader, Channel string
	Kind            string // the most recent passing's
	// Reported is false when any passing this row aggregates went untold.
	Reported      bool
	Count         uint64 // passings, never readers
	RecordsMissed uint64 // accumulated over every passing
	LastPosition  uint64 // the most recent passing's position and floor
	LastFloor     uint64
	LastSeen      time.Time
}

type lossKey struct{ reader, channel string }

// Losses is the record behind /v1/operations/position-lost.
type Losses struct {
	mu     sync.Mutex
	maxLen int
	held   int
	rows   map[lossKey]*Loss
	beyond uint64
}

// NewLosses keeps at most Held rows, readers cut to maxLen bytes past their
// scheme.
func NewLosses(maxLen int) *Losses { return newLosses(maxLen, Held) }

func newLosses(maxLen, held int) *Losses {
	return &Losses{maxLen: maxLen, held: held, rows: map[lossKey]*Loss{}}
}

// Note records that the floor passed reader's position on channel. kind
// is KindConsumer, KindSession or KindBridge; reported says whether the
// reader was told (a session told with Session Present 0). When
// the record is full a newcomer displaces the reader that has lost least,
// and only if it has lost more; otherwise the newcomer does not fit. Either
// way Beyond counts it.
func (l *Losses) Note(reader, channel, kind string, reported bool, position, floor uint64, at time.Time) {
	if floor < position {
		return // not a passing
	}
	missed := floor - position
	k := lossKey{cutReader(reader, l.maxLen), channel}
	l.mu.Lock()
	defer l.mu.Unlock()
	if row, ok := l.rows[k]; ok {
		row.Count++
		row.RecordsMissed += missed
		row.Kind, row.Reported = kind, row.Reported && reported
		row.LastPosition, row.LastFloor, row.LastSeen = position, floor, at
		return
	}
	if len(l.rows) >= l.held {
		l.beyond++
		var least *Loss
		for _, row := range l.rows {
			if least == nil || row.RecordsMissed < least.RecordsMissed {
				least = row
			}
		}
		if least == nil || least.RecordsMissed >= missed {
			return
		}
		delete(l.rows, lossKey{least.Reader, least.Channel})
	}
	l.rows[k] = &Loss{Reader: k.reader, Channel: channel, Kind: kind, Reported: reported, Count: 1,
		RecordsMissed: missed, LastPosition: position, LastFloor: floor, LastSeen: at}
}

// cutReader bounds the client id or bridge name of a reader, keeping its
// scheme whole so a cut name can never lose what kind of reader it was.
func cutReader(reader string, n int) string {
	for _, scheme := range []string{"mqtt:", "bridge:"} {
		if len(reader) > len(scheme) && reader[:len(scheme)] == scheme {
			return scheme + cut(reader[len(scheme):], n)
		}
	}
	return cut(reader, n)
}

// List is the n worst rows - most records missed first - with how many
// rows are held and how many passings did not fit.
func (l *Losses) List(n int) (rows []Loss, tracked int, beyond uint64) {
	l.mu.Lock()
	all := make([]Loss, 0, len(l.rows))
	for _, row := range l.rows {
		all = append(all, *row)
	}
	tracked, beyond = len(l.rows), l.beyond
	l.mu.Unlock()
	slices.SortFunc(all, func(a, b Loss) int {
		if c := cmp.Compare(b.RecordsMissed, a.RecordsMissed); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Reader, b.Reader), cmp.Compare(a.Channel, b.Channel))
	})
	return all[:min(n, len(all))], tracked, beyond
}
