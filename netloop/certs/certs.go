// Package certs holds the certificates of every TLS door: it loads each
// door's cert_file, key_file and client_ca_file, hands each door a
// *tls.Config that serves whatever pair is current, and re-reads them all
// on SIGUSR1 - every door's files or none (RFC 0002 "TLS on a listener").
// It also says what a client certificate names (Name).
package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Files are one door's TLS settings, as the configuration resolved them.
type Files struct {
	// Listener names the door in errors and log lines, as the
	// configuration's key does (broker.mqtt.listen.tcp[fleet]).
	Listener     string
	CertFile     string
	KeyFile      string
	ClientCAFile string // "" asks for no client certificate
	// RequireCertificate refuses a handshake without a client certificate;
	// false with a ClientCAFile verifies one if presented.
	RequireCertificate bool
	MinVersion         uint16 // tls.VersionTLS12 or tls.VersionTLS13; 0 is 1.2
}

// MinVersion is crypto/tls's version for a tls.min_version the
// configuration validated ("1.2" or "1.3").
func MinVersion(v string) uint16 {
	if v == "1.3" {
		return tls.VersionTLS13
	}
	return tls.VersionTLS12
}

// Loaded is what one door's files held when they were read.
type Loaded struct {
	Listener string
	Expires  time.Time // the leaf certificate's NotAfter
}

// Store is every TLS door's current configuration.
type Store struct {
	mu    sync.Mutex // one Reload at a time
	doors []*door
}

type door struct {
	files   Files
	current atomic.Pointer[tls.Config]
	served  *tls.Config // handed to the door; picks current per handshake
}

// Load reads every door's files; the error names each door whose files do
// not load, all of them at once.
func Load(files []Files) (*Store, []Loaded, error) {
	s := &Store{}
	var errs []error
	var loaded []Loaded
	for _, f := range files {
		cfg, l, err := build(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d := &door{files: f}
		d.current.Store(cfg)
		d.served = &tls.Config{
			// Each handshake takes the pair current when it starts; a
			// connection keeps the one it was handshaken with.
			GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return d.current.Load(), nil },
		}
		s.doors = append(s.doors, d)
		loaded = append(loaded, l)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	return s, loaded, nil
}

// Config is the configuration the named door serves, nil when it has none.
func (s *Store) Config(listener string) *tls.Config {
	if s == nil {
		return nil
	}
	for _, d := range s.doors {
		if d.files.Listener == listener {
			return d.served
		}
	}
	return nil
}

// Reload re-reads every door's files from the paths they were loaded from
// and serves them at once; see Reread for when nothing changes.
func (s *Store) Reload() ([]Loaded, error) {
	apply, loaded, err := s.Reread()
	if err != nil {
		return nil, err
	}
	apply()
	return loaded, nil
}

// Reread re-reads every door's files from the paths they were loaded from
// and returns apply, which serves them; nothing changes before apply is
// called, so a caller re-reading other files too applies all or none. Nothing
// is returned to apply unless every door's files load: a renewal lands as
// two files, and a signal between the two writes meets a key that does not
// match its certificate; then every door keeps serving what it had and the
// error names each door that failed and why.
func (s *Store) Reread() (apply func(), loaded []Loaded, err error) {
	if s == nil {
		return func() {}, nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make([]*tls.Config, len(s.doors))
	loaded = make([]Loaded, 0, len(s.doors))
	var errs []error
	for i, d := range s.doors {
		cfg, l, err := build(d.files)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		next[i] = cfg
		loaded = append(loaded, l)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, d := range s.doors {
			d.current.Store(next[i])
		}
	}, loaded, nil
}

// build reads one door's files into the configuration its handshakes use.
func build(f Files) (*tls.Config, Loaded, error) {
	pair, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, Loaded{}, fmt.Errorf("listener %s: certificate %s with key %s: %w", f.Listener, f.CertFile, f.KeyFile, err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, Loaded{}, fmt.Errorf("listener %s: certificate %s: %w", f.Listener, f.CertFile, err)
		}
	}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{pair},
		MinVersion:   max(f.MinVersion, tls.VersionTLS12),
	}
	if f.ClientCAFile != "" {
		pem, err := os.ReadFile(f.ClientCAFile)
		if err != nil {
			return nil, Loaded{}, fmt.Errorf("listener %s: client_ca_file: %w", f.Listener, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, Loaded{}, fmt.Errorf("listener %s: client_ca_file %s holds no PEM certificate", f.Listener, f.ClientCAFile)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
		if f.RequireCertificate {
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		}
	}
	return cfg, Loaded{Listener: f.Listener, Expires: leaf.NotAfter}, nil
}

// Name is what a verified client certificate names: its Common Name, else
// its first DNS name, exactly as the certificate states it; "" when it has
// neither (RFC 0002 "Client certificates").
func Name(cert *x509.Certificate) string {
	if cert.Subject.CommonName != "" {
		return cert.Subject.CommonName
	}
	if len(cert.DNSNames) > 0 {
		return cert.DNSNames[0]
	}
	return ""
}
