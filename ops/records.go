package ops

import (
	"net/http"
	"strings"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// stamp is a time as the /v1 bodies write it: RFC 3339 in UTC to the
// second; nil (JSON null) for none.
func stamp(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Truncate(time.Second).Format(time.RFC3339)
	return &s
}

type positionJSON struct {
	Reader   string  `json:"reader"`
	Offset   uint64  `json:"offset"`
	Behind   uint64  `json:"behind"`
	LastSeen *string `json:"last_seen"`
}

type consumersJSON struct {
	Channel    string         `json:"channel"`
	NextOffset uint64         `json:"next_offset"`
	Consumers  int            `json:"consumers"`
	Returned   int            `json:"returned"`
	Positions  []positionJSON `json:"positions"`
}

// consumers answers who is behind on each append channel (dead-letter
// channels included): every channel, since the operator wrote each one,
// and on each the hundred stored positions furthest behind, with how many
// there are. last_seen is now for a reader whose session is connected and
// its position's last write otherwise (checklist AMB-18).
func (s *Server) consumers(w http.ResponseWriter, _ *http.Request) {
	now := s.clk.Now()
	out := make([]consumersJSON, 0, len(s.opts.Source.Channels))
	for _, ch := range s.opts.Source.Channels {
		if ch.Positions == nil {
			continue
		}
		_, readers := ch.Lowest()
		next := ch.Counts.Next()
		list, err := ch.Positions.FurthestBehind(rowLimit)
		if err != nil {
			s.log.Error("listing a channel's positions for /v1/operations/consumers", "channel", ch.Name, "error", err)
			textError(w, http.StatusInternalServerError, "the store could not list channel "+ch.Name+"'s positions\n")
			return
		}
		rows := make([]positionJSON, len(list))
		for i, p := range list {
			seen := p.SavedAt
			if id, ok := strings.CutPrefix(p.Reader, store.ReaderMQTTPrefix); ok && s.opts.Source.Broker.Connected(id) {
				seen = now
			}
			rows[i] = positionJSON{Reader: p.Reader, Offset: p.Offset, Behind: next - min(p.Offset, next), LastSeen: stamp(seen)}
		}
		// The count and the list are two reads: a reader arriving between
		// them must not make returned exceed consumers.
		out = append(out, consumersJSON{Channel: ch.Name, NextOffset: next, Consumers: max(readers, len(rows)), Returned: len(rows), Positions: rows})
	}
	writeJSON(w, http.StatusOK, struct {
		Channels []consumersJSON `json:"channels"`
	}{out})
}

type refusedJSON struct {
	ClientID string  `json:"client_id"`
	User     string  `json:"user"`
	Reason   string  `json:"reason"`
	Count    uint64  `json:"count"`
	LastSeen *string `json:"last_seen"`
}

// refused answers which clients this broker refused, at CONNECT or by
// ending the connection, worst first, from the broker's record.
func (s *Server) refused(w http.ResponseWriter, _ *http.Request) {
	list, tracked, beyond := s.opts.Source.Broker.Refusals().List(rowLimit)
	rows := make([]refusedJSON, len(list))
	for i, r := range list {
		rows[i] = refusedJSON{ClientID: r.ClientID, User: r.User, Reason: r.Reason, Count: r.Count, LastSeen: stamp(r.LastSeen)}
	}
	writeJSON(w, http.StatusOK, struct {
		Clients  []refusedJSON `json:"clients"`
		Returned int           `json:"returned"`
		Tracked  int           `json:"tracked"`
		Beyond   uint64        `json:"beyond"`
	}{rows, len(rows), tracked, beyond})
}

type lostJSON struct {
	Reader        string  `json:"reader"`
	Channel       string  `json:"channel"`
	Kind          string  `json:"kind"`
	Reported      bool    `json:"reported"`
	Count         uint64  `json:"count"`
	RecordsMissed uint64  `json:"records_missed"`
	LastPosition  uint64  `json:"last_position"`
	LastFloor     uint64  `json:"last_floor"`
	LastSeen      *string `json:"last_seen"`
}

// positionLost answers which readers the retention floor passed and how
// much each lost, most records missed first, from the broker's record.
func (s *Server) positionLost(w http.ResponseWriter, _ *http.Request) {
	list, tracked, beyond := s.opts.Source.Broker.Losses().List(rowLimit)
	rows := make([]lostJSON, len(list))
	for i, l := range list {
		rows[i] = lostJSON{Reader: l.Reader, Channel: l.Channel, Kind: l.Kind, Reported: l.Reported, Count: l.Count,
			RecordsMissed: l.RecordsMissed, LastPosition: l.LastPosition, LastFloor: l.LastFloor, LastSeen: stamp(l.LastSeen)}
	}
	writeJSON(w, http.StatusOK, struct {
		Readers  []lostJSON `json:"readers"`
		Returned int        `json:"returned"`
		Tracked  int        `json:"tracked"`
		Beyond   uint64     `json:"beyond"`
	}{rows, len(rows), tracked, beyond})
}

type jobJSON struct {
	Offset     uint64  `json:"offset"`
	Topic      string  `json:"topic"`
	Attempts   uint32  `json:"attempts"`
	State      string  `json:"state"`
	Holder     *string `json:"holder,omitempty"`
	LeaseUntil *string `json:"lease_until,omitempty"`
	FirstSeen  *string `json:"first_seen"`
	LastSeen   *string `json:"last_seen"`
}

// jobStates are RFC 0005's names for a job's state.
var jobStates = map[store.JobState]string{
	store.JobAvailable: "waiting", store.JobDelivering: "delivering", store.JobLeased: "leased",
}

// queue answers what a queue holds: the hundred unresolved jobs with the
// most attempts (then the oldest), each with its state, and holder and
// lease deadline only while leased; first_seen and last_seen are its first
// and last delivery, null before one (checklist AMB-18). No payload is read.
// A name that is not a served queue is 404 and names none that are.
func (s *Server) queue(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, queuesPrefix)
	for _, q := range s.opts.Source.Queues {
		if q.Name != name {
			continue
		}
		unresolved := max(q.Depth(), 0)
		list, err := q.Jobs(rowLimit)
		if err != nil {
			s.log.Error("listing a queue's jobs for /v1/operations/queues", "channel", name, "error", err)
			textError(w, http.StatusInternalServerError, "the store could not list the queue's jobs\n")
			return
		}
		rows := make([]jobJSON, len(list))
		for i, j := range list {
			rows[i] = jobJSON{Offset: j.Offset, Topic: j.Topic, Attempts: j.Attempts, State: jobStates[j.State],
				FirstSeen: stamp(j.FirstDelivery), LastSeen: stamp(j.LastDelivery)}
			if j.State == store.JobLeased {
				holder := j.Holder
				rows[i].Holder, rows[i].LeaseUntil = &holder, stamp(j.LeaseUntil)
			}
		}
		writeJSON(w, http.StatusOK, struct {
			Channel    string    `json:"channel"`
			Unresolved int       `json:"unresolved"`
			Returned   int       `json:"returned"`
			Records    []jobJSON `json:"records"`
		}{name, max(unresolved, len(rows)), len(rows), rows})
		return
	}
	textError(w, http.StatusNotFound, "no such queue\n")
}
