package ops

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// The /v1/operations routes, each answering GET only.
var v1Routes = map[string]func(*Server, http.ResponseWriter, *http.Request){
	"/v1/operations/acl":           (*Server).acl,
	"/v1/operations/config":        (*Server).config,
	"/v1/operations/consumers":     (*Server).consumers,
	"/v1/operations/position-lost": (*Server).positionLost,
	"/v1/operations/refused":       (*Server).refused,
	"/v1/operations/sessions":      (*Server).sessions,
	"/v1/operations/users":         (*Server).usersRoute,
}

const queuesPrefix = "/v1/operations/queues/"

// serve routes one request: 404 for a path no route has, 405 for a method
// the path does not take, /health with no credential ever, and everything
// else behind authorize.
func (s *Server) serve(d *door, w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	var handler func(*Server, http.ResponseWriter, *http.Request)
	allow := "GET"
	switch {
	case path == "/health":
		allow = "GET, HEAD"
		handler = (*Server).health
	case path == "/metrics":
		allow = "GET, HEAD"
		handler = (*Server).metrics
	case strings.HasPrefix(path, queuesPrefix) && len(path) > len(queuesPrefix) && !strings.Contains(path[len(queuesPrefix):], "/"):
		handler = (*Server).queue
	default:
		handler = v1Routes[path]
	}
	if handler == nil {
		textError(w, http.StatusNotFound, "no such route\n")
		return
	}
	if r.Method != http.MethodGet && !(r.Method == http.MethodHead && allow != "GET") {
		w.Header().Set("Allow", allow)
		textError(w, http.StatusMethodNotAllowed, r.Method+" is not answered on "+path+"; it takes "+allow+"\n")
		return
	}
	if path != "/health" {
		v := s.authorize(d, r, path)
		if v.status != 0 {
			if v.status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Basic realm="saguin", charset="UTF-8"`)
			}
			textError(w, v.status, v.msg)
			return
		}
	}
	handler(s, w, r)
}

func textError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write([]byte(msg))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		textError(w, http.StatusInternalServerError, "the answer could not be encoded\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// health answers whether restarting this process would help: 200 when every
// publish-path lock could be taken within HealthTimeout, 503 when one could
// not (RFC 0005 "The health endpoint"). The body says nothing else.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	status, body := http.StatusOK, `{"status":"ok"}`
	if !s.opts.Source.Broker.PublishPathFree(s.clk, HealthTimeout) {
		status, body = http.StatusServiceUnavailable, `{"status":"unavailable"}`
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write([]byte(body + "\n"))
	}
}

// metrics answers the catalogue, from the previous computation while it is
// younger than min_scrape_interval, gzipped when the scraper asks.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	gz := acceptsGzip(r.Header.Get("Accept-Encoding"))
	sc := s.scraper.get(gz)
	body := sc.plain
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header().Set("Vary", "Accept-Encoding")
	if gz {
		w.Header().Set("Content-Encoding", "gzip")
		body = sc.gz
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// acceptsGzip reads Accept-Encoding for gzip with a non-zero quality.
func acceptsGzip(h string) bool {
	for _, part := range strings.Split(h, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

// config is the configuration this process resolved at start, narrowed by
// ?section= (repeats compose); an unknown section is 400 listing the names.
func (s *Server) config(w http.ResponseWriter, r *http.Request) {
	body, err := s.opts.Config.JSON(r.URL.Query()["section"]...)
	if err != nil {
		textError(w, http.StatusBadRequest, err.Error()+"\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(append(body, '\n'))
}

// acl answers what one user may do and which entry decided it, from the
// acl_file the broker holds now (it follows SIGUSR1), in --acl --json's
// single-user shape; a broker with no acl_file lets every authenticated
// client do anything. No user is 400 naming the parameter (GAP-8).
func (s *Server) acl(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if !q.Has("user") {
		textError(w, http.StatusBadRequest, "name the user: /v1/operations/acl?user=<name>[&client_id=<id>]\n")
		return
	}
	a := s.opts.Source.Broker.Access()
	if a == nil || a.ACL == nil {
		writeJSON(w, http.StatusOK, map[string]any{"acl_file": nil, "everything_allowed": true})
		return
	}
	hasID := q.Has("client_id")
	var body bytes.Buffer
	a.ACL.Explain(q.Get("user"), q.Get("client_id"), hasID).WriteJSONObject(&body, hasID)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(body.Bytes())
}

type sessionJSON struct {
	ClientID      string `json:"client_id"`
	Connected     bool   `json:"connected"`
	User          string `json:"user"`
	Protocol      *int   `json:"protocol"`
	Listener      string `json:"listener"`
	Remote        string `json:"remote"`
	Keepalive     int    `json:"keepalive"`
	ExpiresAfter  int64  `json:"expires_after"`
	CleanStart    bool   `json:"clean_start"`
	Subscriptions int    `json:"subscriptions"`
	// Partitions is absent for a session that declared no slice.
	Partitions []partitionJSON `json:"partitions,omitempty"`
}

// partitionJSON is one filter's declared slice: a list of objects, so that
// the client's filter is a value, never a key (RFC 0005).
type partitionJSON struct {
	Filter  string   `json:"filter"`
	Count   uint32   `json:"count"`
	Indices []uint32 `json:"indices"`
}

// sessions answers who is connected and who holds a session with nothing
// behind it: held sessions first, at most a hundred, with the totals.
func (s *Server) sessions(w http.ResponseWriter, _ *http.Request) {
	l := s.opts.Source.Broker.ListSessions(rowLimit)
	rows := make([]sessionJSON, len(l.Rows))
	for i, r := range l.Rows {
		rows[i] = sessionJSON{ClientID: r.ClientID, Connected: r.Connected, User: r.User, Listener: r.Listener,
			Remote: r.Remote, Keepalive: int(r.Keepalive), ExpiresAfter: int64(r.ExpiresAfter / time.Second),
			CleanStart: r.CleanStart, Subscriptions: r.Subscriptions}
		if r.Protocol != 0 {
			p := int(r.Protocol)
			rows[i].Protocol = &p
		}
		for _, pr := range r.Partitions {
			rows[i].Partitions = append(rows[i].Partitions, partitionJSON{Filter: pr.Filter, Count: pr.Count, Indices: pr.Indices})
		}
	}
	writeJSON(w, http.StatusOK, struct {
		Sessions  []sessionJSON `json:"sessions"`
		Total     int           `json:"total"`
		Connected int           `json:"connected"`
		Offline   int           `json:"offline"`
		Returned  int           `json:"returned"`
	}{rows, l.Total, l.Connected, l.Offline, len(rows)})
}
