package config

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// omap is an ordered mapping: the resolved document is built once, in the
// file's own order, and written as YAML (--output) or JSON
// (/v1/operations/config).
type omap struct {
	keys     []string
	vals     []any
	comments []string
}

func (m *omap) set(k string, v any) *omap {
	m.keys = append(m.keys, k)
	m.vals = append(m.vals, v)
	m.comments = append(m.comments, "")
	return m
}

// note puts a comment on the key set last: provenance, which a reader wants
// and a parser must not see.
func (m *omap) note(c string) {
	m.comments[len(m.comments)-1] = c
}

func (m *omap) get(k string) any {
	for i, key := range m.keys {
		if key == k {
			return m.vals[i]
		}
	}
	return nil
}

// MarshalJSON writes the mapping in order.
func (m *omap) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range m.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kj, _ := json.Marshal(k)
		vj, err := json.Marshal(m.vals[i])
		if err != nil {
			return nil, err
		}
		b.Write(kj)
		b.WriteByte(':')
		b.Write(vj)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// docMode picks between the two renderings: --output writes only what an
// operator would write to get this configuration back, the JSON answers what
// the process resolved (every door's credential resolved, the derived
// channels and each channel's configured_in included).
type docMode int

const (
	forYAML docMode = iota
	forJSON
)

func (c *Config) document(mode docMode) *omap {
	doc := &omap{}
	doc.set("broker", c.brokerDoc(mode))
	channels := &omap{}
	for _, ch := range c.Channels {
		channels.set(ch.Name, channelDoc(ch, mode))
		if mode == forYAML {
			channels.note(fmt.Sprintf("from %s:%d", ch.ConfiguredIn, ch.Line))
		}
	}
	if mode == forJSON {
		// A queue's dead-letter channel is running, so the JSON shows it;
		// --output leaves it out, since a document carrying it would not
		// start (RFC 0002).
		for _, ch := range c.DeadLetters {
			channels.set(ch.Name, channelDoc(ch, mode))
		}
	}
	doc.set("channels", channels)
	if len(c.Bridges) > 0 || mode == forJSON {
		doc.set("bridges", c.bridgesDoc())
	}
	return doc
}

func (c *Config) brokerDoc(mode docMode) *omap {
	b := c.Broker
	out := &omap{}
	out.set("id", b.ID)
	out.set("log_level", b.LogLevel)
	if b.PIDFile != "" {
		out.set("pid_file", b.PIDFile)
	}
	m := &omap{}
	m.set("listen", listenDoc(b.MQTT.Listeners, mode))
	if b.MQTT.PasswordFile != "" {
		m.set("password_file", b.MQTT.PasswordFile)
	}
	if b.MQTT.AllowAnonymous != nil {
		m.set("allow_anonymous", *b.MQTT.AllowAnonymous)
	}
	if b.MQTT.ACLFile != "" {
		m.set("acl_file", b.MQTT.ACLFile)
	}
	if b.MQTT.MinProtocolVersion == 5 {
		m.set("min_protocol_version", "5")
	} else {
		m.set("min_protocol_version", "3.1.1")
	}
	out.set("mqtt", m)
	if ops := b.Operations; ops != nil {
		o := &omap{}
		o.set("listen", listenDoc(ops.Listeners, mode))
		if ops.PasswordFile != "" {
			o.set("password_file", ops.PasswordFile)
		}
		o.set("min_scrape_interval", FormatDuration(ops.MinScrapeInterval))
		out.set("operations", o)
	}
	out.set("storage", c.storageDoc(mode, true))
	out.set("retained", (&omap{}).set("storage", b.Retained.Storage).set("retention_period", FormatDuration(b.Retained.RetentionPeriod)))
	out.set("qos2", (&omap{}).set("max_inflight_per_client", b.QoS2.MaxInflightPerClient).set("expires_after", FormatDuration(b.QoS2.ExpiresAfter)))
	out.set("share", (&omap{}).set("expires_after", FormatDuration(b.Share.ExpiresAfter)))
	out.set("session", (&omap{}).set("storage", b.Session.Storage).set("ack_commit_interval", FormatDuration(b.Session.AckCommitInterval)))
	out.set("limits", limitsDoc(b.Limits))
	return out
}

func (c *Config) storageDoc(mode docMode, withProviders bool) *omap {
	s := c.Broker.Storage
	out := &omap{}
	out.set("default", s.Default)
	out.set("default_retention_period", FormatDuration(s.DefaultRetentionPeriod))
	out.set("default_retention_bytes", FormatSize(s.DefaultRetentionBytes))
	if withProviders {
		out.set("providers", c.providersDoc(mode))
	}
	return out
}

func (c *Config) providersDoc(mode docMode) *omap {
	out := &omap{}
	for _, p := range c.Broker.Storage.Providers {
		d := &omap{}
		d.set("type", p.Type)
		if p.MaxBytes > 0 {
			d.set("max_bytes", FormatSize(p.MaxBytes))
		}
		switch p.Type {
		case ProviderMemory:
			if p.SnapshotDir == "" {
				d.set("snapshot_dir", "none")
			} else {
				d.set("snapshot_dir", p.SnapshotDir)
			}
		case ProviderSQLite:
			d.set("file_path", p.FilePath)
			switch p.PublishCommit {
			case CommitEach:
				d.set("publish_commit_interval", "none")
			case CommitInterval:
				d.set("publish_commit_interval", FormatDuration(p.PublishCommitInterval))
				d.set("publish_commit_max_records", p.PublishCommitMaxRecords)
			}
			d.set("read_connections", p.ReadConnections)
			d.set("flush_interval", FormatDuration(p.FlushInterval))
		}
		if mode == forJSON {
			d.set("configured_in", p.ConfiguredIn)
		}
		out.set(p.Name, d)
		if mode == forYAML {
			out.note(fmt.Sprintf("from %s:%d", p.ConfiguredIn, p.Line))
		}
	}
	return out
}

func listenDoc(doors []Listener, mode docMode) *omap {
	out := &omap{}
	for _, kind := range []string{KindTCP, KindWS, KindUnix} {
		var of []Listener
		for _, d := range doors {
			if d.Kind == kind {
				of = append(of, d)
			}
		}
		switch {
		case len(of) == 1 && of[0].Name == kind:
			out.set(kind, doorDoc(of[0], mode, false))
		case len(of) > 0:
			var list []any
			for _, d := range of {
				list = append(list, doorDoc(d, mode, true))
			}
			out.set(kind, list)
		}
	}
	return out
}

func doorDoc(d Listener, mode docMode, named bool) *omap {
	out := &omap{}
	if named {
		out.set("name", d.Name)
	}
	if d.Kind == KindUnix {
		out.set("path", d.Path)
		out.set("mode", fmt.Sprintf("%04o", uint32(d.Mode)))
		if d.ProxyProtocol {
			out.set("proxy_protocol", true)
		}
	} else {
		out.set("address", d.Address)
	}
	if t := d.TLS; t != nil {
		tl := &omap{}
		tl.set("cert_file", t.CertFile)
		tl.set("key_file", t.KeyFile)
		if t.ClientCAFile != "" {
			tl.set("client_ca_file", t.ClientCAFile)
			tl.set("require_certificate", t.RequireCertificate)
		}
		tl.set("min_version", t.MinVersion)
		out.set("tls", tl)
	}
	if d.Kind == KindWS {
		out.set("same_origin", d.SameOrigin)
		origins := make([]any, 0, len(d.AllowedOrigins))
		for _, o := range d.AllowedOrigins {
			origins = append(origins, o)
		}
		out.set("allowed_origins", origins)
	}
	switch {
	case mode == forJSON:
		if d.PasswordFile != "" {
			out.set("password_file", d.PasswordFile)
		}
		out.set("allow_anonymous", d.AllowAnonymous)
	default:
		if d.ownPassword {
			out.set("password_file", d.PasswordFile)
		}
		if d.anonymousWritten {
			out.set("allow_anonymous", d.AllowAnonymous)
		}
	}
	return out
}

func limitsDoc(l Limits) *omap {
	out := &omap{}
	out.set("max_message_size", FormatSize(l.MaxMessageSize))
	out.set("max_topic_length", l.MaxTopicLength)
	out.set("max_client_id_length", l.MaxClientIDLength)
	out.set("max_header_count", l.MaxHeaderCount)
	out.set("max_header_bytes", FormatSize(l.MaxHeaderBytes))
	out.set("max_connections", l.MaxConnections)
	out.set("max_subscriptions", l.MaxSubscriptions)
	out.set("max_topic_levels", l.MaxTopicLevels)
	out.set("max_session_expiry", FormatDuration(l.MaxSessionExpiry))
	out.set("max_keepalive", FormatDuration(l.MaxKeepalive))
	out.set("publish_rate", countOrNone(l.PublishRate))
	out.set("publish_bytes", FormatSize(l.PublishBytes))
	out.set("write_timeout", FormatDuration(l.WriteTimeout))
	out.set("connect_timeout", FormatDuration(l.ConnectTimeout))
	out.set("max_connect_size", FormatSize(l.MaxConnectSize))
	out.set("max_connect_rate", countOrNone(l.MaxConnectRate))
	out.set("session_queue_bytes", FormatSize(l.SessionQueueBytes))
	return out
}

func countOrNone(n int) any {
	if n == 0 {
		return "none"
	}
	return n
}

func channelDoc(ch Channel, mode docMode) *omap {
	out := &omap{}
	out.set("type", ch.Type)
	out.set("filter", ch.Filter)
	out.set("storage", ch.Storage)
	// A retention key nobody wrote is left out of --output, so that it goes
	// on taking the broker-wide default; the JSON says what is in force.
	if ch.Type != TypeQueue && (mode == forJSON || ch.written["retention_period"]) {
		out.set("retention_period", FormatDuration(ch.RetentionPeriod))
	}
	if ch.Type == TypeAppend && (mode == forJSON || ch.written["retention_bytes"]) {
		out.set("retention_bytes", FormatSize(ch.RetentionBytes))
	}
	if ch.Type != TypeLatest && ch.MaxBytes > 0 {
		out.set("max_bytes", FormatSize(ch.MaxBytes))
	}
	switch ch.Type {
	case TypeLatest:
		out.set("deletion_retention_period", FormatDuration(ch.DeletionRetentionPeriod))
	case TypeAppend:
		out.set("start", ch.Start)
	case TypeQueue:
		out.set("visibility_timeout", FormatDuration(ch.VisibilityTimeout))
		if ch.JobExpiresAfter > 0 {
			out.set("job_expires_after", FormatDuration(ch.JobExpiresAfter))
		}
		r := &omap{}
		r.set("max_attempts", ch.Retry.MaxAttempts)
		r.set("backoff", ch.Retry.Backoff)
		if ch.Retry.BackoffBase > 0 {
			r.set("backoff_base", FormatDuration(ch.Retry.BackoffBase))
		}
		out.set("retry", r)
		if mode == forJSON || ch.written["dlq_retention_period"] {
			out.set("dlq_retention_period", FormatDuration(ch.dlqRetentionPeriod))
		}
		if mode == forJSON || ch.written["dlq_retention_bytes"] {
			out.set("dlq_retention_bytes", FormatSize(ch.dlqRetentionBytes))
		}
	}
	if mode == forJSON {
		if ch.DerivedFrom != "" {
			out.set("derived_from", ch.DerivedFrom)
		}
		out.set("configured_in", ch.ConfiguredIn)
	}
	return out
}

func (c *Config) bridgesDoc() *omap {
	out := &omap{}
	for _, b := range c.Bridges {
		d := &omap{}
		d.set("peer", b.Peer)
		d.set("client_id", b.ClientID)
		d.set("session_expiry", FormatDuration(b.SessionExpiry))
		d.set("receive_maximum", b.ReceiveMaximum)
		d.set("ack_interval", FormatDuration(b.AckInterval))
		for _, kv := range [][2]string{{"ca_file", b.CAFile}, {"cert_file", b.CertFile}, {"key_file", b.KeyFile}} {
			if kv[1] != "" {
				d.set(kv[0], kv[1])
			}
		}
		var rules []any
		for _, r := range b.Rules {
			rd := &omap{}
			rd.set("filter", r.Filter)
			if r.Topic != "" {
				rd.set("topic", r.Topic)
			}
			rd.set("direction", r.Direction)
			rules = append(rules, rd)
		}
		d.set("topics", rules)
		out.set(b.Name, d)
	}
	return out
}

// Sections are the names /v1/operations/config?section= takes (RFC 0005).
var Sections = []string{"bridges", "channels", "limits", "listeners", "operations", "providers", "storage"}

// JSON renders the resolved configuration as /v1/operations/config serves it:
// the whole document, or the sections named (repeats compose, in the order
// asked). A name that is not a section is an error listing the ones that are.
// A section this configuration does not use is an empty object.
func (c *Config) JSON(sections ...string) ([]byte, error) {
	doc := c.document(forJSON)
	if len(sections) == 0 {
		return json.Marshal(doc)
	}
	broker := doc.get("broker").(*omap)
	out := &omap{}
	for _, s := range sections {
		if out.get(s) != nil {
			continue
		}
		var v any
		switch s {
		case "bridges", "channels":
			v = doc.get(s)
		case "limits":
			v = broker.get("limits")
		case "listeners":
			v = broker.get("mqtt").(*omap).get("listen")
		case "operations":
			v = broker.get("operations")
			if v == nil {
				v = &omap{}
			}
		case "providers":
			v = broker.get("storage").(*omap).get("providers")
		case "storage":
			v = c.storageDoc(forJSON, false)
		default:
			return nil, fmt.Errorf("section %q is not one of %s", s, strings.Join(Sections, ", "))
		}
		out.set(s, v)
	}
	return json.Marshal(out)
}

// YAML renders the configuration as --check-config --output prints it: every
// !include expanded into one document, every default filled, the file each
// channel and provider came from as a comment beside it, the derived
// dead-letter channels left out. It loads again to the same configuration.
func (c *Config) YAML() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# The configuration %s resolved to, as saguin --check-config --output prints it.\n", c.File)
	writeYAML(&b, c.document(forYAML), 0)
	return []byte(b.String())
}

func writeYAML(b *strings.Builder, m *omap, indent int) {
	pad := strings.Repeat("  ", indent)
	for i, k := range m.keys {
		if m.comments[i] != "" {
			fmt.Fprintf(b, "%s# %s\n", pad, m.comments[i])
		}
		switch v := m.vals[i].(type) {
		case *omap:
			if len(v.keys) == 0 {
				fmt.Fprintf(b, "%s%s: {}\n", pad, yamlKey(k))
				continue
			}
			fmt.Fprintf(b, "%s%s:\n", pad, yamlKey(k))
			writeYAML(b, v, indent+1)
		case []any:
			if len(v) == 0 {
				fmt.Fprintf(b, "%s%s: []\n", pad, yamlKey(k))
				continue
			}
			fmt.Fprintf(b, "%s%s:\n", pad, yamlKey(k))
			for _, item := range v {
				if im, ok := item.(*omap); ok {
					var inner strings.Builder
					writeYAML(&inner, im, indent+2)
					lines := strings.SplitAfter(inner.String(), "\n")
					first := strings.TrimPrefix(lines[0], strings.Repeat("  ", indent+2))
					fmt.Fprintf(b, "%s  - %s", pad, first)
					for _, l := range lines[1:] {
						b.WriteString(l)
					}
					continue
				}
				fmt.Fprintf(b, "%s  - %s\n", pad, yamlScalar(item))
			}
		default:
			fmt.Fprintf(b, "%s%s: %s\n", pad, yamlKey(k), yamlScalar(v))
		}
	}
}

var plainYAML = regexp.MustCompile(`^[A-Za-z0-9_/][A-Za-z0-9_./-]*$`)

func yamlKey(k string) string {
	if plainYAML.MatchString(k) && !yamlReserved(k) {
		return k
	}
	return strconv.Quote(k)
}

func yamlScalar(v any) string {
	switch x := v.(type) {
	case string:
		if plainYAML.MatchString(x) && !yamlReserved(x) && !numeric(x) {
			return x
		}
		return strconv.Quote(x)
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return strconv.Quote(fmt.Sprint(v))
}

func yamlReserved(s string) bool {
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "null", "y", "n":
		return true
	}
	return false
}

func numeric(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}
