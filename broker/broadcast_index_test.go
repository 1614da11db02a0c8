package broker

import (
	"sort"
	"testing"
)

func matchIDs(x *index, topic string) []string {
	var ids []string
	x.match([]byte(topic), func(s *session, _ subscription) { ids = append(ids, s.id) })
	sort.Strings(ids)
	return ids
}

func TestIndexMatchesWhatMQTTSaysAFilterMatches(t *testing.T) {
	var x index
	filters := map[string]string{
		"exact":    "a/b/c",
		"plus":     "a/+/c",
		"hash":     "a/#",
		"all":      "#",
		"plusall":  "+/#",
		"empty":    "a//c",
		"dollar":   "$SYS/x",
		"dollarpl": "$SYS/+",
	}
	for id, f := range filters {
		x.add(f, &session{id: id}, subscription{})
	}
	for _, tc := range []struct {
		topic string
		want  []string
	}{
		{"a/b/c", []string{"all", "exact", "hash", "plus", "plusall"}},
		{"a", []string{"all", "hash", "plusall"}}, // # stands for nothing too
		{"a//c", []string{"all", "empty", "hash", "plus", "plusall"}},
		{"b", []string{"all", "plusall"}},
		{"$SYS/x", []string{"dollar", "dollarpl"}}, // no wildcard first level reaches $
	} {
		if got := matchIDs(&x, tc.topic); !equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.topic, got, tc.want)
		}
	}
}

func TestIndexRemovePrunesAndStopsMatching(t *testing.T) {
	var x index
	s := &session{id: "s"}
	x.add("a/+/c", s, subscription{})
	x.remove("a/+/c", s)
	if got := matchIDs(&x, "a/b/c"); len(got) != 0 {
		t.Fatalf("still matched: %v", got)
	}
	if len(x.root.children) != 0 {
		t.Fatal("empty nodes left behind")
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func BenchmarkIndexMatch(b *testing.B) {
	var x index
	for i := 0; i < 1000; i++ {
		x.add("site/"+string(rune('a'+i%26))+"/dev/+/temp", &session{id: "s"}, subscription{})
	}
	x.add("site/#", &session{id: "all"}, subscription{})
	topic := []byte("site/c/dev/17/temp")
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		x.match(topic, func(*session, subscription) { n++ })
	}
}
