// Package acl is the acl_file (RFC 0002 "What a client may do"): roles of
// rules given to user names by pattern, compiled once against the configured
// channels, and asked per client on every publish, subscription and delivery.
//
// It is pure data: the configuration loads it to refuse a bad file at start
// and in --check-config, saguin --acl explains it, and the broker asks a
// client's Grants. It imports no broker package, so that all three read the
// same rules the same way.
package acl

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/saguin-edge/saguin/codec/topic"
)

// Channel types, as the configuration spells them.
const (
	Append = "append"
	Latest = "latest"
	Queue  = "queue"
)

// Channel is what the acl_file needs to know of a configured channel (or a
// derived dead-letter channel): its name, type and expanded filters.
type Channel struct {
	Name    string
	Type    string
	Filter  string   // as written, braces and all
	Filters []string // expanded
}

// Options is what the file is compiled against.
type Options struct {
	Channels []Channel
	// MaxTopicLevels is limits.max_topic_levels; a rule deeper than it is
	// refused. 0 is no bound.
	MaxTopicLevels int
}

// Kind is a rule's kind.
type Kind uint8

const (
	KindChannel Kind = iota + 1
	KindTopic
	KindBroker
)

func (k Kind) String() string {
	switch k {
	case KindChannel:
		return "channel"
	case KindTopic:
		return "topic"
	case KindBroker:
		return "broker"
	}
	return "-"
}

// Verb is a set of verbs.
type Verb uint8

const (
	Write Verb = 1 << iota
	Read
	Seek
	Delete
	Consume
	Disconnect
)

// verbNames is every verb in the order --acl prints them.
var verbNames = []struct {
	v    Verb
	name string
}{{Write, "write"}, {Read, "read"}, {Seek, "seek"}, {Delete, "delete"}, {Consume, "consume"}, {Disconnect, "disconnect"}}

// Names lists the verbs in v, in the table's order.
func (v Verb) Names() []string {
	out := []string{}
	for _, n := range verbNames {
		if v&n.v != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

// Feature is a set of the features broker: features may take away.
type Feature uint8

const (
	Persistent Feature = 1 << iota
	Will
	Share
	Retained
	QoS2
)

var featureNames = []struct {
	f    Feature
	name string
}{{Persistent, "persistent"}, {Will, "will"}, {Share, "share"}, {Retained, "retained"}, {QoS2, "qos2"}}

// Names lists the features in f, in the order RFC 0002 writes them.
func (f Feature) Names() []string {
	out := []string{}
	for _, n := range featureNames {
		if f&n.f != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

// allowed is the verb table (RFC 0002 "The verbs").
var allowed = map[string]Verb{
	Append:     Write | Read | Seek,
	Latest:     Write | Read | Delete,
	Queue:      Write | Consume,
	"topic":    Write | Read,
	"sessions": Disconnect,
}

// Rule is one rule of a role, as written.
type Rule struct {
	Kind    Kind
	Channel string // KindChannel
	// Filter is the rule's filter as written: a topic: rule's, or a channel
	// rule's filter: ("" when it narrows nothing). Filters is it expanded.
	Filter  string
	Filters []string
	Subject string // KindBroker: "sessions" or "features"
	Verbs   Verb
	Denies  Feature
	Line    int
	// substitutes: the filter holds %u or %c.
	usesU, usesC bool
}

// Role is a named list of rules.
type Role struct {
	Name  string
	Rules []Rule
	Line  int
}

// Limits are an entry's per-client publish figures; 0 is not written.
type Limits struct {
	PublishRate  int64
	PublishBytes int64
}

// Entry is one users: entry.
type Entry struct {
	Pattern   string
	Roles     []string
	Limits    *Limits  // nil: the broker-wide figures
	ClientIDs []string // nil: any client id
	Line      int
	literal   int
}

// ACL is a compiled acl_file. It is never changed: a re-read compiles a new
// one and the broker swaps it in whole.
type ACL struct {
	Path    string
	Roles   map[string]*Role
	Entries []*Entry // in file order
	// UsesClientID: some rule or client_ids pattern uses %c, which --acl
	// then says what it is worth.
	UsesClientID bool
	// UsesLimits: some entry carries limits:, so the broker asks which
	// entry applies before charging a publish to its budget.
	UsesLimits bool
	channels   map[string]*Channel
	table      *topic.Table[*Channel]
	nobodyOnce sync.Once
	nobody     *Grants
}

// Error is one refusal of the file, at a line (0: the file as a whole).
type Error struct {
	Path string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return e.Path + ": " + e.Msg
	}
	return e.Path + ":" + strconv.Itoa(e.Line) + ": " + e.Msg
}

// Errors is every refusal of one file.
type Errors []*Error

func (es Errors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// maxFileBytes bounds the file before it is read (invariant 13).
const maxFileBytes = 16 << 20

// Load reads and compiles the file at path.
func Load(path string, opts Options) (*ACL, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s cannot be read: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s cannot be read: %w", path, err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("%s is larger than 16MiB", path)
	}
	return Parse(path, data, opts)
}

// Parse compiles an acl_file's contents; every refusal is returned at once,
// as Errors.
func Parse(path string, data []byte, opts Options) (*ACL, error) {
	c := &compiler{path: path, opts: opts, a: &ACL{
		Path:     path,
		Roles:    map[string]*Role{},
		channels: map[string]*Channel{},
		table:    &topic.Table[*Channel]{},
	}}
	for i := range opts.Channels {
		ch := &opts.Channels[i]
		c.a.channels[ch.Name] = ch
		for _, f := range ch.Filters {
			c.a.table.Add(f, ch)
		}
	}
	root, err := parseYAML(data)
	if err != nil {
		le := err.(lineError)
		return nil, Errors{{path, le.line, le.msg}}
	}
	c.file(root)
	if len(c.errs) > 0 {
		sort.SliceStable(c.errs, func(i, j int) bool { return c.errs[i].Line < c.errs[j].Line })
		return nil, c.errs
	}
	return c.a, nil
}

type compiler struct {
	path string
	opts Options
	a    *ACL
	errs Errors
}

func (c *compiler) bad(line int, format string, args ...any) {
	c.errs = append(c.errs, &Error{c.path, line, fmt.Sprintf(format, args...)})
}

func (c *compiler) file(root *node) {
	if root.kind == nullNode {
		c.bad(0, "is empty: an acl_file holds roles: and users:")
		return
	}
	if root.kind != mapNode {
		c.bad(root.line, "is not a mapping of roles: and users:")
		return
	}
	for i, k := range root.keys {
		switch k {
		case "roles", "users":
		case "clients":
			c.bad(root.klines[i], "clients: is not a block of an acl_file: its keys are user names, the name a client authenticates under and never the client id it chose - write users:")
		default:
			c.bad(root.klines[i], "%q is not a block of an acl_file; it has roles: and users:", k)
		}
	}
	if roles, _, ok := root.get("roles"); ok {
		c.roles(roles)
	}
	if users, _, ok := root.get("users"); ok {
		c.users(users)
	}
}

func (c *compiler) roles(n *node) {
	if n.kind != mapNode {
		c.bad(n.line, "roles: is a mapping of role name to its rules")
		return
	}
	for i, name := range n.keys {
		role := &Role{Name: name, Line: n.klines[i]}
		rules := n.vals[i]
		if rules.kind != seqNode || len(rules.items) == 0 {
			c.bad(n.klines[i], "role %q is a list of rules", name)
			continue
		}
		for _, r := range rules.items {
			if rule, ok := c.rule(name, r); ok {
				role.Rules = append(role.Rules, rule)
			}
		}
		c.a.Roles[name] = role
	}
}

// rule reads one rule: exactly one of channel:, topic: and broker:.
func (c *compiler) rule(role string, n *node) (Rule, bool) {
	if n.kind != mapNode {
		c.bad(n.line, "a rule of role %q is a mapping: channel:, topic: or broker:, with allow: (or deny: on broker: features)", role)
		return Rule{}, false
	}
	r := Rule{Line: n.line}
	kinds := 0
	for i, k := range n.keys {
		switch k {
		case "channel", "topic", "broker":
			kinds++
		case "filter", "allow", "deny":
		default:
			c.bad(n.klines[i], "%q is not a key of a rule; a rule has channel: (with filter:), topic: or broker:, and allow: or deny:", k)
			return r, false
		}
	}
	if kinds != 1 {
		c.bad(n.line, "a rule names exactly one of channel:, topic: and broker:")
		return r, false
	}
	ok := true
	if v, line, has := n.get("channel"); has {
		r.Kind = KindChannel
		ok = c.channelRule(&r, n, v, line)
	} else if v, line, has := n.get("topic"); has {
		r.Kind = KindTopic
		if _, fl, hasF := n.get("filter"); hasF {
			c.bad(fl, "filter: narrows a channel rule; a topic: rule is its own filter")
			return r, false
		}
		ok = c.topicRule(&r, v, line)
	} else {
		v, line, _ := n.get("broker")
		r.Kind = KindBroker
		if _, fl, hasF := n.get("filter"); hasF {
			c.bad(fl, "filter: narrows a channel rule; a broker: rule is about no topic")
			return r, false
		}
		if v.kind != scalarNode || v.text != "sessions" && v.text != "features" {
			c.bad(line, "broker: names sessions or features")
			return r, false
		}
		r.Subject = v.text
	}
	if !ok {
		return r, false
	}
	return r, c.verbs(&r, n)
}

func (c *compiler) verbs(r *Rule, n *node) bool {
	allow, al, hasAllow := n.get("allow")
	deny, dl, hasDeny := n.get("deny")
	if r.Kind == KindBroker && r.Subject == "features" {
		if hasAllow {
			c.bad(al, "broker: features takes deny: and nothing else - a feature is something every client has until a role takes it away, so there is nothing for allow: to add")
			return false
		}
		if !hasDeny {
			c.bad(r.Line, "broker: features takes deny: with the features it takes away (persistent, will, share, retained, qos2)")
			return false
		}
		names, ok := c.list(deny, dl, "deny:")
		if !ok {
			return false
		}
		for _, f := range names {
			var feature Feature
			for _, fn := range featureNames {
				if fn.name == f.text {
					feature = fn.f
				}
			}
			switch {
			case f.text == "retain":
				c.bad(f.line, "retain is not a feature: the feature is retained, named for the broker block that configures it")
				return false
			case feature == 0:
				c.bad(f.line, "%q is not a feature; the five are persistent, will, share, retained and qos2", f.text)
				return false
			case r.Denies&feature != 0:
				c.bad(f.line, "feature %s is denied twice in one rule", f.text)
				return false
			}
			r.Denies |= feature
		}
		return true
	}
	if hasDeny {
		c.bad(dl, "deny: is written only on a broker: features rule; everywhere else rules only grant")
		return false
	}
	if !hasAllow {
		c.bad(r.Line, "a rule grants with allow:")
		return false
	}
	names, ok := c.list(allow, al, "allow:")
	if !ok {
		return false
	}
	kind := "topic"
	switch r.Kind {
	case KindChannel:
		kind = c.a.channels[r.Channel].Type
	case KindBroker:
		kind = "sessions"
	}
	for _, v := range names {
		var verb Verb
		for _, vn := range verbNames {
			if vn.name == v.text {
				verb = vn.v
			}
		}
		switch {
		case kind == Queue && v.text == "read":
			c.bad(v.line, "read is not a verb of a queue: a queue cannot be watched - taking a job holds it for one worker, and its depth is a gauge on the metrics listener (RFC 0005); a worker is granted consume")
			return false
		case verb == 0 || allowed[kind]&verb == 0:
			what := kind
			if r.Kind == KindChannel {
				what = kind + " channel " + r.Channel
			} else if r.Kind == KindBroker {
				what = "broker: sessions"
			}
			c.bad(v.line, "%q is not a verb of %s, which takes %s", v.text, what, strings.Join(allowed[kind].Names(), ", "))
			return false
		}
		r.Verbs |= verb
	}
	return true
}

// list reads a YAML list of scalars (a lone scalar is a list of one).
func (c *compiler) list(n *node, line int, what string) ([]*node, bool) {
	switch n.kind {
	case scalarNode:
		return []*node{n}, true
	case seqNode:
		if len(n.items) == 0 {
			c.bad(line, "%s is empty: a rule that grants nothing reads as though it granted something", what)
			return nil, false
		}
		for _, it := range n.items {
			if it.kind != scalarNode {
				c.bad(it.line, "%s is a list of names", what)
				return nil, false
			}
		}
		return n.items, true
	}
	c.bad(line, "%s is a list of names", what)
	return nil, false
}

// checkFilter applies the rules every filter in the file follows: a
// well-formed MQTT filter once braces are expanded, no deeper than
// max_topic_levels.
func (c *compiler) checkFilter(f string, line int) ([]string, bool) {
	expanded, err := topic.Expand(f)
	if err != nil {
		c.bad(line, "%q: %v", f, err)
		return nil, false
	}
	for _, e := range expanded {
		if err := topic.ValidateFilter(e); err != nil {
			c.bad(line, "%q is not a topic filter: %v", e, err)
			return nil, false
		}
		if c.opts.MaxTopicLevels > 0 && topic.Levels(e) > c.opts.MaxTopicLevels {
			c.bad(line, "%q has %d levels, deeper than limits.max_topic_levels (%d): it could match no topic the broker accepts", e, topic.Levels(e), c.opts.MaxTopicLevels)
			return nil, false
		}
	}
	return expanded, true
}

func (c *compiler) channelRule(r *Rule, n, v *node, line int) bool {
	if v.kind != scalarNode || v.text == "" {
		c.bad(line, "channel: names a configured channel")
		return false
	}
	r.Channel = v.text
	if strings.Contains(r.Channel, "%") {
		c.bad(line, "channel %q holds %%: a channel is declared once in channels: and cannot vary by client, so %%u and %%c are substituted only in filters (topic: and filter:)", r.Channel)
		return false
	}
	ch, ok := c.a.channels[r.Channel]
	if !ok {
		c.bad(line, "channel %s is not configured", r.Channel)
		return false
	}
	fv, fl, has := n.get("filter")
	if !has {
		return true
	}
	if fv.kind != scalarNode || fv.text == "" {
		c.bad(fl, "filter: is a topic filter")
		return false
	}
	r.Filter = fv.text
	if first := topic.FirstLevel(r.Filter); first == "+" || first == "#" || strings.HasPrefix(first, "$") {
		c.bad(fl, "%q: a channel rule's filter spells its first level out, as a channel's own does", r.Filter)
		return false
	}
	if r.Filters, ok = c.checkFilter(r.Filter, fl); !ok {
		return false
	}
	c.substitutes(r)
	// %u and %c are ordinary spelled-out levels here: the rule has to be
	// decidable before any client connects.
	for _, f := range r.Filters {
		touches := false
		for _, cf := range ch.Filters {
			if topic.Intersect(f, cf) {
				touches = true
			}
		}
		if !touches {
			c.bad(fl, "filter %s matches none of channel %s's topics, whose filter is %s: it would grant nothing while reading as part of the channel", f, ch.Name, ch.Filter)
			return false
		}
	}
	return true
}

func (c *compiler) topicRule(r *Rule, v *node, line int) bool {
	if v.kind != scalarNode || v.text == "" {
		c.bad(line, "topic: is a topic filter")
		return false
	}
	r.Filter = v.text
	var ok bool
	if r.Filters, ok = c.checkFilter(r.Filter, line); !ok {
		return false
	}
	c.substitutes(r)
	for _, f := range r.Filters {
		if cf, ch, inside := c.a.table.Within(f); inside {
			c.bad(line, "topic %s is inside channel %s, whose filter is %s; write it as a channel rule", f, ch.Name, cf)
			return false
		}
	}
	return true
}

func (c *compiler) substitutes(r *Rule) {
	r.usesU = strings.Contains(r.Filter, "%u")
	r.usesC = strings.Contains(r.Filter, "%c")
	if r.usesC {
		c.a.UsesClientID = true
	}
}

func (c *compiler) users(n *node) {
	if n.kind != mapNode {
		c.bad(n.line, "users: is a mapping of user-name pattern to its roles")
		return
	}
	for i, pattern := range n.keys {
		e := &Entry{Pattern: pattern, Line: n.klines[i], literal: len(pattern) - strings.Count(pattern, "*")}
		v := n.vals[i]
		var roles *node
		switch v.kind {
		case seqNode, scalarNode:
			roles = v
		case mapNode:
			for j, k := range v.keys {
				switch k {
				case "roles":
				case "limits":
					e.Limits = c.limits(v.vals[j], v.klines[j])
					c.a.UsesLimits = c.a.UsesLimits || e.Limits != nil
				case "client_ids":
					e.ClientIDs = c.clientIDs(v.vals[j], v.klines[j])
				default:
					c.bad(v.klines[j], "%q is not a key of a users: entry; it has roles:, limits: and client_ids:", k)
				}
			}
			r, _, has := v.get("roles")
			if !has {
				c.bad(e.Line, "entry %q has no roles: - every entry is the complete statement about the clients it names, so it says which roles they have", pattern)
				continue
			}
			roles = r
		default:
			c.bad(e.Line, "entry %q has no roles: - every entry is the complete statement about the clients it names, so it says which roles they have", pattern)
			continue
		}
		names, ok := c.list(roles, e.Line, "roles:")
		if !ok {
			continue
		}
		for _, r := range names {
			if _, def := c.a.Roles[r.text]; !def {
				c.bad(r.line, "entry %q names role %q, which roles: does not define", pattern, r.text)
				ok = false
				continue
			}
			e.Roles = append(e.Roles, r.text)
		}
		if ok {
			c.a.Entries = append(c.a.Entries, e)
		}
	}
	// Two patterns spelling out as much and both matching one name would
	// leave which applies to nothing an operator can read.
	for i, a := range c.a.Entries {
		for _, b := range c.a.Entries[i+1:] {
			if a.literal == b.literal && globsMeet(a.Pattern, b.Pattern) {
				c.bad(b.Line, "patterns %q (line %d) and %q (line %d) spell out as many characters and can both match one user name; which applies would be decided by nothing an operator can read - spell one out further", a.Pattern, a.Line, b.Pattern, b.Line)
			}
		}
	}
}

func (c *compiler) limits(n *node, line int) *Limits {
	if n.kind != mapNode {
		c.bad(line, "limits: is a mapping of publish_rate and publish_bytes")
		return nil
	}
	l := &Limits{}
	for i, k := range n.keys {
		v := n.vals[i]
		switch k {
		case "publish_rate":
			x, err := strconv.ParseInt(v.text, 10, 64)
			if v.kind != scalarNode || err != nil || x < 0 {
				c.bad(n.klines[i], "publish_rate is a whole number of messages a second")
				continue
			}
			if x == 0 {
				c.bad(n.klines[i], "publish_rate 0 would refuse every publish; leave it out for no bound")
				continue
			}
			l.PublishRate = x
		case "publish_bytes":
			x, err := parseSize(v.text)
			if v.kind != scalarNode || err != nil {
				c.bad(n.klines[i], "publish_bytes: %v", err)
				continue
			}
			if x == 0 {
				c.bad(n.klines[i], "publish_bytes 0 would refuse every publish; leave it out for no bound")
				continue
			}
			l.PublishBytes = x
		default:
			c.bad(n.klines[i], "%q is not a key of limits: in an acl_file; it has publish_rate and publish_bytes", k)
		}
	}
	return l
}

func (c *compiler) clientIDs(n *node, line int) []string {
	const locked = "client_ids: admits no client id: every device holding the credential would be refused at connect, which looks like a broken fleet rather than a configuration mistake"
	var out []string
	switch n.kind {
	case scalarNode:
		out = []string{n.text}
	case seqNode:
		for _, it := range n.items {
			if it.kind != scalarNode {
				c.bad(it.line, "client_ids: is a pattern or a list of them")
				return nil
			}
			out = append(out, it.text)
		}
	}
	if len(out) == 0 {
		c.bad(line, "%s", locked)
		return nil
	}
	for _, p := range out {
		if strings.Contains(p, "%c") {
			c.bad(line, "client_ids: pattern %q holds %%c, the very id it is matched against; %%u is the name it can tie the id to", p)
		}
	}
	return out
}

// parseSize reads publish_bytes as the configuration writes sizes: a whole
// number of bytes, or one with B, KiB, MiB or GiB.
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		unit   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"B", 1}}
	num, unit := s, int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, unit = n, u.unit
			break
		}
	}
	if num == "" || strings.TrimLeft(num, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a size: write a whole number of bytes, or one with a unit from B, KiB, MiB, GiB and TiB, such as 64KiB", s)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > (1<<62)/unit {
		return 0, fmt.Errorf("%q is larger than this broker can count", s)
	}
	return n * unit, nil
}

// Unwrap lets a caller log each refusal on its own line.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}
