package memory

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// channelKind is what a channel file holds; it is written into the file and
// compared with what the configuration asks for.
type channelKind uint8

const (
	kindAppend channelKind = 1
	kindLatest channelKind = 2
	kindQueue  channelKind = 3
)

func (k channelKind) String() string {
	switch k {
	case kindAppend:
		return "append"
	case kindLatest:
		return "latest"
	case kindQueue:
		return "queue"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// channelData is one channel's state as copied out for a snapshot or read
// back from one: the plain values, no locks.
type channelData struct {
	next, floor uint64
	records     []store.Record
	deleted     []bool    // latest: parallel to records, true for a tombstone
	jobs        []jobMeta // queue: parallel to records
	positions   []store.Position
	holds       []store.Held
}

// jobMeta is what a queue job keeps across a restart besides its record.
type jobMeta struct {
	attempts    uint32
	first, last time.Time
}

// channelFile is a decoded channel snapshot file.
type channelFile struct {
	path  string
	kind  channelKind
	stale bool // written before the last shutdown recorded in the manifest began
	log   channelData
	dlq   *channelData // a queue's dead-letter channel
}

type holdKey struct {
	client string
	packet uint16
}

// holdSet keeps a channel's held exactly-once publishes; guarded by the
// owning store's lock.
type holdSet struct {
	m map[holdKey]store.Held
}

func (h *holdSet) put(x store.Held) (replaced store.Held, had bool) {
	if h.m == nil {
		h.m = map[holdKey]store.Held{}
	}
	k := holdKey{x.ClientID, x.PacketID}
	replaced, had = h.m[k]
	h.m[k] = x
	return replaced, had
}

func (h *holdSet) take(client string, packet uint16) (store.Held, bool) {
	k := holdKey{client, packet}
	x, ok := h.m[k]
	if ok {
		delete(h.m, k)
	}
	return x, ok
}

// list is every hold, oldest first (ties by client id and packet id, so two
// providers list the same holds in the same order).
func (h *holdSet) list() []store.Held {
	out := make([]store.Held, 0, len(h.m))
	for _, x := range h.m {
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.HeldAt.Equal(b.HeldAt) {
			return a.HeldAt.Before(b.HeldAt)
		}
		if a.ClientID != b.ClientID {
			return a.ClientID < b.ClientID
		}
		return a.PacketID < b.PacketID
	})
	return out
}

func (h *holdSet) bytes() int64 {
	var n int64
	for _, x := range h.m {
		n += store.RecordSize(&x.Record)
	}
	return n
}

// positionSet keeps readers' positions in a slice, so the lowest position and
// the count come from one pass over contiguous memory; idx finds a reader.
type positionSet struct {
	list []store.Position
	idx  map[string]int
}

func (s *positionSet) get(reader string) (store.Position, bool) {
	i, ok := s.idx[reader]
	if !ok {
		return store.Position{}, false
	}
	return s.list[i], true
}

func (s *positionSet) save(p store.Position) {
	if s.idx == nil {
		s.idx = map[string]int{}
	}
	if i, ok := s.idx[p.Reader]; ok {
		s.list[i] = p
		return
	}
	s.idx[p.Reader] = len(s.list)
	s.list = append(s.list, p)
}

func (s *positionSet) drop(reader string) bool {
	i, ok := s.idx[reader]
	if !ok {
		return false
	}
	last := len(s.list) - 1
	if i != last {
		s.list[i] = s.list[last]
		s.idx[s.list[i].Reader] = i
	}
	s.list[last] = store.Position{}
	s.list = s.list[:last]
	delete(s.idx, reader)
	return true
}

func (s *positionSet) lowest(next uint64) (uint64, int) {
	low := next
	for i := range s.list {
		if s.list[i].Offset < low {
			low = s.list[i].Offset
		}
	}
	return low, len(s.list)
}

// passed lists the readers a floor raised from oldFloor to newFloor passed.
func (s *positionSet) passed(oldFloor, newFloor uint64) []string {
	var out []string
	for i := range s.list {
		if o := s.list[i].Offset; o >= oldFloor && o < newFloor {
			out = append(out, s.list[i].Reader)
		}
	}
	return out
}

// sorted copies the positions in reader order (snapshots are deterministic).
func (s *positionSet) sorted() []store.Position {
	out := append([]store.Position(nil), s.list...)
	sort.Slice(out, func(i, j int) bool { return out[i].Reader < out[j].Reader })
	return out
}

// restorePositions loads stored positions, dropping every mqtt: reader whose
// session would have expired while the broker was down (notes-0004 "Expiry
// sweep at provider open"). A bridge: reader has no session and stays.
func (p *Provider) restorePositions(channel string, s *positionSet, list []store.Position) {
	now := p.now()
	for _, pos := range list {
		if strings.HasPrefix(pos.Reader, store.ReaderMQTTPrefix) && positionExpired(pos, p.opts.MaxSessionExpiry, now) {
			if h := p.opts.Hooks.PositionExpired; h != nil {
				h(channel, pos.Reader)
			}
			continue
		}
		s.save(pos)
	}
}

// positionExpired judges an mqtt: position by its session's expiry, capped by
// limits.max_session_expiry. Expiry 0 is a session that ended with its
// connection, so its position goes.
func positionExpired(pos store.Position, maxExpiry time.Duration, now time.Time) bool {
	exp := pos.SessionExpiry
	if maxExpiry > 0 && exp > maxExpiry {
		exp = maxExpiry
	}
	if exp <= 0 {
		return true
	}
	if pos.SavedAt.IsZero() {
		return false
	}
	return now.Sub(pos.SavedAt) > exp
}
