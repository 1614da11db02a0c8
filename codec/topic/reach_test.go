package topic

import (
	"slices"
	"testing"
)

func TestMeetIsTheFilterOfSharedTopics(t *testing.T) {
	cases := []struct{ a, b, want string }{
		{"iot/+/state/#", "iot/depot/#", "iot/depot/state/#"},
		{"a/+", "+/b", "a/b"},
		{"a/#", "a", "a"},
		{"#", "x/+/y", "x/+/y"},
		{"a/+/#", "a/b/c", "a/b/c"},
		{"a/b", "a/c", ""},
		{"#", "$SYS/x", ""},
	}
	for _, c := range cases {
		got, ok := Meet(c.a, c.b)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("Meet(%q, %q) = %q %v, want %q", c.a, c.b, got, ok, c.want)
		}
		for _, topic := range []string{"iot/depot/state/x", "a/b", "a", "a/b/c", "x/1/y", "$SYS/x"} {
			if ok && Match(got, topic) != (Match(c.a, topic) && Match(c.b, topic)) {
				t.Errorf("Meet(%q, %q) = %q disagrees on %q", c.a, c.b, got, topic)
			}
		}
	}
}

// exampleChannels is the channel set RFC 0002 "Where a topic lands" runs its
// example against: events, state, presence and a jobs queue with its derived
// dead-letter channel.
func exampleTable(t *testing.T) *Table[string] {
	t.Helper()
	var tab Table[string]
	for _, c := range [][2]string{
		{"events", "iot/+/events/+"},
		{"state", "iot/+/state/+"},
		{"presence", "iot/+/presence/+"},
		{"jobs", "iot/+/work/+"},
		{"jobs__dlq", DeadLetterFilter("iot/+/work/+")},
	} {
		if err := tab.Add(c[1], c[0]); err != nil {
			t.Fatal(err)
		}
	}
	return &tab
}

func reached(tab *Table[string], filter string) (names []string, inside string) {
	tab.Reach(filter, func(_ string, v string, in bool) {
		names = append(names, v)
		if in {
			inside = v
		}
	})
	slices.Sort(names)
	return names, inside
}

func TestReachServesEveryChannelAFilterTouches(t *testing.T) {
	tab := exampleTable(t)
	names, inside := reached(tab, "iot/depot/#")
	if want := []string{"events", "jobs", "jobs__dlq", "presence", "state"}; !slices.Equal(names, want) || inside != "" {
		t.Errorf("iot/depot/# reaches %v (inside %q), want %v", names, inside, want)
	}
	names, _ = reached(tab, "iot/depot/state/device-1")
	if !slices.Equal(names, []string{"state"}) {
		t.Errorf("a state topic reaches %v", names)
	}
}

func TestReachLeavesOutAChannelWhoseSharedTopicsAMoreExactFilterHolds(t *testing.T) {
	var tab Table[string]
	_ = tab.Add("iot/water/+/location/#", "water-location")
	_ = tab.Add("iot/water/+/+/#", "water-measurement")
	names, inside := reached(&tab, "iot/water/w-7/location")
	if !slices.Equal(names, []string{"water-location"}) || inside != "water-location" {
		t.Errorf("reaches %v inside %q", names, inside)
	}
	names, _ = reached(&tab, "iot/water/w-7/#")
	if !slices.Equal(names, []string{"water-location", "water-measurement"}) {
		t.Errorf("reaches %v", names)
	}
}

func TestPlainFilterLyingInsideAQueueIsWithinIt(t *testing.T) {
	// RFC 0002 "queue": with a queue named inspections filtered iot/water/+/inspect.
	var tab Table[string]
	_ = tab.Add("iot/water/+/inspect", "inspections")
	_ = tab.Add(DeadLetterFilter("iot/water/+/inspect"), "inspections__dlq")
	for filter, want := range map[string]string{
		"iot/water/+/inspect":       "inspections",
		"iot/water/w-7/inspect":     "inspections",
		"iot/#":                     "",
		"#":                         "",
		"iot/water/+/inspect/__dlq": "inspections__dlq",
	} {
		_, got, _ := tab.Within(filter)
		if got != want {
			t.Errorf("Within(%q) = %q, want %q", filter, got, want)
		}
	}
}

func TestDeadLetterReaderIsNotInsideAQueueEndingInHash(t *testing.T) {
	var tab Table[string]
	_ = tab.Add("jobs/#", "jobs")
	_ = tab.Add(DeadLetterFilter("jobs/#"), "jobs__dlq")
	if _, v, _ := tab.Within("jobs/__dlq/#"); v != "jobs__dlq" {
		t.Errorf("jobs/__dlq/# within %q", v)
	}
	if _, v, _ := tab.Within("jobs/+/#"); v != "" {
		t.Errorf("jobs/+/# crosses the dead-letter channel, yet is within %q", v)
	}
	if _, v, _ := tab.Within("jobs/orders/#"); v != "jobs" {
		t.Errorf("jobs/orders/# within %q", v)
	}
}
