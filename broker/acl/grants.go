package acl

import (
	"strings"

	"github.com/saguin-edge/saguin/codec/topic"
)

// Grant is one rule resolved for one client: %u and %c substituted, braces
// expanded to one grant per spelling.
type Grant struct {
	Role    string
	Rule    *Rule
	Kind    Kind
	Channel string // KindChannel
	// Filter is the resolved filter: a topic rule's, or a channel rule's
	// narrowing ("" for the whole channel).
	Filter string
	// prefix is Filter up to its first wildcard: a topic not starting with
	// it is refused without walking the levels.
	prefix  string
	Subject string // KindBroker
	Verbs   Verb
	Denies  Feature
	// personal: made from a rule using %u or %c, so it differs between
	// clients of one entry; every other grant is the same for all of them.
	personal bool
}

// Withheld is a rule that grants a client nothing because a name it would
// put in holds +, # or / (or is empty), or - explaining without a client
// id - because it uses %c.
type Withheld struct {
	Role string
	Rule *Rule
}

// Grants is what one client (user name and client id) may do under one
// ACL. A nil *Grants is a broker without an acl_file: everything is
// allowed. It is never changed once made, so the broker may read it from
// any goroutine; a re-read makes new ones.
type Grants struct {
	ACL      *ACL
	User     string
	ClientID string
	// Entry is the entry in force, nil when no pattern matches the user.
	Entry *Entry
	// Matched is every entry whose pattern matches, in file order.
	Matched []*Entry
	List    []Grant
	// Withheld are the rules granting nothing for this name; Unresolved the
	// rules using %c when no client id was given (only saguin --acl asks
	// without one).
	Withheld   []Withheld
	Unresolved []Withheld
	Denies     Feature
	// ClientIDAllowed: the entry's client_ids admits the client id (true
	// where it has none, false where no entry applies only if client_ids
	// would be asked - it is not).
	ClientIDAllowed bool
	hangUp          bool
	hasPersonal     bool
}

// Applies returns the entry in force for user and every entry matching
// it: of the patterns that match, the one spelling most characters out
// supplies the whole entry (RFC 0002 "Which entry applies").
func (a *ACL) Applies(user string) (applied *Entry, matched []*Entry) {
	for _, e := range a.Entries {
		if !globMatch(e.Pattern, user) {
			continue
		}
		matched = append(matched, e)
		if applied == nil || e.literal > applied.literal {
			applied = e
		}
	}
	return applied, matched
}

// Grants resolves what user may do connected under clientID.
func (a *ACL) Grants(user, clientID string) *Grants {
	return a.resolve(user, clientID, true)
}

// Explain is Grants for saguin --acl, where the client id may be absent:
// rules using %c are then Unresolved rather than resolved against nothing.
func (a *ACL) Explain(user, clientID string, hasClientID bool) *Grants {
	return a.resolve(user, clientID, hasClientID)
}

func (a *ACL) resolve(user, clientID string, hasClientID bool) *Grants {
	g := &Grants{ACL: a, User: user, ClientID: clientID, ClientIDAllowed: true}
	g.Entry, g.Matched = a.Applies(user)
	if g.Entry == nil {
		return g
	}
	if hasClientID && g.Entry.ClientIDs != nil {
		g.ClientIDAllowed = false
		for _, p := range g.Entry.ClientIDs {
			if strings.Contains(p, "%u") {
				if strings.Contains(user, "*") {
					// A name holding the pattern's own wildcard is never
					// substituted: the pattern admits no id for it.
					continue
				}
				p = strings.ReplaceAll(p, "%u", user)
			}
			if globMatch(p, clientID) {
				g.ClientIDAllowed = true
				break
			}
		}
	}
	for _, roleName := range g.Entry.Roles {
		role := a.Roles[roleName]
		for i := range role.Rules {
			r := &role.Rules[i]
			switch {
			case r.usesC && !hasClientID:
				g.Unresolved = append(g.Unresolved, Withheld{roleName, r})
				continue
			case r.usesU && !fitsLevel(user), r.usesC && !fitsLevel(clientID):
				g.Withheld = append(g.Withheld, Withheld{roleName, r})
				continue
			}
			g.Denies |= r.Denies
			if r.Kind == KindBroker {
				if r.Subject == "sessions" && r.Verbs&Disconnect != 0 {
					g.hangUp = true
				}
				g.List = append(g.List, Grant{Role: roleName, Rule: r, Kind: KindBroker, Subject: r.Subject, Verbs: r.Verbs, Denies: r.Denies})
				continue
			}
			if r.Filter == "" {
				g.List = append(g.List, Grant{Role: roleName, Rule: r, Kind: r.Kind, Channel: r.Channel, Verbs: r.Verbs})
				continue
			}
			// Expanded before substitution: a device calling itself
			// {s1,s9} must not turn one grant into two.
			for _, f := range r.Filters {
				sf := substitute(f, user, clientID)
				personal := r.usesU || r.usesC
				g.hasPersonal = g.hasPersonal || personal
				g.List = append(g.List, Grant{Role: roleName, Rule: r, Kind: r.Kind, Channel: r.Channel,
					Filter: sf, prefix: literalPrefix(sf), Verbs: r.Verbs, personal: personal})
			}
		}
	}
	return g
}

// fitsLevel: a name goes into a rule as one level, never as its syntax.
func fitsLevel(name string) bool {
	return name != "" && !strings.ContainsAny(name, "+#/")
}

// literalPrefix is what every topic f matches begins with: f up to its first
// wildcard, and short of the / before a trailing # - a/# matches a itself.
func literalPrefix(f string) string {
	i := strings.IndexAny(f, "+#")
	switch {
	case i < 0:
		return f
	case f[i] == '#' && i > 0:
		return f[:i-1]
	}
	return f[:i]
}

// substitute puts the names in, in one pass: a name holding %c is put in as
// written.
func substitute(f, user, clientID string) string {
	if !strings.Contains(f, "%") {
		return f
	}
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] == '%' && i+1 < len(f) {
			switch f[i+1] {
			case 'u':
				b.WriteString(user)
				i++
				continue
			case 'c':
				b.WriteString(clientID)
				i++
				continue
			}
		}
		b.WriteByte(f[i])
	}
	return b.String()
}

// Allows reports whether the client may act with verb on a topic that
// resolved to channel ("" for broadcast). The structural rules have been
// asked already; this only narrows. It allocates nothing.
func (g *Grants) Allows(channel, t string, verb Verb) bool {
	if g == nil {
		return true
	}
	return g.allows(channel, t, verb, true, true)
}

// Memo carries, through one fan-out (one topic, one verb, one ACL), the
// answers of the grants an entry gives all its clients alike, so that a
// hundred subscribers of one fleet pattern cost one walk of those rules and a
// hundred of their own %u rules. The zero Memo is empty.
type Memo struct {
	entries [4]*Entry
	ok      [4]bool
	next    int
}

// AllowsMemo is Allows for the deliveries of one publish: m is that
// publish's, and channel, t and verb are the same on every call with it.
func (g *Grants) AllowsMemo(m *Memo, channel, t string, verb Verb) bool {
	if g == nil {
		return true
	}
	if g.Entry == nil {
		return false
	}
	shared, known := false, false
	for i, e := range m.entries {
		if e == g.Entry {
			shared, known = m.ok[i], true
			break
		}
	}
	if !known {
		shared = g.allows(channel, t, verb, true, false)
		m.entries[m.next], m.ok[m.next] = g.Entry, shared
		m.next = (m.next + 1) % len(m.entries)
	}
	return shared || g.hasPersonal && g.allows(channel, t, verb, false, true)
}

// allows walks the grants, the shared ones, the personal ones or both.
func (g *Grants) allows(channel, t string, verb Verb, shared, personal bool) bool {
	for i := range g.List {
		gr := &g.List[i]
		if gr.Verbs&verb == 0 || gr.personal && !personal || !gr.personal && !shared {
			continue
		}
		if len(t) < len(gr.prefix) || t[:len(gr.prefix)] != gr.prefix {
			continue
		}
		if channel == "" {
			if gr.Kind == KindTopic && topic.Match(gr.Filter, t) {
				return true
			}
			continue
		}
		if gr.Kind == KindChannel && gr.Channel == channel && (gr.Filter == "" || topic.Match(gr.Filter, t)) {
			return true
		}
	}
	return false
}

// AllowsChannel reports whether the client holds verb on channel for some
// of its topics - consume on a queue, which has no topic of its own to ask
// about, and the catalogue's "verbs this client holds".
func (g *Grants) AllowsChannel(channel string, verb Verb) bool {
	if g == nil {
		return true
	}
	for i := range g.List {
		gr := &g.List[i]
		if gr.Kind == KindChannel && gr.Channel == channel && gr.Verbs&verb != 0 {
			return true
		}
	}
	return false
}

// ChannelVerbs is every verb the client holds on channel.
func (g *Grants) ChannelVerbs(channel string) Verb {
	var v Verb
	if g == nil {
		return Write | Read | Seek | Delete | Consume
	}
	for i := range g.List {
		if gr := &g.List[i]; gr.Kind == KindChannel && gr.Channel == channel {
			v |= gr.Verbs
		}
	}
	return v
}

// AllowsFilter reports whether a subscription to filter (the filter of a
// $share/ subscription without its prefix) is granted: whole or not at all
// (RFC 0002 "Three rule kinds"). It needs verb on every channel the filter
// reaches, covering the part of the filter inside that channel, and - where
// the filter lies inside no one channel - a topic: rule covering all of it.
// A queue reached by a plain filter is skipped: it delivers nothing there,
// only through its $saguin/queue/ form, asked with AllowsChannel.
func (g *Grants) AllowsFilter(filter string, verb Verb) bool {
	if g == nil {
		return true
	}
	ok, inside := true, false
	g.ACL.table.Reach(filter, func(entry string, ch *Channel, in bool) {
		if in {
			inside = true
		}
		if ch.Type == Queue || !ok {
			return
		}
		part, _ := topic.Meet(filter, entry)
		if !g.coversChannel(ch.Name, part, verb) {
			ok = false
		}
	})
	if !ok {
		return false
	}
	if inside {
		return true
	}
	for i := range g.List {
		gr := &g.List[i]
		if gr.Kind == KindTopic && gr.Verbs&verb != 0 && topic.Contains(gr.Filter, filter) {
			return true
		}
	}
	return false
}

func (g *Grants) coversChannel(channel, part string, verb Verb) bool {
	for i := range g.List {
		gr := &g.List[i]
		if gr.Kind == KindChannel && gr.Channel == channel && gr.Verbs&verb != 0 &&
			(gr.Filter == "" || topic.Contains(gr.Filter, part)) {
			return true
		}
	}
	return false
}

// MayHangUp reports whether the client holds broker: sessions disconnect.
func (g *Grants) MayHangUp() bool { return g == nil || g.hangUp }

// Denied reports whether a feature is taken away from the client.
func (g *Grants) Denied(f Feature) bool { return g != nil && g.Denies&f != 0 }

// Limits is the entry's own publish figures, nil where the broker-wide ones
// apply.
func (g *Grants) Limits() *Limits {
	if g == nil || g.Entry == nil {
		return nil
	}
	return g.Entry.Limits
}

// Channel returns the channel holding t ("" for broadcast), by the rule the
// broker routes with: the most exact filter holds the topic.
func (a *ACL) Channel(t string) string {
	if _, ch, ok := a.table.Lookup(t); ok {
		return ch.Name
	}
	return ""
}

// Nobody is the grants of a session no CONNECT has proved a name for yet (one
// restored from the store, until it reconnects): nothing is granted. Made
// once per ACL, so asking allocates nothing.
func (a *ACL) Nobody() *Grants {
	a.nobodyOnce.Do(func() { a.nobody = &Grants{ACL: a} })
	return a.nobody
}
