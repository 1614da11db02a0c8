package config

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/saguin-edge/saguin/broker/acl"
	"github.com/saguin-edge/saguin/broker/auth"
)

// ACLOptions is what the acl_file is compiled against: every channel,
// derived dead-letter channels included, and limits.max_topic_levels.
func (c *Config) ACLOptions() acl.Options {
	o := acl.Options{MaxTopicLevels: c.Broker.Limits.MaxTopicLevels}
	for _, list := range [][]Channel{c.Channels, c.DeadLetters} {
		for _, ch := range list {
			o.Channels = append(o.Channels, acl.Channel{Name: ch.Name, Type: ch.Type, Filter: ch.Filter, Filters: ch.Filters})
		}
	}
	return o
}

// LoadACL reads and compiles broker.mqtt.acl_file; nil, nil when none is
// named. A re-read on SIGUSR1 calls it again.
func (c *Config) LoadACL() (*acl.ACL, error) {
	if c.Broker.MQTT.ACLFile == "" {
		return nil, nil
	}
	if _, err := readBounded(c.Broker.MQTT.ACLFile); err != nil {
		return nil, err
	}
	return acl.Load(c.Broker.MQTT.ACLFile, c.ACLOptions())
}

// Users decodes the file's hashes for the broker to verify against.
func (pf *PasswordFile) Users() (*auth.Users, error) {
	entries := make([]auth.Entry, len(pf.Entries))
	for i, e := range pf.Entries {
		entries[i] = auth.Entry{User: e.User, Hash: e.Hash, Line: e.Line}
	}
	return auth.NewUsers(pf.Path, entries)
}

// maxNamedFileBytes bounds a file the configuration names before it is read
// (invariant 13): a password file of a large fleet is a few megabytes.
const maxNamedFileBytes = 64 << 20

// CheckFiles opens every file the configuration names - password files,
// certificates and their keys, client and bridge authorities, the acl_file -
// and returns a finding for each one that cannot be used, all at once. It
// creates, writes and binds nothing (RFC 0002 "Validation").
func (c *Config) CheckFiles() []Finding {
	var out []Finding
	add := func(key, format string, args ...any) {
		out = append(out, Finding{Key: key, File: c.File, Message: fmt.Sprintf(format, args...)})
	}
	checked := map[string]bool{}
	password := func(key, path string, operations, admitsOthers bool) {
		// A file several doors share is read and reported once.
		if path == "" || checked[path] {
			return
		}
		checked[path] = true
		pf, findings := ReadPasswordFile(path, operations)
		for _, f := range findings {
			f.Key = key
			out = append(out, f)
		}
		if pf != nil && len(pf.Entries) == 0 && len(findings) == 0 && !admitsOthers {
			if operations {
				add(key, " %s names no users: a listener nobody can read is a startup error rather than a silent one", path)
			} else {
				add(key, " %s names no users, on a door admitting nobody else: no client could connect", path)
			}
		}
	}
	pair := func(key, cert, keyFile string) {
		if cert == "" || keyFile == "" {
			return
		}
		certPEM, err1 := readBounded(cert)
		keyPEM, err2 := readBounded(keyFile)
		switch {
		case err1 != nil:
			add(key+".cert_file", " %v", err1)
		case err2 != nil:
			add(key+".key_file", " %v", err2)
		default:
			if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
				add(key+".cert_file", " %s with %s cannot be used: %v", cert, keyFile, err)
			}
		}
		if err2 != nil && err1 != nil {
			add(key+".key_file", " %v", err2)
		}
	}
	authority := func(key, path string) {
		if path == "" {
			return
		}
		data, err := readBounded(path)
		if err != nil {
			add(key, " %v", err)
			return
		}
		if err := parseAuthorities(data); err != nil {
			add(key, " %s: %v", path, err)
		}
	}
	m := c.Broker.MQTT
	if m.PasswordFile != "" {
		others := true
		for _, d := range m.Listeners {
			if d.PasswordFile == m.PasswordFile && !d.AllowAnonymous && (d.TLS == nil || d.TLS.ClientCAFile == "") {
				others = false
			}
		}
		password("broker.mqtt.password_file", m.PasswordFile, false, others)
	}
	for _, d := range m.Listeners {
		password(d.Key+".password_file", d.PasswordFile, false, d.AllowAnonymous || d.TLS != nil && d.TLS.ClientCAFile != "")
		if d.TLS != nil {
			pair(d.Key+".tls", d.TLS.CertFile, d.TLS.KeyFile)
			authority(d.Key+".tls.client_ca_file", d.TLS.ClientCAFile)
		}
	}
	if m.ACLFile != "" {
		// Every refusal the file's contents earn is made here, so that
		// --check-config and the start refuse the same file.
		if _, err := c.LoadACL(); err != nil {
			if es, ok := err.(acl.Errors); ok {
				for _, e := range es {
					out = append(out, Finding{Key: "broker.mqtt.acl_file", File: e.Path, Line: e.Line, Message: " " + e.Msg})
				}
			} else {
				add("broker.mqtt.acl_file", " %v", err)
			}
		}
	}
	if ops := c.Broker.Operations; ops != nil {
		if ops.PasswordFile != "" {
			password("broker.operations.password_file", ops.PasswordFile, true, false)
		}
		for _, d := range ops.Listeners {
			password(d.Key+".password_file", d.PasswordFile, true, false)
			if d.TLS != nil {
				pair(d.Key+".tls", d.TLS.CertFile, d.TLS.KeyFile)
				authority(d.Key+".tls.client_ca_file", d.TLS.ClientCAFile)
			}
		}
	}
	for _, b := range c.Bridges {
		key := "bridges." + b.Name
		authority(key+".ca_file", b.CAFile)
		pair(key, b.CertFile, b.KeyFile)
	}
	return out
}

func readBounded(path string) ([]byte, error) {
	// A named file is a regular file: opening a FIFO would wait for a writer,
	// and a device would be read for ever.
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s cannot be read: %w", path, unwrapPath(err))
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s cannot be read: %w", path, unwrapPath(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxNamedFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s cannot be read: %w", path, unwrapPath(err))
	}
	if len(data) > maxNamedFileBytes {
		return nil, fmt.Errorf("%s is larger than %s", path, FormatSize(maxNamedFileBytes))
	}
	return data, nil
}

// unwrapPath drops the *PathError's own copy of the path, which the message
// already names.
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

func parseAuthorities(data []byte) error {
	n := 0
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("a certificate in it cannot be parsed: %w", err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("holds no PEM certificate")
	}
	return nil
}

// PasswordEntry is one line of a password file.
type PasswordEntry struct {
	User string
	// Hash is Mosquitto's: $6$<salt>$<hash> or $7$<iterations>$<salt>$<hash>.
	Hash string
	// Scopes are the routes an operations credential reaches; nil reaches
	// every route (RFC 0005 "Which routes a credential reaches").
	Scopes []string
	Line   int
}

// PasswordFile is a password file in Mosquitto's format.
type PasswordFile struct {
	Path    string
	Entries []PasswordEntry
}

// OperationsRoutes are the paths the operations listener serves; a scope must
// name one of them or a prefix of one at a segment boundary.
var OperationsRoutes = []string{
	"/health", "/metrics",
	"/v1/operations/acl", "/v1/operations/config", "/v1/operations/consumers",
	"/v1/operations/queues", "/v1/operations/position-lost", "/v1/operations/refused",
	"/v1/operations/sessions", "/v1/operations/users",
}

// ReadPasswordFile reads a password file: user:hash lines, $6$ and $7$ hashes
// accepted; argon2id, an unknown hash and a user named twice refused naming the
// line. On an MQTT file a third field is refused; on an operations file it is
// the comma-separated routes the user reaches, each of which must be a route
// the listener serves. Blank lines and lines starting with # are skipped.
func ReadPasswordFile(path string, operations bool) (*PasswordFile, []Finding) {
	data, err := readBounded(path)
	if err != nil {
		return nil, []Finding{{File: path, Message: " " + err.Error()}}
	}
	pf := &PasswordFile{Path: path}
	var out []Finding
	bad := func(line int, format string, args ...any) {
		out = append(out, Finding{File: path, Line: line, Message: " " + fmt.Sprintf(format, args...)})
	}
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Split(text, ":")
		user := fields[0]
		switch {
		case user == "":
			bad(line, "has no user name before its first colon")
			continue
		case len(fields) < 2 || fields[1] == "":
			bad(line, "user %q has no password hash; add one with saguin --passwd add", user)
			continue
		case len(fields) > 3:
			bad(line, "user %q: a line is user:hash, or user:hash:routes on an operations file", user)
			continue
		}
		hash := fields[1]
		if err := checkHash(hash); err != nil {
			bad(line, "user %q: %v", user, err)
			continue
		}
		e := PasswordEntry{User: user, Hash: hash, Line: line}
		if len(fields) == 3 {
			if !operations {
				bad(line, "user %q has a third field; an MQTT password file is Mosquitto's format, user:hash - a client's permissions are the acl_file's, and a scope here would govern nothing", user)
				continue
			}
			for _, s := range strings.Split(fields[2], ",") {
				if !ServedRoute(s) {
					bad(line, "user %q is scoped to %q, which names no route the operations listener serves (%s): such a scope denies that user everything while reading as though it granted something",
						user, s, strings.Join(OperationsRoutes, ", "))
					continue
				}
				e.Scopes = append(e.Scopes, s)
			}
		}
		if prev, dup := seen[user]; dup {
			bad(line, "user %q is named on lines %d and %d: only one of the two passwords could ever be checked, and deleting that one would leave the other admitting the device", user, prev, line)
			continue
		}
		seen[user] = line
		pf.Entries = append(pf.Entries, e)
	}
	if err := sc.Err(); err != nil {
		out = append(out, Finding{File: path, Message: fmt.Sprintf(" cannot be read: %v", err)})
	}
	return pf, out
}

// checkHash decodes a hash the way the broker will verify it, so a file
// --check-config passes is one the broker can use.
func checkHash(h string) error {
	_, err := auth.ParseHash(h)
	return err
}

// ServedRoute reports whether a scope names a route the operations listener
// serves, or a prefix of one at a segment boundary (/v1/operations).
func ServedRoute(s string) bool {
	if s == "" || s[0] != '/' {
		return false
	}
	for _, r := range OperationsRoutes {
		if r == s || strings.HasPrefix(r, s) && (strings.HasSuffix(s, "/") || r[len(s)] == '/') {
			return true
		}
	}
	return strings.HasPrefix(s, "/v1/operations/queues/") && len(s) > len("/v1/operations/queues/")
}
