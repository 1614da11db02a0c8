package ops

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/saguin-edge/saguin/broker/auth"
	"github.com/saguin-edge/saguin/config"
)

// credentials are what every operations door checks a caller against, read
// at start and replaced whole by a re-read that succeeded (SIGUSR1).
type credentials struct {
	doors map[string]*doorCreds // by door key
}

// doorCreds is one door's: the password file that governs it (its own or
// the block's), and whether its TLS requires a client certificate (the
// certificates themselves are netloop/certs', as every TLS door's are).
type doorCreds struct {
	path  string
	users *auth.Users // nil when no password file governs the door
	// scopes holds every user the file names: nil reaches every route.
	scopes map[string][]string
	// certRequired: the door's tls.client_ca_file with require_certificate.
	certRequired bool
}

// requiresName reports whether a request must name somebody here: a password
// file naming anybody, or a certificate required (RFC 0005 route table).
func (dc *doorCreds) requiresName() bool {
	return dc.users != nil && dc.users.Len() > 0 || dc.certRequired
}

// loadCredentials reads every password file the operations doors name; any
// that cannot be used is an error naming it, and nothing of the others is
// kept.
func loadCredentials(cfg *config.Config) (*credentials, error) {
	c := &credentials{doors: map[string]*doorCreds{}}
	files := map[string]*doorCreds{} // a file several doors share is read once
	for _, d := range cfg.Broker.Operations.Listeners {
		dc := &doorCreds{path: d.PasswordFile}
		if d.PasswordFile != "" {
			if prev, ok := files[d.PasswordFile]; ok {
				dc.users, dc.scopes = prev.users, prev.scopes
			} else {
				pf, findings := config.ReadPasswordFile(d.PasswordFile, true)
				if len(findings) > 0 {
					f := findings[0]
					return nil, fmt.Errorf("%s.password_file: %s", d.Key, strings.TrimSpace(f.String()))
				}
				if len(pf.Entries) == 0 {
					return nil, fmt.Errorf("%s.password_file: %s names no users", d.Key, d.PasswordFile)
				}
				users, err := pf.Users()
				if err != nil {
					return nil, fmt.Errorf("%s.password_file: %w", d.Key, err)
				}
				dc.users = users
				dc.scopes = make(map[string][]string, len(pf.Entries))
				for _, e := range pf.Entries {
					dc.scopes[e.User] = e.Scopes
				}
				files[d.PasswordFile] = dc
			}
		}
		dc.certRequired = d.TLS != nil && d.TLS.ClientCAFile != "" && d.TLS.RequireCertificate
		c.doors[d.Key] = dc
	}
	return c, nil
}

// verdict is what the credential check decided for one request.
type verdict struct {
	status int    // 0: served
	msg    string // the answer's text for a refusal
	// principal names the caller in the log: a user, a certificate's name,
	// "" for nobody.
	principal string
}

// metricsOnly is the scope of a named caller with no entry in the door's
// password file, and of a verified certificate that carries no name (RFC
// 0005 "Who Sagüin thinks you are").
var metricsOnly = []string{"/metrics"}

// authorize decides whether the request may reach path, in RFC 0005's
// order: an offered password is checked and ends the question either way;
// then a verified certificate's name - this broker's own TLS, or the one a
// proxy_protocol door's PROXY header says the proxy verified; then, on a
// unix door without proxy_protocol only, X-Saguin-Principal; and a request naming nobody is
// refused where the door requires a name, and otherwise trusted as the local
// reader it must be - on a tcp door only when it addressed the broker by an
// IP literal or localhost (the DNS-rebinding rule).
func (s *Server) authorize(d *door, r *http.Request, path string) verdict {
	dc := s.creds.Load().doors[d.cfg.Key]
	// A name the door's file holds reaches what its entry says (nil: every
	// route); any other name reaches /metrics alone.
	scopesOf := func(name string) []string {
		if sc, ok := dc.scopes[name]; ok {
			return sc
		}
		return metricsOnly
	}
	var name string
	var scopes []string
	named := false
	switch user, pass, ok := r.BasicAuth(); {
	case ok || r.Header.Get("Authorization") != "":
		if !ok {
			return s.reject(d, r, "", "an Authorization header that is not HTTP Basic")
		}
		if bad(user) {
			return s.controlChars(d, r, "a Basic user name")
		}
		if dc.users == nil {
			return s.reject(d, r, user, "a password on a door no password_file governs")
		}
		if outcome := dc.users.Check(user, []byte(pass)); outcome != auth.OK {
			return s.reject(d, r, user, outcome.String())
		}
		if sc, ok := dc.scopes[user]; ok && sc != nil {
			scopes = sc
		}
		name, named = user, true
	case r.TLS != nil && len(r.TLS.VerifiedChains) > 0:
		leaf := r.TLS.VerifiedChains[0][0]
		name = leaf.Subject.CommonName
		if name == "" && len(leaf.DNSNames) > 0 {
			name = leaf.DNSNames[0]
		}
		if bad(name) {
			return s.controlChars(d, r, "a certificate's name")
		}
		if name == "" {
			scopes = metricsOnly
		} else {
			scopes = scopesOf(name)
		}
		named = true
	case proxyHeader(r) != nil && proxyHeader(r).Verified():
		// The Common Name the proxy verified; a certificate it verified and
		// sent no CN for is named by nothing, as a nameless one is here.
		name = proxyHeader(r).CN
		if bad(name) {
			return s.controlChars(d, r, "the PROXY header's Common Name")
		}
		if name == "" {
			scopes = metricsOnly
		} else {
			scopes = scopesOf(name)
		}
		named = true
	// A proxy_protocol door's proxy passes the client's bytes through, so a
	// header there is whatever the client typed: not read.
	case d.cfg.Kind == config.KindUnix && !d.cfg.ProxyProtocol && strings.TrimSpace(r.Header.Get("X-Saguin-Principal")) != "":
		name = strings.Trim(r.Header.Get("X-Saguin-Principal"), " \t")
		if bad(name) {
			return s.controlChars(d, r, "X-Saguin-Principal")
		}
		scopes, named = scopesOf(name), true
	}
	if !named {
		if dc.requiresName() {
			return verdict{status: http.StatusUnauthorized, msg: "this listener needs a credential\n"}
		}
		if d.cfg.Kind == config.KindTCP && !addressedByIP(r.Host) {
			return verdict{status: http.StatusForbidden, msg: fmt.Sprintf(
				"a request naming nobody is served only when it addresses this broker by an IP literal or localhost, not %q: give %s a password_file to be reached by name\n",
				clip(r.Host, 64), d.cfg.Key)}
		}
		return verdict{}
	}
	if !reaches(scopes, path) {
		return verdict{status: http.StatusForbidden, principal: name, msg: "this credential does not reach " + path + "\n"}
	}
	return verdict{principal: name}
}

func (s *Server) reject(d *door, r *http.Request, user, why string) verdict {
	// The credential is never logged; the user name is a client string, cut.
	s.log.Warn("operations credential rejected", "listener", d.cfg.Name, "remote", remoteOf(r), "user", clip(user, 64), "why", why)
	return verdict{status: http.StatusUnauthorized, msg: "credential rejected\n"}
}

func (s *Server) controlChars(d *door, r *http.Request, source string) verdict {
	s.log.Warn("operations request refused: the name holds a control character", "listener", d.cfg.Name, "remote", remoteOf(r), "source", source)
	return verdict{status: http.StatusForbidden, msg: "a name holding a control character is nobody's\n"}
}

// bad reports a name holding U+0000 or another control character.
func bad(name string) bool {
	for _, r := range name {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return true
		}
	}
	return false
}

// reaches reports whether scopes (nil: every route) grant path, a scope
// matching at a segment boundary.
func reaches(scopes []string, path string) bool {
	if scopes == nil {
		return true
	}
	for _, sc := range scopes {
		if path == sc || strings.HasPrefix(path, sc) && (strings.HasSuffix(sc, "/") || path[len(sc)] == '/') {
			return true
		}
	}
	return false
}

// addressedByIP reports whether a Host header names an IP literal (v4, or
// bracketed v6) or localhost, with or without a port (checklist AMB-37).
func addressedByIP(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	_, err := netip.ParseAddr(h)
	return err == nil
}

// clip bounds a caller's string before it is logged or echoed.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
