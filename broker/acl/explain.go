package acl

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Bounds are the broker-wide publish figures (limits.publish_rate and
// publish_bytes); 0 is no bound.
type Bounds struct {
	PublishRate  int64
	PublishBytes int64
}

// figures is what a client is held to: the applying entry's limits where it
// carries them, each figure that entry writes replacing the broker-wide one,
// else the broker-wide figures (RFC 0002 "How fast one client may publish").
func (g *Grants) figures(b Bounds) Bounds {
	if l := g.Limits(); l != nil {
		// An entry's limits: replaces both figures: one it leaves out is
		// no bound, not the broker's.
		return Bounds{l.PublishRate, l.PublishBytes}
	}
	return b
}

// Figures is what the client is held to, given the broker-wide bounds.
func (g *Grants) Figures(b Bounds) Bounds {
	if g == nil {
		return b
	}
	return g.figures(b)
}

func bound(n int64) string {
	if n == 0 {
		return "no bound"
	}
	return strconv.FormatInt(n, 10)
}

func (gr *Grant) subject() string {
	switch gr.Kind {
	case KindBroker:
		return gr.Subject
	case KindChannel:
		if gr.Filter != "" {
			return gr.Channel + " (" + gr.Filter + ")"
		}
		return gr.Channel
	}
	return gr.Filter
}

// verbsColumn: a features rule has no verbs, and the text form has no
// denies column, so its denials are written there after deny:.
func (gr *Grant) verbsColumn() string {
	if gr.Kind == KindBroker && gr.Subject == "features" {
		return "deny:" + strings.Join(gr.Denies.Names(), ",")
	}
	return strings.Join(gr.Verbs.Names(), ",")
}

// ListHeader is the list form's header; it starts with # so a kept run can
// be piped back in.
const ListHeader = "# user\trole\tkind\tsubject\tverbs\trate\tbytes\n"

// WriteRows writes the list form's rows for asked (the input, always the
// first column): a line per grant, the limit columns repeated on each, a row
// of - for a client granted nothing. Notes (a rule using %c without a client
// id, a withheld rule) follow as # lines, which a re-read skips.
func (g *Grants) WriteRows(w io.Writer, asked string, b Bounds) {
	f := g.figures(b)
	rate, bytes := bound(f.PublishRate), bound(f.PublishBytes)
	if len(g.List) == 0 {
		role := "-"
		if g.Entry != nil {
			role = strings.Join(g.Entry.Roles, ",")
		}
		fmt.Fprintf(w, "%s\t%s\t-\t-\t-\t%s\t%s\n", asked, role, rate, bytes)
	}
	for i := range g.List {
		gr := &g.List[i]
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", asked, gr.Role, gr.Kind, gr.subject(), gr.verbsColumn(), rate, bytes)
	}
	// A rule is named by its subject as the file writes it: a channel
	// rule's filter alone would not say which channel it narrows.
	for _, u := range g.Unresolved {
		fmt.Fprintf(w, "# %s: role %s, %s %s (line %d) uses %%c and no client id was given, so it is not resolved; give one after the user name\n", asked, u.Role, u.Rule.Kind, ruleSubject(u.Rule), u.Rule.Line)
	}
	for _, u := range g.Withheld {
		fmt.Fprintf(w, "# %s: role %s, %s %s (line %d) is withheld: the name it would put in holds +, # or /, or is empty\n", asked, u.Role, u.Rule.Kind, ruleSubject(u.Rule), u.Rule.Line)
	}
}

// listLine is a list-form row as --json writes it.
type listLine struct {
	User         string   `json:"user"`
	Role         *string  `json:"role"`
	Kind         *string  `json:"kind"`
	Subject      *string  `json:"subject"`
	Verbs        []string `json:"verbs"`
	Denies       []string `json:"denies"`
	PublishRate  *int64   `json:"publish_rate"`
	PublishBytes *int64   `json:"publish_bytes"`
}

func optional(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

// WriteJSONRows is WriteRows as one compact JSON object a line.
func (g *Grants) WriteJSONRows(w io.Writer, asked string, b Bounds) {
	f := g.figures(b)
	if len(g.List) == 0 {
		l := listLine{User: asked, Verbs: []string{}, Denies: []string{},
			PublishRate: optional(f.PublishRate), PublishBytes: optional(f.PublishBytes)}
		if g.Entry != nil {
			role := strings.Join(g.Entry.Roles, ",")
			l.Role = &role
		}
		writeJSON(w, l)
	}
	for i := range g.List {
		gr := &g.List[i]
		role, kind, subject := gr.Role, gr.Kind.String(), gr.subject()
		writeJSON(w, listLine{User: asked, Role: &role, Kind: &kind, Subject: &subject,
			Verbs: gr.Verbs.Names(), Denies: gr.Denies.Names(),
			PublishRate: optional(f.PublishRate), PublishBytes: optional(f.PublishBytes)})
	}
}

func writeJSON(w io.Writer, v any) {
	b, _ := json.Marshal(v)
	w.Write(append(b, '\n'))
}

type objectGrant struct {
	Role    string   `json:"role"`
	Kind    string   `json:"kind"`
	Subject string   `json:"subject"`
	Verbs   []string `json:"verbs"`
	Denies  []string `json:"denies"`
}

type withheldGrant struct {
	Role    string `json:"role"`
	Kind    string `json:"kind"`
	Subject string `json:"subject"`
	Line    int    `json:"line"`
}

type object struct {
	User            string          `json:"user"`
	ACLFile         string          `json:"acl_file"`
	PatternApplied  *string         `json:"pattern_applied"`
	PatternsMatched []string        `json:"patterns_matched"`
	PatternsInFile  []string        `json:"patterns_in_file"`
	Grants          []objectGrant   `json:"grants"`
	GrantsWithheld  []withheldGrant `json:"grants_withheld"`
	ClientIDAllowed *bool           `json:"client_id_allowed"`
}

func ruleSubject(r *Rule) string {
	switch r.Kind {
	case KindBroker:
		return r.Subject
	case KindChannel:
		if r.Filter != "" {
			return r.Channel + " (" + r.Filter + ")"
		}
		return r.Channel
	}
	return r.Filter
}

// WriteJSONObject writes the one object a user operand is answered with
// (RFC 0002 "--json"); hasClientID says whether one was given.
func (g *Grants) WriteJSONObject(w io.Writer, hasClientID bool) {
	o := object{User: g.User, ACLFile: g.ACL.Path, PatternsMatched: []string{}, PatternsInFile: []string{},
		Grants: []objectGrant{}, GrantsWithheld: []withheldGrant{}}
	if g.Entry != nil {
		p := g.Entry.Pattern
		o.PatternApplied = &p
	}
	for _, e := range g.Matched {
		o.PatternsMatched = append(o.PatternsMatched, e.Pattern)
	}
	for _, e := range g.ACL.Entries {
		o.PatternsInFile = append(o.PatternsInFile, e.Pattern)
	}
	for i := range g.List {
		gr := &g.List[i]
		o.Grants = append(o.Grants, objectGrant{gr.Role, gr.Kind.String(), gr.subject(), gr.Verbs.Names(), gr.Denies.Names()})
	}
	for _, wh := range g.Withheld {
		o.GrantsWithheld = append(o.GrantsWithheld, withheldGrant{wh.Role, wh.Rule.Kind.String(), ruleSubject(wh.Rule), wh.Rule.Line})
	}
	if hasClientID {
		allowed := g.ClientIDAllowed
		o.ClientIDAllowed = &allowed
	}
	writeJSON(w, o)
}

// WriteParagraph is the paragraph form for one user (and client id): the
// entry in force and the entries it shadows, the roles and the rules they
// carry, the effective grants, the publish limits, and the notes a reader
// needs - %c unresolved, withheld rules, a shadowed entry's limits, what %c
// scoping is worth.
func (g *Grants) WriteParagraph(w io.Writer, hasClientID bool, b Bounds) {
	a := g.ACL
	if hasClientID {
		fmt.Fprintf(w, "user %s, client id %s, under %s\n", g.User, g.ClientID, a.Path)
	} else {
		fmt.Fprintf(w, "user %s, under %s\n", g.User, a.Path)
	}
	if g.Entry == nil {
		fmt.Fprintf(w, "\nno pattern in the file matches %s: it is granted nothing, and held to the broker-wide publish limits (%s messages/s, %s bytes/s)\n",
			g.User, bound(b.PublishRate), bound(b.PublishBytes))
		return
	}
	fmt.Fprintf(w, "\nentry in force: %q (line %d)\n", g.Entry.Pattern, g.Entry.Line)
	for _, e := range g.Matched {
		if e == g.Entry {
			continue
		}
		fmt.Fprintf(w, "shadows:        %q (line %d) - it matches too, and does nothing for this user\n", e.Pattern, e.Line)
		if e.Limits != nil && g.Entry.Limits == nil {
			fmt.Fprintf(w, "note: the shadowed entry %q carries limits and the entry in force does not, so this user is held to the broker-wide figures rather than %q's\n", e.Pattern, e.Pattern)
		}
	}
	if hasClientID && g.Entry.ClientIDs != nil {
		verdict := "admits"
		if !g.ClientIDAllowed {
			verdict = "does not admit; a CONNECT under it is refused 0x86"
		}
		fmt.Fprintf(w, "client_ids %s %s client id %s\n", strings.Join(g.Entry.ClientIDs, ", "), verdict, g.ClientID)
	}
	fmt.Fprintln(w, "\nroles and the rules they carry:")
	for _, name := range g.Entry.Roles {
		r := a.Roles[name]
		fmt.Fprintf(w, "  %s (line %d)\n", name, r.Line)
		for i := range r.Rules {
			rule := &r.Rules[i]
			verbs := "allow " + strings.Join(rule.Verbs.Names(), ", ")
			if rule.Denies != 0 {
				verbs = "deny " + strings.Join(rule.Denies.Names(), ", ")
			}
			fmt.Fprintf(w, "    %s %s: %s (line %d)\n", rule.Kind, ruleSubject(rule), verbs, rule.Line)
		}
	}
	fmt.Fprintln(w, "\neffective grants:")
	if len(g.List) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for i := range g.List {
		gr := &g.List[i]
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", gr.Role, gr.Kind, gr.subject(), gr.verbsColumn())
	}
	for _, u := range g.Unresolved {
		fmt.Fprintf(w, "\nrole %s's rule %s (line %d) uses %%c, and no client id was given: the substitution cannot be made, so what it grants is not shown. Give the client id after the user name.\n", u.Role, ruleSubject(u.Rule), u.Rule.Line)
	}
	for _, u := range g.Withheld {
		fmt.Fprintf(w, "\nwithheld: role %s's rule %s (line %d) grants nothing here - the name it would put in holds +, # or /, or is empty, and a name goes into a rule as one level, never as its syntax\n", u.Role, ruleSubject(u.Rule), u.Rule.Line)
	}
	f := g.figures(b)
	from := "the broker-wide figures"
	if g.Entry.Limits != nil {
		from = fmt.Sprintf("entry %q", g.Entry.Pattern)
	}
	fmt.Fprintf(w, "\npublish limits: %s messages/s, %s bytes/s (%s)\n", bound(f.PublishRate), bound(f.PublishBytes), from)
	if a.UsesClientID {
		io.WriteString(w, "\nnote: this file scopes rules by %c, the client id - whatever the device typed. It separates devices sharing one credential by mistake, not by force: they are one principal, and one can take another's topics (the displaced device reconnects and somebody sees it). client_ids: on the entry keeps the credential inside its cohort.\n")
	}
}
