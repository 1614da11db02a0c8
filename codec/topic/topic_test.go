package topic

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestTopicNameRefusesWildcardsNulAndEmpty(t *testing.T) {
	cases := []struct {
		name string
		want error
	}{
		{"a/b", nil},
		{"/", nil},
		{"a//b", nil},
		{"$SYS/x", nil},
		{"", ErrEmpty},
		{"a/+/b", ErrWildcardInName},
		{"a/#", ErrWildcardInName},
		{"a+b", ErrWildcardInName},
		{"a\x00b", ErrNul},
	}
	for _, c := range cases {
		if got := ValidateName(c.name); !errors.Is(got, c.want) {
			t.Errorf("ValidateName(%q) = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestFilterWildcardsTakeWholeLevelsAndHashIsLast(t *testing.T) {
	cases := []struct {
		filter string
		want   error
	}{
		{"#", nil},
		{"+", nil},
		{"+/+", nil},
		{"a/+/b/#", nil},
		{"/#", nil},
		{"a//+", nil},
		{"", ErrEmpty},
		{"a/b+", ErrPlusNotLevel},
		{"a+/b", ErrPlusNotLevel},
		{"fleet/a+b/#", ErrPlusNotLevel},
		{"a/#b", ErrHashNotLevel},
		{"a#", ErrHashNotLevel},
		{"a/#/b", ErrHashNotLast},
		{"#/", ErrHashNotLast},
		{"a/\x00", ErrNul},
	}
	for _, c := range cases {
		if got := ValidateFilter(c.filter); !errors.Is(got, c.want) {
			t.Errorf("ValidateFilter(%q) = %v, want %v", c.filter, got, c.want)
		}
	}
}

func TestLevelsCountsOneMoreThanSeparators(t *testing.T) {
	for s, want := range map[string]int{"a": 1, "a/b": 2, "a/": 2, "/": 2, "//": 3, "iot/+/events/#": 4} {
		if got := Levels(s); got != want {
			t.Errorf("Levels(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestSharedSubscriptionShape(t *testing.T) {
	cases := []struct {
		in, group, filter string
		ok, bad           bool
	}{
		{"events/#", "", "", false, false},
		{"$SHARE/g/a", "", "", false, false},
		{"$share/g/a/#", "g", "a/#", true, false},
		{"$share/g/#", "g", "#", true, false},
		{"$share/g", "", "", true, true},
		{"$share//a", "", "", true, true},
		{"$share/g+/a", "", "", true, true},
		{"$share/g/", "", "", true, true},
		{"$share/g/a/#/b", "", "", true, true},
		{"$share/g/$SHARE/h/x", "", "", true, true},
	}
	for _, c := range cases {
		g, f, ok, err := SplitShared(c.in)
		if ok != c.ok || (err != nil) != c.bad || g != c.group || f != c.filter {
			t.Errorf("SplitShared(%q) = %q %q %v %v", c.in, g, f, ok, err)
		}
	}
}

func TestMatchIsMQTTMatching(t *testing.T) {
	cases := []struct {
		filter, topic string
		want          bool
	}{
		{"a/b", "a/b", true},
		{"a/b", "a/b/c", false},
		{"a/b", "a", false},
		{"a/+", "a/b", true},
		{"a/+", "a/", true},
		{"a/+", "a", false},
		{"a/+", "a/b/c", false},
		{"a/#", "a", true},
		{"a/#", "a/b/c", true},
		{"a/#", "ab", false},
		{"#", "a/b", true},
		{"#", "/", true},
		{"+/+", "/", true},
		{"/+", "/x", true},
		{"+", "a/b", false},
		// MQTT-4.7.2-1: a leading wildcard does not reach a $ topic.
		{"#", "$SYS/x", false},
		{"+/x", "$SYS/x", false},
		{"$SYS/#", "$SYS/x", true},
		{"$SYS/+", "$SYS/x", true},
		{"a/+/#", "a/$x/y", true},
		// The three lines at the top of RFC 0002 "The topic space".
		{"iot/water/+/location/#", "iot/water/w-7/location", true},
		{"iot/water/+/+/#", "iot/water/w-7/flow/raw", true},
		{"iot/weather/+/data", "iot/weather/st-3/data/raw", false},
	}
	for _, c := range cases {
		if got := Match(c.filter, c.topic); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.filter, c.topic, got, c.want)
		}
	}
}

// topicSpace is the configuration at the top of RFC 0002 "The topic space".
var topicSpace = map[string]string{
	"water-location":      "iot/water/+/location/#",
	"water-measurement":   "iot/water/+/+/#",
	"weather-measurement": "iot/weather/+/{data,events}",
}

func buildTable(t testing.TB, channels map[string]string) *Table[string] {
	t.Helper()
	var tab Table[string]
	for name, f := range channels {
		exp, err := Expand(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range exp {
			if err := tab.Add(e, name); err != nil {
				t.Fatal(err)
			}
		}
	}
	return &tab
}

func TestTopicSpaceTable(t *testing.T) {
	tab := buildTable(t, topicSpace)
	cases := []struct{ topic, channel, filter string }{
		{"iot/water/w-7/location", "water-location", "iot/water/+/location/#"},
		{"iot/water/w-7/location/gps", "water-location", "iot/water/+/location/#"},
		{"iot/water/w-7/flow", "water-measurement", "iot/water/+/+/#"},
		{"iot/water/w-7/flow/raw", "water-measurement", "iot/water/+/+/#"},
		{"iot/weather/st-3/data", "weather-measurement", "iot/weather/+/data"},
		{"iot/weather/st-3/data/raw", "", ""},
		{"iot/weather/st-3/status", "", ""},
	}
	for _, c := range cases {
		f, ch, ok := tab.Lookup(c.topic)
		if ch != c.channel || f != c.filter || ok != (c.channel != "") {
			t.Errorf("Lookup(%q) = %q %q %v, want %q %q", c.topic, f, ch, ok, c.filter, c.channel)
		}
	}
}

func TestMostExactFilterHoldsTheTopic(t *testing.T) {
	// Each pair: the first filter beats the second for a topic both match.
	cases := []struct{ winner, loser, topic string }{
		{"iot/water/+/location/#", "iot/water/+/+/#", "iot/water/w-7/location"}, // spelled-out beats +
		{"a/b", "a/+", "a/b"},
		{"a/b", "a/#", "a/b"},       // spelled-out beats #
		{"a/+", "a/#", "a/b"},       // + beats #
		{"a", "a/#", "a"},           // a filter that ends here beats one continuing with #
		{"a/b/#", "a/+/c", "a/b/c"}, // the first differing level decides, not the later ones
		{"jobs/__dlq/#", "jobs/#", "jobs/__dlq/x"},
	}
	for _, c := range cases {
		if !Match(c.winner, c.topic) || !Match(c.loser, c.topic) {
			t.Fatalf("%q and %q must both match %q", c.winner, c.loser, c.topic)
		}
		if Compare(c.winner, c.loser) <= 0 || Compare(c.loser, c.winner) >= 0 {
			t.Errorf("Compare(%q, %q) = %d, want the first to win", c.winner, c.loser, Compare(c.winner, c.loser))
		}
		for _, order := range [][2]string{{c.winner, c.loser}, {c.loser, c.winner}} {
			var tab Table[int]
			for i, f := range order {
				if err := tab.Add(f, i); err != nil {
					t.Fatal(err)
				}
			}
			if f, _, _ := tab.Lookup(c.topic); f != c.winner {
				t.Errorf("table %v holds %q under %q, want %q", order, c.topic, f, c.winner)
			}
		}
	}
}

func TestCompareIsZeroOnlyForTheSameFilter(t *testing.T) {
	if Compare("a/+/#", "a/+/#") != 0 {
		t.Error("a filter against itself is a tie")
	}
	if Compare("a/b", "a/c") == 0 || Compare("a", "a/b") == 0 {
		t.Error("different filters are never a tie")
	}
}

func TestTableRefusesTheSameFilterTwice(t *testing.T) {
	var tab Table[string]
	if err := tab.Add("a/+", "x"); err != nil {
		t.Fatal(err)
	}
	if err := tab.Add("a/+", "y"); err == nil {
		t.Error("two values under one filter must be refused")
	}
	if err := tab.Add("a/#/b", "y"); err == nil {
		t.Error("an invalid filter must be refused")
	}
	if tab.Len() != 1 {
		t.Errorf("Len = %d", tab.Len())
	}
}

func TestTableLeadingWildcardDoesNotTakeDollarTopics(t *testing.T) {
	var tab Table[string]
	for _, f := range []string{"#", "+/x"} {
		if err := tab.Add(f, f); err != nil {
			t.Fatal(err)
		}
	}
	if f, _, ok := tab.Lookup("$SYS/x"); ok {
		t.Errorf("$SYS/x held by %q", f)
	}
	if f, _, _ := tab.Lookup("a/x"); f != "+/x" {
		t.Errorf("a/x held by %q", f)
	}
}

func TestWhatAFilterReaches(t *testing.T) {
	// RFC 0002 "What a filter reaches", against the channels of "The topic space".
	cases := []struct {
		filter string
		want   []string
	}{
		{"iot/water/w-7/location", []string{"water-location", "water-measurement"}},
		{"iot/water/+/location/#", []string{"water-location", "water-measurement"}},
		{"iot/water/w-7/#", []string{"water-location", "water-measurement"}},
		{"iot/weather/st-3/data/raw", nil},
		{"#", []string{"water-location", "water-measurement", "weather-measurement"}},
		{"$SYS/#", nil},
		{"iot/+/+/data", []string{"water-measurement", "weather-measurement"}},
	}
	for _, c := range cases {
		var got []string
		for name, f := range topicSpace {
			exp, _ := Expand(f)
			for _, e := range exp {
				if Intersect(c.filter, e) && Intersect(e, c.filter) && !slices.Contains(got, name) {
					got = append(got, name)
				}
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%q touches %v, want %v", c.filter, got, c.want)
		}
	}
}

func TestIntersectNeedsACommonTopic(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"a/b", "a/b", true},
		{"a/b", "a/c", false},
		{"a/+", "+/b", true},
		{"a", "a/#", true},
		{"a/b/c", "a/#", true},
		{"a/+", "a", false},
		{"a/+/c", "a/b", false},
		{"#", "$SYS/x", false},
		{"+/#", "$SYS/#", false},
		{"#", "+", true},
		{"$SYS/#", "$SYS/+", true},
	}
	for _, c := range cases {
		if got := Intersect(c.a, c.b); got != c.want {
			t.Errorf("Intersect(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := Intersect(c.b, c.a); got != c.want {
			t.Errorf("Intersect(%q, %q) = %v, want %v", c.b, c.a, got, c.want)
		}
	}
}

func TestFilterLyingInsideAQueue(t *testing.T) {
	// RFC 0002 "queue": with a queue filtered iot/water/+/inspect.
	cases := []struct {
		outer, inner string
		want         bool
	}{
		{"iot/water/+/inspect", "iot/water/+/inspect", true},
		{"iot/water/+/inspect", "iot/water/w-7/inspect", true},
		{"iot/water/+/inspect", "iot/#", false}, // merely crosses the queue
		{"iot/water/+/inspect", "#", false},
		{"iot/water/+/inspect", "iot/water/+/+", false},
		{"jobs/#", "jobs/__dlq/#", true},
		{"jobs/#", "jobs", true},
		{"a/#", "a/+/#", true},
		{"a/+/#", "a/#", false},
		{"a/+", "a/#", false},
		{"a/+/#", "a/b", true}, // # matches no level as well
		{"a/+/#", "a", false},
		{"a/#", "a", true},
		{"#", "$SYS/x", false},
		{"+/x", "$SYS/x", false},
		{"$SYS/#", "$SYS/x", true},
	}
	for _, c := range cases {
		if got := Contains(c.outer, c.inner); got != c.want {
			t.Errorf("Contains(%q, %q) = %v, want %v", c.outer, c.inner, got, c.want)
		}
	}
}

func TestBraceExpansion(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"iot/weather/+/{data,events}", []string{"iot/weather/+/data", "iot/weather/+/events"}},
		{"{a,b}/{c,d}", []string{"a/c", "a/d", "b/c", "b/d"}},
		{"iot/+/+/{state,location}", []string{"iot/+/+/state", "iot/+/+/location"}},
		{"a/{b}/#", []string{"a/b/#"}},
		{"plain/#", []string{"plain/#"}},
	}
	for _, c := range cases {
		got, err := Expand(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Expand(%q) = %v %v, want %v", c.in, got, err, c.want)
		}
	}
}

func TestBraceRefusals(t *testing.T) {
	cases := map[string]string{
		"a/{}":                                "empty brace",
		"a/{b,}":                              "empty alternative",
		"a/{,b}":                              "empty alternative",
		"a/{b/c,d}":                           "hold a /",
		"a/x{b,c}":                            "whole level",
		"a/{b,c}x":                            "whole level",
		"a/{b,c":                              "whole level",
		"a/b}":                                "whole level",
		"a/{b,{c}}":                           "do not nest",
		"a/{{b,c}}":                           "do not nest",
		"a/{+,b}":                             "wildcard",
		"a/{#,b}":                             "wildcard",
		"a/{b,b}":                             "written twice",
		strings.Repeat("{a,b,c,d}/", 6) + "x": "more than",
	}
	for in, want := range cases {
		_, err := Expand(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Expand(%q) = %v, want an error saying %q", in, err, want)
		}
	}
}

func TestDeadLetterDerivation(t *testing.T) {
	// RFC 0002 "The dead-letter channel".
	filters := map[string]string{
		"iot/water/+/inspect":   "iot/water/+/inspect/__dlq",
		"iot/water/+/+":         "iot/water/+/+/__dlq",
		"iot/water/+/inspect/#": "iot/water/+/inspect/__dlq/#",
		"jobs/#":                "jobs/__dlq/#",
	}
	for q, want := range filters {
		if got := DeadLetterFilter(q); got != want {
			t.Errorf("DeadLetterFilter(%q) = %q, want %q", q, got, want)
		}
	}
	topics := []struct{ filter, topic, want string }{
		{"iot/water/+/inspect", "iot/water/w-7/inspect", "iot/water/w-7/inspect/__dlq"},
		{"iot/water/+/+", "iot/water/w-7/x", "iot/water/w-7/x/__dlq"},
		{"iot/water/+/inspect/#", "iot/water/w-7/inspect/a/b", "iot/water/w-7/inspect/__dlq/a/b"},
		{"iot/water/+/inspect/#", "iot/water/w-7/inspect", "iot/water/w-7/inspect/__dlq"},
		{"jobs/#", "jobs/orders/123", "jobs/__dlq/orders/123"},
		{"jobs/#", "jobs/", "jobs/__dlq/"},
	}
	for _, c := range topics {
		got := DeadLetterTopic(c.filter, c.topic)
		if got != c.want {
			t.Errorf("DeadLetterTopic(%q, %q) = %q, want %q", c.filter, c.topic, got, c.want)
		}
		if !Match(DeadLetterFilter(c.filter), got) {
			t.Errorf("%q is not matched by the dead-letter filter %q", got, DeadLetterFilter(c.filter))
		}
	}
	if DeadLetterName("jobs") != "jobs__dlq" {
		t.Error(DeadLetterName("jobs"))
	}
}

func TestDeadLetterFilterIsMoreExactThanItsQueue(t *testing.T) {
	var tab Table[string]
	q := "jobs/#"
	_ = tab.Add(q, "jobs")
	_ = tab.Add(DeadLetterFilter(q), "jobs__dlq")
	if _, ch, _ := tab.Lookup(DeadLetterTopic(q, "jobs/a")); ch != "jobs__dlq" {
		t.Errorf("dead letter held by %q", ch)
	}
	if _, ch, _ := tab.Lookup("jobs/a"); ch != "jobs" {
		t.Errorf("job held by %q", ch)
	}
}

func TestHasLevelFindsReservedDeadLetterLevel(t *testing.T) {
	if !HasLevel("a/__dlq/#", DeadLetterLevel) || !HasLevel("__dlq", DeadLetterLevel) || HasLevel("a/x__dlq", DeadLetterLevel) {
		t.Error("HasLevel")
	}
}
