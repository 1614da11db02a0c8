package ops

import (
	"fmt"
	"time"
)

// Reread reads every operations door's password file and certificate again,
// and the MQTT password files /v1/operations/users answers from, from the
// paths the running configuration names. Nothing is applied here: apply
// swaps them in, and is called only when every file of the SIGUSR1 step
// read well (all or nothing, checklist AMB-24). lines say what each now
// holds, for the log.
func (s *Server) Reread() (apply func(), lines []string, err error) {
	creds, err := loadCredentials(s.opts.Config)
	if err != nil {
		return nil, nil, err
	}
	users, err := loadUsers(s.opts.Config)
	if err != nil {
		return nil, nil, err
	}
	applyCerts, loaded, err := s.certs.Reread()
	if err != nil {
		return nil, nil, fmt.Errorf("operations %w", err)
	}
	expires := map[string]time.Time{}
	for _, l := range loaded {
		expires[l.Listener] = l.Expires
	}
	for _, d := range s.opts.Config.Broker.Operations.Listeners {
		dc := creds.doors[d.Key]
		if dc.users != nil {
			lines = append(lines, fmt.Sprintf("operations listener %s: password file %s names %d users", d.Name, dc.path, dc.users.Len()))
		}
		if d.TLS != nil {
			lines = append(lines, fmt.Sprintf("operations listener %s: certificate %s expires %s", d.Name, d.TLS.CertFile, expires[d.Key].UTC().Format(time.RFC3339)))
		}
	}
	return func() {
		s.creds.Store(creds)
		s.users.Store(users)
		applyCerts()
	}, lines, nil
}
