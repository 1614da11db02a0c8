package config

import (
	"fmt"
	"sort"
	"strings"
)

// Summary is what --check-config prints on success: "FILE: ok", the channels
// with their types, where each bridge rule's records land, and the notes
// (RFC 0002 "Bridges" has the shape). name is the file as the operator named it.
func (c *Config) Summary(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ok\n", name)
	all := append(append([]Channel(nil), c.Channels...), c.DeadLetters...)
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	for _, ch := range all {
		line := fmt.Sprintf("  %-24s %s", ch.Name, ch.Type)
		if ch.DerivedFrom != "" {
			line += fmt.Sprintf(" (dead letters of %s, derived)", ch.DerivedFrom)
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	routes := c.Routes()
	for _, br := range c.Bridges {
		for _, r := range br.Expanded {
			fmt.Fprintf(&b, "  bridge %q, %s %q: %s\n", br.Name, r.Direction, r.Filter, landing(routes, r))
		}
	}
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n.String())
	}
	return b.String()
}

// landing says where a bridge rule's records go: for a rule bringing records
// in, the channels its topic reaches; for one carrying them out, the channels
// it reads - a queue it crosses is never served.
func landing(routes *Routes, r BridgeRule) string {
	target := r.Filter
	if r.Direction == DirectionIn && r.Topic != "" {
		target = templateFilter(r.Topic)
	}
	reach := routes.Filter(target)
	sort.Slice(reach, func(i, j int) bool { return reach[i].Channel.Name < reach[j].Channel.Name })
	var served, crossed []string
	for _, x := range reach {
		name := fmt.Sprintf("%s (%s)", x.Channel.Name, x.Channel.Type)
		if r.Direction != DirectionIn && x.Channel.Type == TypeQueue {
			crossed = append(crossed, name)
			continue
		}
		served = append(served, name)
	}
	verb := "lands in"
	if r.Direction == DirectionOut {
		verb = "reads"
	}
	out := verb + " broadcast (no channel claims it)"
	if len(served) > 0 {
		out = verb + " " + strings.Join(served, ", ")
	}
	if len(crossed) > 0 {
		out += "; crosses " + strings.Join(crossed, ", ") + ", never served"
	}
	return out
}
