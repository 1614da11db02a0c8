package topic

import (
	"strings"
	"testing"
)

// FuzzFilter checks the filter parser against the matcher and the comparison
// rules: whatever ValidateFilter accepts, the table, Match, Intersect, Contains
// and Compare agree with each other on, and nothing panics.
func FuzzFilter(f *testing.F) {
	for _, s := range [][2]string{
		{"a/+/#", "a/b/c"}, {"#", "$SYS/x"}, {"+/+", "/"}, {"a/#", "a"},
		{"iot/water/+/location/#", "iot/water/w-7/location"}, {"a/b+", "a/b"}, {"", ""},
		{"jobs/#", "jobs/__dlq/x"}, {"a//+", "a//b"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, filter, topic string) {
		ferr := ValidateFilter(filter)
		nerr := ValidateName(topic)
		if ferr != nil || nerr != nil {
			return
		}
		m := Match(filter, topic)
		if m != Intersect(filter, topic) {
			t.Fatalf("Match(%q, %q) = %v but Intersect disagrees", filter, topic, m)
		}
		if m != Contains(filter, topic) {
			t.Fatalf("Match(%q, %q) = %v but Contains disagrees", filter, topic, m)
		}
		if !Contains(filter, filter) || !Intersect(filter, filter) {
			t.Fatalf("%q must contain and touch itself", filter)
		}
		var tab Table[int]
		if err := tab.Add(filter, 1); err != nil {
			t.Fatal(err)
		}
		if _, _, ok := tab.Lookup(topic); ok != m {
			t.Fatalf("table lookup of %q under %q = %v, Match = %v", topic, filter, ok, m)
		}
		// A second filter built from the topic: the topic with its last level
		// widened to +, and with a # appended. The table must pick the one Compare
		// ranks first among those that match.
		cands := []string{filter, topic, widen(topic), topic + "/#"}
		var all Table[string]
		best := ""
		for _, c := range cands {
			if ValidateFilter(c) != nil || all.Add(c, c) != nil {
				continue
			}
			if Match(c, topic) && (best == "" || Compare(c, best) > 0) {
				best = c
			}
		}
		if got, _, _ := all.Lookup(topic); got != best {
			t.Fatalf("table holds %q under %q, Compare says %q (candidates %q)", topic, got, best, cands)
		}
	})
}

func widen(topic string) string {
	if i := strings.LastIndexByte(topic, Separator); i >= 0 {
		return topic[:i+1] + "+"
	}
	return "+"
}

// FuzzExpand checks brace expansion: it never panics, never returns more than
// MaxExpansions filters, none of them carries a brace, and no two are equal.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{
		"iot/weather/+/{data,events}", "{a,b}/{c,d}", "a/{}", "a/{b,}", "a/{b/c}",
		"a/x{b}", "{a,b,c,d}/{a,b,c,d}/{a,b,c,d}/{a,b,c,d}/{a,b,c,d}/{a,b}", "{", "}", "{,}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, filter string) {
		out, err := Expand(filter)
		if err != nil {
			return
		}
		if len(out) == 0 || len(out) > MaxExpansions {
			t.Fatalf("Expand(%q) gave %d filters", filter, len(out))
		}
		seen := make(map[string]bool, len(out))
		for _, e := range out {
			if HasBraces(e) {
				t.Fatalf("Expand(%q) left a brace in %q", filter, e)
			}
			if Levels(e) != Levels(filter) {
				t.Fatalf("Expand(%q) changed the level count: %q", filter, e)
			}
			if seen[e] {
				t.Fatalf("Expand(%q) gave %q twice", filter, e)
			}
			seen[e] = true
		}
	})
}

// FuzzDeadLetter checks that a dead-lettered record's topic is always held by
// the derived dead-letter channel and never by its queue.
func FuzzDeadLetter(f *testing.F) {
	f.Add("jobs/#", "jobs/a/b")
	f.Add("iot/water/+/inspect", "iot/water/w-7/inspect")
	f.Add("a/+/#", "a/b")
	f.Fuzz(func(t *testing.T, queue, topic string) {
		if ValidateFilter(queue) != nil || ValidateName(topic) != nil || !Match(queue, topic) ||
			HasLevel(queue, DeadLetterLevel) || strings.HasPrefix(queue, "$") || queue[0] == '+' || queue[0] == '#' {
			return
		}
		dl := DeadLetterTopic(queue, topic)
		if Levels(dl) != Levels(topic)+1 {
			t.Fatalf("DeadLetterTopic(%q, %q) = %q is not one level deeper", queue, topic, dl)
		}
		var tab Table[string]
		_ = tab.Add(queue, "q")
		if err := tab.Add(DeadLetterFilter(queue), "dlq"); err != nil {
			t.Fatal(err)
		}
		if _, ch, _ := tab.Lookup(dl); ch != "dlq" {
			t.Fatalf("%q (dead letter of %q under %q) is held by %q", dl, topic, queue, ch)
		}
	})
}
