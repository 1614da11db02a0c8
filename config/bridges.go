package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/saguin-edge/saguin/codec/topic"
)

func (l *loader) bridges(n *node) {
	o := l.c.object(n, "bridges")
	if o.n == nil {
		return
	}
	byName := map[string]Bridge{}
	for i, name := range o.n.keys {
		key := "bridges." + name
		o.get(name)
		if name == "" || hasControl(name) {
			l.c.atLine(o.n.file, o.n.keyLine[i], key, " %q is not a bridge name: it is non-empty and holds no control character", name)
		}
		b := l.bridge(o.child(name), name, key)
		b.ConfiguredIn, b.Line = l.absOf(o.n.file), o.n.keyLine[i]
		byName[name] = b
	}
	for _, name := range sortedNames(byName) {
		l.cfg.Bridges = append(l.cfg.Bridges, byName[name])
	}
	o.done()
}

func (l *loader) bridge(o *obj, name, key string) Bridge {
	b := Bridge{Name: name}
	if p, ok := o.str("peer"); ok {
		b.Peer = p
		if err := parsePeer(&b); err != nil {
			o.at("peer", " %q: %v", p, err)
		}
	} else if !o.has("peer") {
		o.at("peer", " is missing: a bridge names the broker it connects to, as tcp://, tls://, ws:// or wss:// with a host and a port")
	}
	if id, ok := o.str("client_id"); ok {
		b.ClientID = id
	} else if !o.has("client_id") {
		o.at("client_id", " is missing and has no default: it is Sagüin's identity at the far end and decides which session the peer resumes - an invented one would let two edge boxes silently share a session")
	}
	b.SessionExpiry = o.duration("session_expiry", Day, durSpec{min: time.Second, max: mqttMaxSessionExpiry,
		why: "a bridge is a guest, and a session that never expires sits on somebody else's broker after this box is decommissioned; only that operator could clear it, and it spends their storage"})
	b.ReceiveMaximum = int(o.integer("receive_maximum", 20, intSpec{min: 1, max: mqttMaxTwoByte,
		why: "it is how many records the peer may have in flight to Sagüin, all held unacknowledged in memory; 0 is not unlimited but a subscriber that may receive nothing, which MQTT forbids"}))
	b.AckInterval = o.duration("ack_interval", 5*time.Millisecond, durSpec{min: time.Millisecond, max: time.Second, subSecond: true,
		why: "receive_maximum / ack_interval is the link's ceiling, and past a second a delayed acknowledgement is indistinguishable from a bridge that has stopped"})
	encrypted := b.Scheme == "tls" || b.Scheme == "wss"
	b.CAFile, _ = o.absPath("ca_file", "the authority that signs the peer's certificate", false)
	b.CertFile, _ = o.absPath("cert_file", "the certificate Sagüin presents", false)
	b.KeyFile, _ = o.absPath("key_file", "the certificate's key", false)
	if b.Scheme != "" && !encrypted {
		for _, k := range []string{"ca_file", "cert_file", "key_file"} {
			if o.has(k) {
				o.at(k, " is written beside an unencrypted peer (%s://): there is no handshake for it to take part in, and it reads as though the link were verified; dial tls:// or wss://, or remove it", b.Scheme)
			}
		}
	}
	if o.has("cert_file") != o.has("key_file") {
		missing := "key_file"
		if o.has("key_file") {
			missing = "cert_file"
		}
		o.at(missing, " is missing: cert_file and key_file go together - a certificate with no key cannot be presented, and a key with no certificate names nobody")
	}
	o.refuse("username", " is not accepted: a bridge authenticates with a certificate (cert_file and key_file) and nothing else")
	o.refuse("password", " is not accepted: a bridge authenticates with a certificate (cert_file and key_file) and nothing else, and no secret is ever held in the configuration")
	l.bridgeRules(o, &b, key)
	o.done()
	return b
}

// parsePeer reads a bridge's peer URL: scheme tcp, tls, ws or wss, a host and a
// port.
func parsePeer(b *Bridge) error {
	u, err := url.Parse(b.Peer)
	if err != nil {
		return fmt.Errorf("it is not a URL such as tls://mqtt.example.com:8883")
	}
	switch u.Scheme {
	case "tcp", "tls", "ws", "wss":
	case "mqtt", "mqtts":
		return fmt.Errorf("%s:// is not a scheme anything can dial; write tcp:// or tls:// (ws:// or wss:// over WebSocket)", u.Scheme)
	default:
		return fmt.Errorf("the scheme is tcp, tls, ws or wss")
	}
	if u.User != nil {
		return fmt.Errorf("a peer carries no user name or password: a bridge authenticates with cert_file and key_file")
	}
	if u.Hostname() == "" || u.Port() == "" {
		return fmt.Errorf("a peer carries a host and a port, such as %s://mqtt.example.com:8883", u.Scheme)
	}
	if n, err := strconv.Atoi(u.Port()); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %s is outside 1 to 65535", u.Port())
	}
	if (u.Scheme == "tcp" || u.Scheme == "tls") && (u.Path != "" && u.Path != "/" || u.RawQuery != "") {
		return fmt.Errorf("a %s:// peer has no path", u.Scheme)
	}
	b.Scheme, b.Host, b.Port = u.Scheme, u.Hostname(), u.Port()
	if u.Scheme == "ws" || u.Scheme == "wss" {
		b.Path = u.EscapedPath()
	}
	return nil
}

func (l *loader) bridgeRules(o *obj, b *Bridge, key string) {
	tn := o.get("topics")
	if tn == nil || tn.kind == nullNode || tn.kind == seqNode && len(tn.items) == 0 {
		o.at("topics", " names no rule: a bridge carrying nothing connects, asks for nothing and holds a session open at somebody else's broker for ever")
		return
	}
	if tn.kind != seqNode {
		o.at("topics", " is %s; it is a list of rules, each with a filter and a direction", tn.describe())
		return
	}
	lim := l.cfg.Broker.Limits
	for i, item := range tn.items {
		rk := fmt.Sprintf("%s.topics[%d]", key, i)
		r := l.c.object(item, rk)
		rule := BridgeRule{Line: item.line}
		rule.Direction = r.enum("direction", "", DirectionIn, DirectionOut, DirectionBoth)
		if !r.has("direction") {
			r.at("direction", " is missing and has no default: write in, out or both - whether this broker's records leave it must be something you can see in the file")
			if r.n == nil {
				l.c.at(item, rk+".direction", " is missing and has no default: write in, out or both")
			}
		}
		f, fok := r.str("filter")
		if !fok && !r.has("filter") {
			r.at("filter", " is missing: a rule names the filter it subscribes to or reads")
		}
		rule.Filter = f
		t, tok := r.str("topic")
		switch {
		case rule.Direction == DirectionBoth && r.has("topic"):
			r.at("topic", " is refused on a both rule: a template is a one-way rewrite with nothing to invert it, so both maps a topic to itself; split it into an in and an out rule to rewrite")
			tok = false
		case (rule.Direction == DirectionIn || rule.Direction == DirectionOut) && !r.has("topic"):
			r.at("topic", " is missing: an %s rule states the whole topic its records take at the other end", rule.Direction)
		}
		if tok {
			rule.Topic = t
		}
		r.done()
		b.Rules = append(b.Rules, rule)
		if !fok || rule.Direction == "" {
			continue
		}
		l.checkRule(r, rule, lim, b)
	}
	// Two outbound rules with one filter and one topic, a braced spelling
	// meeting a written one included, would send every record twice.
	seen := map[string]BridgeRule{}
	for _, e := range b.Expanded {
		if e.Direction == DirectionIn {
			continue
		}
		k := e.Filter + "\x00" + e.Topic
		if prev, dup := seen[k]; dup {
			l.c.atLine(l.display, e.Line, key+".topics", " two outbound rules (lines %d and %d) carry filter %q to topic %q: every record would be sent to the same topic at the peer twice, sharing one position",
				prev.Line, e.Line, e.Filter, outTopic(e))
			continue
		}
		seen[k] = e
	}
}

func outTopic(r BridgeRule) string {
	if r.Topic == "" {
		return r.Filter
	}
	return r.Topic
}

// checkRule applies every RFC 0002 bridge rule to one entry, on each spelling
// it expands to.
func (l *loader) checkRule(r *obj, rule BridgeRule, lim Limits, b *Bridge) {
	expanded, err := topic.Expand(rule.Filter)
	if err != nil {
		r.at("filter", " %q: %v", rule.Filter, err)
		return
	}
	for _, f := range expanded {
		if err := topic.ValidateFilter(f); err != nil {
			r.at("filter", " %q is not a well-formed MQTT topic filter: %v", f, err)
			return
		}
		if f == topic.SaguinRoot || strings.HasPrefix(f, topic.SaguinPrefix) {
			r.at("filter", " %q names the reserved $saguin/ space, which no rule may carry in any direction: inbound it would carry a queue's deliveries across the link, taking leases nothing acknowledges", f)
			return
		}
		if rule.Direction == DirectionBoth && strings.HasPrefix(f, "$") {
			r.at("filter", " %q begins with $ on a both rule, which maps a topic to itself - and nothing may publish a $ topic here; write an in rule with a topic", f)
			return
		}
		if n := topic.Levels(f); n > lim.MaxTopicLevels {
			r.at("filter", " %q has %d levels, more than limits.max_topic_levels (%d)", f, n, lim.MaxTopicLevels)
			return
		}
		e := BridgeRule{Filter: f, Topic: rule.Topic, Direction: rule.Direction, Line: rule.Line}
		if rule.Topic != "" {
			if !l.checkTemplate(r, f, rule.Topic, lim) {
				return
			}
		}
		b.Expanded = append(b.Expanded, e)
	}
}

// checkTemplate applies the rules for a rule's topic: template, and notes a
// discarded $n.
func (l *loader) checkTemplate(r *obj, filter, tmpl string, lim Limits) bool {
	plus := strings.Count(filter, "+")
	hash := strings.HasSuffix(filter, "#")
	switch {
	case strings.Contains(tmpl, "+") || strings.Contains(strings.ReplaceAll(tmpl, "$#", ""), "#"):
		r.at("topic", " %q holds a + or #: a published topic carries no wildcard; use $1 … $N for the filter's + levels and $# for its # tail", tmpl)
		return false
	case strings.HasPrefix(tmpl, "/") || strings.HasSuffix(tmpl, "/"):
		r.at("topic", " %q begins or ends with /: a topic has no empty first or last level here", tmpl)
		return false
	}
	used := map[int]bool{}
	usesTail := false
	for i := 0; i < len(tmpl); i++ {
		if tmpl[i] != '$' {
			continue
		}
		j := i + 1
		for j < len(tmpl) && tmpl[j] >= '0' && tmpl[j] <= '9' {
			j++
		}
		switch {
		case j > i+1:
			n, _ := strconv.Atoi(tmpl[i+1 : j])
			if n < 1 || n > plus {
				r.at("topic", " %q uses $%s, but filter %q has %d + level(s): a topic uses only substitutions its filter provides", tmpl, tmpl[i+1:j], filter, plus)
				return false
			}
			used[n] = true
			i = j - 1
		case j < len(tmpl) && tmpl[j] == '#':
			if !hash {
				r.at("topic", " %q uses $#, but filter %q does not end in #", tmpl, filter)
				return false
			}
			if j+1 != len(tmpl) {
				r.at("topic", " %q has $# before its end: a tail is any number of levels, so it goes last, as # does in a filter", tmpl)
				return false
			}
			usesTail = true
			i = j
		default:
			r.at("topic", " %q has a bare $: a $ begins $1 … $N or $#, and anything else would become literal text by mistake", tmpl)
			return false
		}
	}
	if hash && !usesTail {
		r.at("topic", " %q does not use $# although filter %q ends in #: the discarded tail would collapse an unbounded number of the peer's topics onto one local topic", tmpl, filter)
		return false
	}
	if n := topic.Levels(tmpl); n > lim.MaxTopicLevels {
		r.at("topic", " %q has %d levels, more than limits.max_topic_levels (%d)", tmpl, n, lim.MaxTopicLevels)
		return false
	}
	for n := 1; n <= plus; n++ {
		if !used[n] {
			l.notes.atLine(r.n.file, r.line("topic"), r.key("topic"),
				" %q discards $%d of filter %q: every topic differing only in that level lands on one local topic", tmpl, n, filter)
		}
	}
	return true
}

// templateFilter is the filter a topic template can produce: each substitution
// of a + level is one level, and $# is any tail.
func templateFilter(tmpl string) string {
	levels := strings.Split(tmpl, "/")
	for i, lv := range levels {
		switch {
		case lv == "$#":
			levels[i] = "#"
		case strings.Contains(lv, "$"):
			levels[i] = "+"
		}
	}
	return strings.Join(levels, "/")
}
