package config

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// listeners reads a listen: block. Each kind is a mapping for one door, named
// after its kind, or a list whose entries carry names (RFC 0002 "Several
// listeners of a kind"). The MQTT block gets one tcp door on :1883 when it
// names none; the operations block has no default.
func (l *loader) listeners(parent *obj, key string, operations bool) []Listener {
	o := parent.child("listen")
	kinds := []string{KindTCP, KindWS, KindUnix}
	if operations {
		kinds = []string{KindTCP, KindUnix}
		o.refuse("ws", " is not an operations listener: a scraper speaks HTTP already, so the operations listener takes tcp and unix")
	}
	var out []Listener
	for _, kind := range kinds {
		v := o.get(kind)
		if v == nil || v.kind == nullNode {
			continue
		}
		kindKey := key + "." + kind
		switch v.kind {
		case mapNode:
			single := o.child(kind)
			if single.has("name") {
				single.at("name", " is written on a single door, whose name is its kind (%s); write the kind as a list to name its doors", kind)
			}
			d := l.door(single, kind, kindKey, operations)
			d.Name = kind
			out = append(out, d)
		case seqNode:
			for i, item := range v.items {
				entry := l.c.object(item, fmt.Sprintf("%s[%d]", kindKey, i))
				entry.home, entry.file = item.line, item.file
				name, named := entry.str("name")
				if named && !validDoorName(name) {
					entry.at("name", " %q: a door's name holds letters, digits, -, _ and . only", name)
				}
				switch {
				case named:
					d := l.door(entry, kind, kindKey+"["+name+"]", operations)
					d.Name = name
					out = append(out, d)
				case len(v.items) == 1:
					// A list of one door with no name is named after its
					// kind, as the mapping form is.
					d := l.door(entry, kind, kindKey, operations)
					d.Name = kind
					out = append(out, d)
				default:
					if !entry.has("name") {
						l.c.at(item, kindKey, " has %d doors and entry %d has no name; each door of a kind with two or more carries its own name, unique across every door", len(v.items), i+1)
					}
					// Read the door anyway, so its own findings are reported;
					// having no name, it takes part in no name comparison.
					d := l.door(entry, kind, fmt.Sprintf("%s[%d]", kindKey, i), operations)
					out = append(out, d)
				}
			}
		default:
			o.at(kind, " is %s; a door is a mapping, and several doors of a kind a list of them", v.describe())
		}
	}
	o.done()
	if !operations && len(out) == 0 {
		// RFC 0002: no listener named at all gets tcp on :1883.
		out = append(out, Listener{Name: KindTCP, Kind: KindTCP, Key: key + "." + KindTCP, Address: ":1883",
			AllowAnonymous: l.cfg.Broker.MQTT.AllowAnonymous == nil && l.cfg.Broker.MQTT.PasswordFile == "" ||
				l.cfg.Broker.MQTT.AllowAnonymous != nil && *l.cfg.Broker.MQTT.AllowAnonymous,
			PasswordFile: l.cfg.Broker.MQTT.PasswordFile, ConfiguredIn: l.abs})
	}
	l.doorNames(out, key)
	return out
}

func validDoorName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return s != ""
}

// doorNames refuses two doors of one listener sharing a name, a kind's default
// name included: within the MQTT doors or within the operations doors, never
// across the two.
func (l *loader) doorNames(doors []Listener, key string) {
	seen := map[string]Listener{}
	for _, d := range doors {
		if d.Name == "" {
			continue
		}
		if prev, dup := seen[d.Name]; dup {
			l.c.atLine(l.displayOf(d.ConfiguredIn), d.Line, d.Key,
				" is named %q, and so is the door at line %d (%s); two doors of one listener cannot share a name, a kind's own name included", d.Name, prev.Line, prev.Key)
			continue
		}
		seen[d.Name] = d
	}
}

func (l *loader) displayOf(abs string) string {
	if abs == l.abs || abs == "" {
		return l.display
	}
	if _, ok := l.included[abs]; ok {
		if rel, err := filepath.Rel(filepath.Dir(l.abs), abs); err == nil {
			return filepath.Join(filepath.Dir(l.display), rel)
		}
	}
	return abs
}

// door reads one listener's block.
func (l *loader) door(o *obj, kind, key string, operations bool) Listener {
	d := Listener{Kind: kind, Key: key, ConfiguredIn: l.absOf(l.display)}
	if o.n != nil {
		d.Line = o.n.line
		d.ConfiguredIn = l.absOf(o.n.file)
	}
	if o.home > 0 {
		// The line naming the door (tcp:, or its list entry) is the one an
		// operator goes to.
		d.Line = o.home
	}
	o.get("name") // read by the caller
	switch kind {
	case KindTCP, KindWS:
		if a, ok := o.str("address"); ok {
			if _, _, err := parseAddress(a); err != nil {
				o.at("address", " %q: %v", a, err)
			} else {
				d.Address = a
			}
		} else if !o.has("address") {
			o.at("address", " is missing: a listener block with no address is a mistake rather than a default")
		}
		d.TLS = l.tls(o, key)
		o.refuse("path", " is a unix listener's key; a %s listener takes address", kind)
		o.refuse("mode", " is a unix listener's key")
		o.refuse("proxy_protocol", " is accepted on a Unix listener only: its file permissions are what decide who may assert a client's name")
	case KindUnix:
		if p, ok := o.str("path"); ok {
			if err := checkUnixPath(p); err != nil {
				o.at("path", " %q: %v", p, err)
			} else {
				d.Path = cleanUnixPath(p)
			}
		} else if !o.has("path") {
			o.at("path", " is missing: a Unix socket with no path is a mistake rather than a default")
		}
		d.Mode = 0o660
		if s, _, ok := o.scalar("mode"); ok {
			m, err := strconv.ParseUint(s, 8, 32)
			if err != nil || m > 0o777 {
				o.at("mode", " %q: write the socket's permissions in octal, quoted, such as \"0660\"", s)
			} else {
				d.Mode = os.FileMode(m)
			}
		}
		if s, _, ok := o.scalar("proxy_protocol"); ok {
			switch s {
			case "true", "True", "TRUE":
				d.ProxyProtocol = true
			case "false", "False", "FALSE":
			case "on", "v1":
				o.at("proxy_protocol", " %q: Sagüin reads PROXY protocol v2 only - write proxy_protocol: true, and proxy_protocol v2 at the proxy; v1 carries no TLVs and so cannot say which certificate the proxy verified", s)
			default:
				o.at("proxy_protocol", " %q: it is true (read a PROXY protocol v2 header) or false", s)
			}
		}
		o.refuse("tls", " is not accepted on a Unix socket: the credential never leaves the machine, and a certificate there is ceremony rather than security")
		o.refuse("address", " is a tcp or ws listener's key; a unix listener takes path")
	}
	if kind == KindWS {
		d.SameOrigin = true
		if v, ok := o.boolean("same_origin"); ok {
			d.SameOrigin = v
		}
		for _, origin := range o.stringList("allowed_origins") {
			if err := checkOrigin(origin); err != nil {
				o.at("allowed_origins", " %q: %v", origin, err)
				continue
			}
			d.AllowedOrigins = append(d.AllowedOrigins, origin)
		}
	} else {
		o.refuse("same_origin", " is a ws listener's key")
		o.refuse("allowed_origins", " is a ws listener's key")
	}
	own := ""
	if p, ok := o.absPath("password_file", "this door's password file", false); ok {
		own = p
	}
	o.refuse("acl_file", " is one for the whole broker: write it once under broker.mqtt")
	o.refuse("min_protocol_version", " cannot be written on a listener: the version a device speaks is a property of the device, not of the door it arrives at; write it once under broker.mqtt")
	if operations {
		o.refuse("allow_anonymous", " is not accepted on an operations listener: on the port true would open /metrics to whoever can reach it, and on the socket it would only strip the name off a reader already getting in")
		d.PasswordFile, d.ownPassword = own, own != ""
		if own == "" {
			d.PasswordFile = l.cfg.Broker.Operations.passwordFile()
		}
	} else {
		m := &l.cfg.Broker.MQTT
		written, hasAnon := o.boolean("allow_anonymous")
		d.anonymousWritten = hasAnon
		switch {
		case own != "":
			d.ownPassword = true
			// A door naming its own file admits its own users and nobody
			// else unless it writes allow_anonymous: it does not inherit.
			d.PasswordFile = own
			d.AllowAnonymous = hasAnon && written
		default:
			d.PasswordFile = m.PasswordFile
			switch {
			case hasAnon:
				d.AllowAnonymous = written
			case m.AllowAnonymous != nil:
				d.AllowAnonymous = *m.AllowAnonymous
			default:
				d.AllowAnonymous = m.PasswordFile == ""
			}
		}
	}
	o.done()
	return d
}

func (ops *Operations) passwordFile() string {
	if ops == nil {
		return ""
	}
	return ops.PasswordFile
}

func (l *loader) tls(parent *obj, key string) *TLS {
	if !parent.has("tls") {
		parent.get("tls")
		return nil
	}
	o := parent.child("tls")
	t := &TLS{MinVersion: "1.2"}
	var ok bool
	if t.CertFile, ok = o.absPath("cert_file", "the certificate chain", false); !ok && !o.has("cert_file") {
		o.at("cert_file", " is missing: a tls block names a certificate and its key, and nothing is generated")
	}
	if t.KeyFile, ok = o.absPath("key_file", "the certificate's private key", false); !ok && !o.has("key_file") {
		o.at("key_file", " is missing: a tls block names a certificate and its key, and nothing is generated")
	}
	t.ClientCAFile, _ = o.absPath("client_ca_file", "the authorities client certificates are checked against", false)
	req, reqWritten := o.boolean("require_certificate")
	if reqWritten && t.ClientCAFile == "" && !o.has("client_ca_file") {
		o.at("require_certificate", " is written where no client_ca_file names an authority: it reads as though certificates were demanded, and nothing would check one")
	}
	t.RequireCertificate = t.ClientCAFile != "" && (!reqWritten || req)
	t.MinVersion = o.enum("min_version", "1.2", "1.2", "1.3")
	o.refuse("ca_file", " is a bridge's key; on a listener the authorities that sign client certificates are client_ca_file")
	o.done()
	return t
}

// parseAddress reads a tcp or ws address as net.Listen would: host:port with
// IPv6 in brackets, a port from 0 to 65535 (leading zeros and a + accepted, as
// Go reads them) or a service name /etc/services knows. The host is empty, an
// IP literal, or an RFC 1123 host name.
func parseAddress(a string) (host string, port int, err error) {
	host, p, err := net.SplitHostPort(a)
	if err != nil {
		return "", 0, fmt.Errorf("it is host:port, with an IPv6 host in brackets, such as 127.0.0.1:1883 or [::1]:1883")
	}
	if p == "" {
		return "", 0, fmt.Errorf("it has no port; write host:port")
	}
	if digits := strings.TrimPrefix(p, "+"); digits != "" && strings.Trim(digits, "0123456789") == "" {
		n, err := strconv.ParseUint(digits, 10, 32)
		if err != nil || n > 65535 {
			return "", 0, fmt.Errorf("port %s is outside 0 to 65535", p)
		}
		port = int(n)
	} else {
		n, err := net.LookupPort("tcp", p)
		if err != nil {
			return "", 0, fmt.Errorf("port %q is neither a number nor a service name this machine knows", p)
		}
		port = n
	}
	if host == "" {
		return host, port, nil
	}
	if ip, zone, isIP := splitZone(host); isIP {
		if strings.Contains(host, "%") && zone == "" {
			return "", 0, fmt.Errorf("host %q has an empty zone", host)
		}
		if ip.Is6() && ip.IsMulticast() {
			return "", 0, fmt.Errorf("host %q is an IPv6 multicast address, which nothing listens on", host)
		}
		if ip.Is6() && !ip.Is4In6() && ip.IsLinkLocalUnicast() && zone == "" {
			return "", 0, fmt.Errorf("host %q is link-local and names no zone; write it as %s%%<interface>", host, host)
		}
		return host, port, nil
	}
	if !validHostName(host) {
		return "", 0, fmt.Errorf("host %q is neither an IP address nor a host name", host)
	}
	return host, port, nil
}

func splitZone(host string) (netip.Addr, string, bool) {
	base, zone, _ := strings.Cut(host, "%")
	ip, err := netip.ParseAddr(base)
	if err != nil {
		return netip.Addr{}, "", false
	}
	return ip, zone, true
}

// validHostName is RFC 1123: labels of letters, digits and -, not starting or
// ending with -, at most 63 bytes each and 253 in all.
func validHostName(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// checkUnixPath: absolute (or an abstract @name), no NUL, and a last element
// that is a file name.
func checkUnixPath(p string) error {
	if strings.IndexByte(p, 0) >= 0 {
		return fmt.Errorf("a socket path holds no NUL byte")
	}
	if strings.HasPrefix(p, "@") {
		if len(p) == 1 {
			return fmt.Errorf("an abstract socket name has something after the @")
		}
		return nil
	}
	if !filepath.IsAbs(p) {
		return fmt.Errorf("it is relative; a socket path is absolute, so that it does not depend on the directory the broker was started from")
	}
	base := filepath.Base(p)
	if strings.HasSuffix(p, "/") || base == "." || base == ".." || base == "/" {
		return fmt.Errorf("its last element is not a file name")
	}
	return nil
}

func cleanUnixPath(p string) string {
	if strings.HasPrefix(p, "@") {
		return p
	}
	return filepath.Clean(p)
}

// checkOrigin: scheme://host or scheme://host:port and nothing else.
func checkOrigin(o string) error {
	if o == "null" {
		return fmt.Errorf("Origin: null cannot be listed: a sandboxed frame on any site sends it")
	}
	scheme, rest, ok := strings.Cut(o, "://")
	if !ok || scheme == "" || rest == "" {
		return fmt.Errorf("an origin is scheme://host or scheme://host:port")
	}
	if strings.ContainsAny(rest, "/?#@*") {
		return fmt.Errorf("an origin carries no path, query, user name or wildcard - a browser never sends one")
	}
	return nil
}
