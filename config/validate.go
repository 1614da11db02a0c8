package config

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// validate applies the rules that relate one key to another: names that must
// resolve, filters that must not collide, doors that must not share a port,
// and the authentication rules that only make sense together.
func (l *loader) validate() {
	cfg := l.cfg
	st := &cfg.Broker.Storage
	providerKey := func(name string) bool {
		_, ok := cfg.providerNamed(name)
		return ok
	}
	names := func() string {
		var out []string
		for _, p := range st.Providers {
			out = append(out, p.Name)
		}
		if len(out) == 0 {
			return "none is defined"
		}
		return "the providers are " + strings.Join(out, ", ")
	}
	if st.Default != "" && !providerKey(st.Default) {
		l.c.atKey(l.display, "broker.storage.default", " %q names no provider defined under broker.storage.providers; %s", st.Default, names())
	}
	if cfg.Broker.Retained.Storage == "" {
		cfg.Broker.Retained.Storage = st.Default
	} else if !providerKey(cfg.Broker.Retained.Storage) {
		l.c.atKey(l.display, "broker.retained.storage", " %q names no provider; %s", cfg.Broker.Retained.Storage, names())
	}
	if cfg.Broker.Session.Storage == "" {
		cfg.Broker.Session.Storage = st.Default
	} else if !providerKey(cfg.Broker.Session.Storage) {
		l.c.atKey(l.display, "broker.session.storage", " %q names no provider; %s", cfg.Broker.Session.Storage, names())
	}
	used := map[string]bool{cfg.Broker.Retained.Storage: true, cfg.Broker.Session.Storage: true}
	for _, ch := range cfg.Channels {
		used[ch.Storage] = true
		if ch.Storage != "" && ch.Storage != st.Default && !providerKey(ch.Storage) {
			l.c.atKey(l.displayOf(ch.ConfiguredIn), "channels."+ch.Name+".storage", " %q names no provider; %s", ch.Storage, names())
		}
	}
	l.providerPaths()
	for _, p := range st.Providers {
		if !used[p.Name] {
			l.notes.atLine(l.displayOf(p.ConfiguredIn), p.Line, "broker.storage.providers."+p.Name,
				" is named by no channel and holds neither the retained store nor the sessions, so it is inert: nothing is created for it")
		}
	}
	l.duplicateFilters()
	l.doors()
	l.authentication()
	l.bridgeRoutes()
}

// providerPaths refuses two providers on one store: one file_path or one
// snapshot_dir, compared after cleaning.
func (l *loader) providerPaths() {
	seen := map[string]Provider{}
	for _, p := range l.cfg.Broker.Storage.Providers {
		path := p.FilePath
		if p.Type == ProviderMemory {
			path = p.SnapshotDir
		}
		if path == "" {
			continue
		}
		path = filepath.Clean(path)
		if prev, dup := seen[path]; dup {
			l.c.atLine(l.displayOf(p.ConfiguredIn), p.Line, "broker.storage.providers."+p.Name,
				" is on %s, as provider %s is (%s line %d): two names on one store are two writers on it, each with its own bound and its own retention",
				path, prev.Name, l.displayOf(prev.ConfiguredIn), prev.Line)
			continue
		}
		seen[path] = p
	}
}

// duplicateFilters refuses two channels carrying the same filter after {a,b}
// is expanded - the one tie the most-exact rule cannot settle.
func (l *loader) duplicateFilters() {
	type owner struct {
		ch      Channel
		written string
	}
	seen := map[string]owner{}
	for _, ch := range l.cfg.Channels {
		for _, f := range ch.Filters {
			if prev, dup := seen[f]; dup && prev.ch.Name != ch.Name {
				l.c.atLine(l.displayOf(ch.ConfiguredIn), ch.Line, "channels."+ch.Name+".filter",
					" %q expands to %s, which channel %s (%q, %s line %d) also carries; two channels may not carry the same filter, because nothing could decide which holds its topics",
					ch.Filter, f, prev.ch.Name, prev.written, l.displayOf(prev.ch.ConfiguredIn), prev.ch.Line)
				continue
			}
			seen[f] = owner{ch, ch.Filter}
		}
	}
}

// doors refuses doors that would bind the same port or Unix path - across the
// MQTT and the operations listener, because the kernel does not know which
// block asked - and the operations listener's loopback rule.
func (l *loader) doors() {
	all := append([]Listener(nil), l.cfg.Broker.MQTT.Listeners...)
	if ops := l.cfg.Broker.Operations; ops != nil {
		all = append(all, ops.Listeners...)
	}
	for i, a := range all {
		for _, b := range all[:i] {
			if clash, why := doorsClash(a, b); clash {
				l.c.atLine(l.displayOf(a.ConfiguredIn), a.Line, a.Key, " %s %s (line %d)", why, b.Key, b.Line)
			}
		}
	}
	if ops := l.cfg.Broker.Operations; ops != nil {
		for _, d := range ops.Listeners {
			if d.Kind != KindTCP || d.Address == "" {
				continue
			}
			host, _, _ := parseAddress(d.Address)
			if isLoopback(host) || d.PasswordFile != "" || d.TLS != nil && d.TLS.RequireCertificate {
				continue
			}
			l.c.atLine(l.displayOf(d.ConfiguredIn), d.Line, d.Key+".address",
				" %q is not a loopback address and nothing authenticates this door - neither its own password_file nor broker.operations.password_file, nor a client certificate required by tls.client_ca_file; /metrics names channels, volumes and positions, so give it a password file, a tunnel, or the Unix socket",
				d.Address)
		}
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, _, ok := splitZone(host)
	return ok && ip.Unmap().IsLoopback()
}

// doorsClash compares two doors as the kernel would: TCP-speaking doors on one
// port where the hosts are equal or either is a wildcard (port 0 never
// clashes); Unix doors at one cleaned path.
func doorsClash(a, b Listener) (bool, string) {
	if a.Kind == KindUnix || b.Kind == KindUnix {
		if a.Kind == KindUnix && b.Kind == KindUnix && a.Path != "" && a.Path == b.Path {
			return true, fmt.Sprintf("is at Unix path %s, as", a.Path)
		}
		return false, ""
	}
	ah, ap, errA := parseAddress(a.Address)
	bh, bp, errB := parseAddress(b.Address)
	if errA != nil || errB != nil || ap == 0 || ap != bp {
		return false, ""
	}
	if isWildcard(ah) || isWildcard(bh) || sameHost(ah, bh) {
		return true, fmt.Sprintf("binds port %d on %q, which clashes with", ap, a.Address)
	}
	return false, ""
}

func isWildcard(host string) bool {
	if host == "" {
		return true
	}
	ip, _, ok := splitZone(host)
	return ok && ip.Unmap().IsUnspecified()
}

// sameHost compares hosts as addresses (::ffff:127.0.0.1 is 127.0.0.1), zones
// ignored except on link-local addresses, where two zones are two sockets. A
// host name is compared as written: it is not resolved at check time.
func sameHost(a, b string) bool {
	ia, za, okA := splitZone(a)
	ib, zb, okB := splitZone(b)
	if !okA || !okB {
		return okA == okB && strings.EqualFold(a, b)
	}
	ia, ib = ia.Unmap(), ib.Unmap()
	if ia != ib {
		return false
	}
	if ia.IsLinkLocalUnicast() {
		return za == zb
	}
	return true
}

// authentication applies RFC 0002 "Who may connect" and "What a client may do"
// across the MQTT doors.
func (l *loader) authentication() {
	m := l.cfg.Broker.MQTT
	identifies := m.PasswordFile != ""
	for _, d := range m.Listeners {
		hasCA := d.TLS != nil && d.TLS.ClientCAFile != ""
		if d.PasswordFile != "" || hasCA {
			identifies = true
		}
		if !d.AllowAnonymous && d.PasswordFile == "" && !hasCA {
			line := d.Line
			if p, ok := l.c.pos["broker.mqtt.allow_anonymous"]; ok && line == 0 {
				// The default door: the line to edit is the one saying false.
				line = p.Line
			}
			l.c.atLine(l.displayOf(d.ConfiguredIn), line, d.Key,
				" admits nobody: allow_anonymous is false and no password_file (its own or broker.mqtt's) or client certificate authority names anybody - a broker nothing can connect to; name a password_file, or allow anonymous clients")
		}
	}
	if m.ACLFile == "" {
		return
	}
	if !identifies {
		l.c.atKey(l.display, "broker.mqtt.acl_file",
			" is named but nothing authenticates a client - no password_file and no listener with a tls.client_ca_file - so its rules would govern nobody while reading as protection; name a password file or a client certificate authority")
	}
	const anonymous = " true beside an acl_file: an anonymous client's identity is the empty name, which a * pattern matches, so it would be admitted with whatever * grants; remove one of the two"
	if m.AllowAnonymous != nil && *m.AllowAnonymous {
		l.c.atKey(l.display, "broker.mqtt.allow_anonymous", anonymous)
	}
	for _, d := range m.Listeners {
		if d.anonymousWritten && d.AllowAnonymous {
			l.c.atLine(l.displayOf(d.ConfiguredIn), d.Line, d.Key+".allow_anonymous", anonymous)
			continue
		}
		if d.PasswordFile == "" && (d.TLS == nil || !d.TLS.RequireCertificate) {
			l.notes.atLine(l.displayOf(d.ConfiguredIn), d.Line, d.Key,
				" has no password file and requires no client certificate beside an acl_file: it admits a client nothing identifies, whose identity is the empty name and which gets whatever * grants")
		}
	}
}

// bridgeRoutes checks what needs the channels: no two bridges sharing a
// client_id at one peer, no in rule landing in a derived dead-letter channel,
// and the notes --check-config prints about where records land.
func (l *loader) bridgeRoutes() {
	ids := map[string]Bridge{}
	routes := l.cfg.Routes()
	for _, b := range l.cfg.Bridges {
		if b.ClientID != "" && b.Host != "" {
			k := strings.ToLower(b.Host) + ":" + b.Port + "\x00" + b.ClientID
			if prev, dup := ids[k]; dup {
				l.c.atKey(l.displayOf(b.ConfiguredIn), "bridges."+b.Name+".client_id",
					" %q is also bridge %s's at %s:%s: MQTT closes the older session when a new one arrives with its identifier, so the two would disconnect each other as fast as they reconnect", b.ClientID, prev.Name, b.Host, b.Port)
			} else {
				ids[k] = b
			}
		}
		for _, r := range b.Expanded {
			if r.Direction == DirectionOut {
				continue
			}
			landing := r.Filter
			if r.Topic != "" {
				landing = templateFilter(r.Topic)
			}
			for _, reach := range routes.Filter(landing) {
				if reach.Channel.DerivedFrom != "" && reach.Inside {
					l.c.atLine(l.displayOf(b.ConfiguredIn), r.Line, "bridges."+b.Name+".topics",
						" rule %q lands in %s, a derived dead-letter channel, which takes records from its queue and from nowhere else", r.Filter, reach.Channel.Name)
				}
			}
			if r.Topic == "" {
				continue
			}
			if strings.Count(r.Filter, "+") > 0 {
				for _, reach := range routes.Filter(landing) {
					if reach.Channel.Type == TypeLatest && discards(r) {
						l.notes.atLine(l.displayOf(b.ConfiguredIn), r.Line, "bridges."+b.Name+".topics",
							" rule %q lands in latest channel %s while discarding a $n: topics that differ only in that level become one value overwriting itself", r.Filter, reach.Channel.Name)
						break
					}
				}
			}
		}
	}
	// Keep bridges in name order, and each note in line order.
	sort.SliceStable(l.notes.list, func(i, j int) bool {
		if l.notes.list[i].File != l.notes.list[j].File {
			return l.notes.list[i].File < l.notes.list[j].File
		}
		return l.notes.list[i].Line < l.notes.list[j].Line
	})
}

// discards reports whether a rule's topic leaves out one of its filter's $n.
func discards(r BridgeRule) bool {
	for n := 1; n <= strings.Count(r.Filter, "+"); n++ {
		if !strings.Contains(r.Topic, fmt.Sprintf("$%d", n)) {
			return true
		}
	}
	return false
}
