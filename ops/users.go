package ops

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/saguin-edge/saguin/config"
)

// usersAnswer is /v1/operations/users, built from the MQTT password files as
// they were read at start, and rebuilt only by a re-read that succeeded, so
// it says who is admitted rather than what a file says now (checklist
// CONF-2). Names only: a hash never leaves the file.
type usersAnswer struct {
	Users            []string              `json:"users"`
	AnonymousAllowed bool                  `json:"anonymous_allowed"`
	Listeners        map[string]doorAnswer `json:"listeners"`
}

type doorAnswer struct {
	Users            []string `json:"users"`
	AnonymousAllowed bool     `json:"anonymous_allowed"`
	Certificate      string   `json:"certificate"`
}

func loadUsers(cfg *config.Config) (*usersAnswer, error) {
	names := map[string][]string{}
	read := func(path string) ([]string, error) {
		if path == "" {
			return []string{}, nil
		}
		if n, ok := names[path]; ok {
			return n, nil
		}
		pf, findings := config.ReadPasswordFile(path, false)
		if len(findings) > 0 {
			return nil, fmt.Errorf("%s", strings.TrimSpace(findings[0].String()))
		}
		n := make([]string, 0, len(pf.Entries))
		for _, e := range pf.Entries {
			n = append(n, e.User)
		}
		names[path] = n
		return n, nil
	}
	m := cfg.Broker.MQTT
	top, err := read(m.PasswordFile)
	if err != nil {
		return nil, fmt.Errorf("broker.mqtt.password_file: %w", err)
	}
	a := &usersAnswer{Users: top, AnonymousAllowed: m.PasswordFile == "", Listeners: map[string]doorAnswer{}}
	if m.AllowAnonymous != nil {
		a.AnonymousAllowed = *m.AllowAnonymous
	}
	for _, d := range m.Listeners {
		u, err := read(d.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("%s.password_file: %w", d.Key, err)
		}
		cert := "none"
		if d.TLS != nil && d.TLS.ClientCAFile != "" {
			cert = "accepted"
			if d.TLS.RequireCertificate {
				cert = "required"
			}
		}
		a.Listeners[d.Name] = doorAnswer{Users: u, AnonymousAllowed: d.AllowAnonymous, Certificate: cert}
	}
	return a, nil
}

func (s *Server) usersRoute(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.users.Load())
}
