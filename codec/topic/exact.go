package topic

import (
	"fmt"
	"strings"
)

// Level kinds in the order the most-exact rule ranks them (RFC 0002 "Which
// channel a topic belongs to"): a spelled-out level beats +, + beats #, and a
// filter that ends at a level beats one continuing there with #. An end and a +
// or a spelled-out level never both match one topic, so where "end" sits
// against them only keeps the order total.
const (
	rankHash = iota
	rankEnd
	rankPlus
	rankLiteral
)

func rank(level string, ended bool) int {
	switch {
	case ended:
		return rankEnd
	case level == "#":
		return rankHash
	case level == "+":
		return rankPlus
	}
	return rankLiteral
}

// Compare orders two filters by how exactly they spell a topic out: positive
// when a holds a topic both match, negative when b does, zero only when they
// are the same string. Levels are compared from the left and the first level
// at which they differ decides. Which filter wins depends on the two filters
// alone, never on the topic, so a channel table can be ordered once.
// Two different spelled-out levels (no common topic) are ordered by bytes so
// that Compare is a total order.
func Compare(a, b string) int {
	ai, bi := 0, 0
	aEnded, bEnded := false, false
	for !aEnded || !bEnded {
		var al, bl string
		var anext, bnext int
		var alast, blast bool
		if !aEnded {
			al, anext, alast = nextLevel(a, ai)
		}
		if !bEnded {
			bl, bnext, blast = nextLevel(b, bi)
		}
		ra, rb := rank(al, aEnded), rank(bl, bEnded)
		if ra != rb {
			return ra - rb
		}
		if ra == rankLiteral && al != bl {
			return strings.Compare(al, bl)
		}
		aEnded, bEnded = aEnded || alast, bEnded || blast
		ai, bi = anext, bnext
	}
	return 0
}

// Table maps filters to values and answers which filter holds a topic: the
// most exact one that matches it, or none (broadcast). Order of insertion has
// no effect. Lookup allocates nothing and costs one step per topic level plus
// the backtracking the wildcards in the table make necessary. A Table is not
// safe for concurrent Add; concurrent Lookups on a Table nobody adds to are.
type Table[V any] struct {
	root    node[V]
	n       int
	entries []entry[V]
}

type node[V any] struct {
	literal map[string]*node[V]
	plus    *node[V]
	hash    *node[V]
	// A filter ends at this node.
	set    bool
	filter string
	value  V
}

// Add places value under filter. The filter must be valid (ValidateFilter) and
// hold no braces (Expand first); the same filter twice is refused, being the one
// tie the most-exact rule cannot settle.
func (t *Table[V]) Add(filter string, value V) error {
	if err := ValidateFilter(filter); err != nil {
		return fmt.Errorf("filter %q: %w", filter, err)
	}
	n := &t.root
	for i := 0; ; {
		l, next, last := nextLevel(filter, i)
		n = n.child(l)
		if last {
			break
		}
		i = next
	}
	if n.set {
		return fmt.Errorf("filter %q is in the table already", filter)
	}
	n.set, n.filter, n.value = true, filter, value
	t.n++
	t.entries = append(t.entries, entry[V]{filter, value})
	return nil
}

// Len is the number of filters in the table.
func (t *Table[V]) Len() int { return t.n }

func (n *node[V]) child(level string) *node[V] {
	switch level {
	case "+":
		if n.plus == nil {
			n.plus = &node[V]{}
		}
		return n.plus
	case "#":
		if n.hash == nil {
			n.hash = &node[V]{}
		}
		return n.hash
	}
	if n.literal == nil {
		n.literal = make(map[string]*node[V])
	}
	c := n.literal[level]
	if c == nil {
		c = &node[V]{}
		n.literal[level] = c
	}
	return c
}

// Lookup returns the filter that holds topic and its value, or ok false when
// no filter matches it. The search tries a spelled-out level before +, and +
// before #, at every level, and a filter ending where the topic ends before a
// trailing #, so the first filter it reaches is the most exact (Compare).
func (t *Table[V]) Lookup(topic string) (filter string, value V, ok bool) {
	n := t.root.find(topic, 0, true)
	if n == nil {
		var zero V
		return "", zero, false
	}
	return n.filter, n.value, true
}

func (n *node[V]) find(topic string, i int, first bool) *node[V] {
	l, next, last := nextLevel(topic, i)
	// MQTT-4.7.2-1: a leading wildcard does not reach a topic beginning with $.
	wild := !first || l == "" || l[0] != '$'
	if c := n.literal[l]; c != nil {
		if r := c.at(topic, next, last); r != nil {
			return r
		}
	}
	if wild && n.plus != nil {
		if r := n.plus.at(topic, next, last); r != nil {
			return r
		}
	}
	if wild && n.hash != nil && n.hash.set {
		return n.hash
	}
	return nil
}

// at continues a search at the node a topic level led to: the filter ending
// here if the topic has ended too (else a trailing # beneath it, which matches
// no level), or the search one level further down.
func (n *node[V]) at(topic string, next int, ended bool) *node[V] {
	if !ended {
		return n.find(topic, next, false)
	}
	if n.set {
		return n
	}
	if n.hash != nil && n.hash.set {
		return n.hash
	}
	return nil
}
