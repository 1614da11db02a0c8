package main

import (
	"fmt"
	"strings"

	"github.com/saguin-edge/saguin/broker"
	"github.com/saguin-edge/saguin/broker/auth"
	"github.com/saguin-edge/saguin/config"
)

// loadAccess reads every password file and the acl_file the configuration
// names - the MQTT doors', and the operations block's and doors', which the
// same signal re-reads - as one transaction: it returns the Access to put in
// force, or every file that cannot be used and nothing (RFC 0002 "Who may
// connect": "Nothing is applied unless every file loaded").
func loadAccess(cfg *config.Config) (*broker.Access, []error) {
	var errs []error
	users := map[string]*auth.Users{}
	read := func(path string, operations bool) *auth.Users {
		if u, ok := users[path]; ok {
			return u
		}
		pf, findings := config.ReadPasswordFile(path, operations)
		if len(findings) > 0 {
			for _, f := range findings {
				errs = append(errs, fmt.Errorf("%s:%d:%s", path, f.Line, f.Message))
			}
			users[path] = nil
			return nil
		}
		u, err := pf.Users()
		if err != nil {
			errs = append(errs, err)
		}
		users[path] = u
		return u
	}
	a := &broker.Access{Doors: map[string]broker.DoorAccess{}}
	for _, d := range cfg.Broker.MQTT.Listeners {
		da := broker.DoorAccess{AllowAnonymous: d.AllowAnonymous}
		if d.PasswordFile != "" {
			da.Users = read(d.PasswordFile, false)
			certs := d.TLS != nil && d.TLS.ClientCAFile != ""
			if da.Users != nil && da.Users.Len() == 0 && !d.AllowAnonymous && !certs {
				errs = append(errs, fmt.Errorf("%s names no users, on listener %s admitting nobody else: no client could connect", d.PasswordFile, d.Name))
			}
		}
		a.Doors[d.Name] = da
	}
	if ops := cfg.Broker.Operations; ops != nil {
		paths := []string{ops.PasswordFile}
		for _, d := range ops.Listeners {
			paths = append(paths, d.PasswordFile)
		}
		for _, p := range paths {
			if p == "" {
				continue
			}
			if u := read(p, true); u != nil && u.Len() == 0 {
				errs = append(errs, fmt.Errorf("%s names no users: an operations listener nobody can read", p))
			}
		}
	}
	rules, err := cfg.LoadACL()
	if err != nil {
		errs = append(errs, err)
	}
	a.ACL = rules
	if len(errs) > 0 {
		return nil, errs
	}
	return a, nil
}

// heldSummary says what an Access holds, for the log line a re-read
// writes: each file's path and its users, and the acl_file's roles.
func heldSummary(cfg *config.Config, a *broker.Access) []any {
	var files []string
	seen := map[string]bool{}
	for _, d := range cfg.Broker.MQTT.Listeners {
		if u := a.Doors[d.Name].Users; u != nil && !seen[u.Path] {
			seen[u.Path] = true
			files = append(files, fmt.Sprintf("%s (%d users)", u.Path, u.Len()))
		}
	}
	args := []any{"password_files", strings.Join(files, ", ")}
	if a.ACL != nil {
		args = append(args, "acl_file", a.ACL.Path, "roles", len(a.ACL.Roles), "entries", len(a.ACL.Entries))
	}
	return args
}
