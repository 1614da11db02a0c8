package topic

import "strings"

// Meet returns the filter matching exactly the topics both a and b match, and
// false when they share none. iot/+/state/# and iot/depot/# meet in
// iot/depot/state/#.
func Meet(a, b string) (string, bool) {
	if !Intersect(a, b) {
		return "", false
	}
	var out strings.Builder
	ai, bi := 0, 0
	for {
		al, anext, alast := nextLevel(a, ai)
		bl, bnext, blast := nextLevel(b, bi)
		switch {
		case al == "#":
			out.WriteString(b[bi:])
			return out.String(), true
		case bl == "#":
			out.WriteString(a[ai:])
			return out.String(), true
		case al == "+":
			out.WriteString(bl)
		default:
			out.WriteString(al)
		}
		switch {
		case alast && blast:
			return out.String(), true
		case alast, blast:
			// The other goes on only with a trailing #, which matches no level.
			return out.String(), true
		}
		out.WriteByte(Separator)
		ai, bi = anext, bnext
	}
}

type entry[V any] struct {
	filter string
	value  V
}

// Each calls fn with every filter in the table and its value, in the order
// they were added, until fn returns false.
func (t *Table[V]) Each(fn func(filter string, value V) bool) {
	for _, e := range t.entries {
		if !fn(e.filter, e.value) {
			return
		}
	}
}

// Reach calls fn for every filter in the table a subscription filter is served
// from (RFC 0002 "What a filter reaches"): one that shares a topic with it and
// holds at least one of those shared topics itself, rather than every one of
// them belonging to a single more exact filter in the table. inside is true
// when every topic the subscription matches is held by that one filter - the
// subscription lies entirely inside it, which is what RFC 0002 refuses against
// a queue. Filters are visited in the order they were added.
//
// A filter whose shared topics are claimed by several more exact filters
// together, and by no single one, is still reported: Reach never leaves out a
// filter that might serve the subscription.
func (t *Table[V]) Reach(filter string, fn func(entry string, value V, inside bool)) {
	for _, e := range t.entries {
		shared, ok := Meet(filter, e.filter)
		if !ok {
			continue
		}
		held, inside := true, Contains(e.filter, filter)
		for _, g := range t.entries {
			if g.filter == e.filter || !Intersect(g.filter, filter) {
				continue
			}
			if Compare(g.filter, e.filter) > 0 {
				inside = false
				if Contains(g.filter, shared) {
					held = false
					break
				}
			}
		}
		if held {
			fn(e.filter, e.value, inside)
		}
	}
}

// Within returns the filter in the table that holds every topic f matches, if
// one does: the entry f lies entirely inside.
func (t *Table[V]) Within(f string) (filter string, value V, ok bool) {
	t.Reach(f, func(e string, v V, inside bool) {
		if inside && !ok {
			filter, value, ok = e, v, true
		}
	})
	return filter, value, ok
}
