package topic

import (
	"math/rand"
	"strings"
	"testing"
)

// TestReachAgreesWithResolvingEveryTopic checks Reach and Within against the
// definition, by brute force over a small alphabet: a filter is never left
// out when some topic the subscription matches resolves to it, and "inside"
// holds only when every topic the subscription matches resolves there.
func TestReachAgreesWithResolvingEveryTopic(t *testing.T) {
	levels := []string{"a", "b", "+", "#"}
	r := rand.New(rand.NewSource(7))
	randFilter := func() string {
		n := 1 + r.Intn(3)
		var parts []string
		for i := 0; i < n; i++ {
			l := levels[r.Intn(len(levels))]
			if l == "#" {
				parts = append(parts, l)
				break
			}
			parts = append(parts, l)
		}
		return strings.Join(parts, "/")
	}
	// Every topic of up to four levels over {a, b, c}.
	var topics []string
	var grow func(prefix string, depth int)
	grow = func(prefix string, depth int) {
		if depth > 0 {
			topics = append(topics, prefix)
		}
		if depth == 4 {
			return
		}
		for _, l := range []string{"a", "b", "c"} {
			p := l
			if depth > 0 {
				p = prefix + "/" + l
			}
			grow(p, depth+1)
		}
	}
	grow("", 0)
	for round := 0; round < 2000; round++ {
		var tab Table[int]
		for i := 0; i < 1+r.Intn(4); i++ {
			_ = tab.Add(randFilter(), i)
		}
		sub := randFilter()
		reported := map[string]bool{}
		inside := ""
		tab.Reach(sub, func(e string, _ int, in bool) {
			reported[e] = true
			if in {
				inside = e
			}
		})
		holders := map[string]bool{}
		matched := 0
		for _, topic := range topics {
			if !Match(sub, topic) {
				continue
			}
			matched++
			if f, _, ok := tab.Lookup(topic); ok {
				holders[f] = true
				if !reported[f] {
					t.Fatalf("%q: topic %q resolves to %q, which Reach left out (table %v)", sub, topic, f, tab.entries)
				}
			} else if inside != "" {
				t.Fatalf("%q is reported inside %q, but %q is broadcast", sub, inside, topic)
			}
		}
		if inside != "" && (len(holders) != 1 || !holders[inside]) && matched > 0 {
			t.Fatalf("%q is reported inside %q, but its topics resolve to %v", sub, inside, holders)
		}
	}
}
