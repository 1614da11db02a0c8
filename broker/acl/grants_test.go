package acl

import (
	"fmt"
	"strings"
	"testing"
)

const semantics = `
roles:
  base:
    - topic: "#"
      allow: [read]
  device:
    - channel: events
      filter: iot/+/events/%u
      allow: [write]
    - topic: iot/%u/health/%c
      allow: [write, read]
  reader:
    - channel: events
      allow: [read, seek]
    - channel: state
      allow: [read]
    - channel: jobs
      allow: [consume]
  braced:
    - topic: "{s1,s9}/%u"
      allow: [write]
  oncall:
    - broker: sessions
      allow: [disconnect]
    - topic: "#"
      allow: [write, read]
  sensor:
    - topic: s/#
      allow: [write]
    - broker: features
      deny: [will, qos2]
  quiet:
    - broker: features
      deny: [persistent]
users:
  "*": [base]
  "device-*": [device]
  device-7:
    roles: [device, sensor]
    client_ids: ["%u", "dev7-*"]
  dashboard: [reader]
  braces: [braced]
  oncall: [oncall]
  sensor-1: [sensor, quiet]
`

func TestMostLiteralPatternSuppliesTheWholeEntry(t *testing.T) {
	a := mustParse(t, semantics)
	for _, tc := range []struct{ user, pattern string }{
		{"device-7", "device-7"}, {"device-8", "device-*"}, {"x", "*"}, {"", "*"},
	} {
		if e, _ := a.Applies(tc.user); e == nil || e.Pattern != tc.pattern {
			t.Errorf("%q: entry %+v, want %q", tc.user, e, tc.pattern)
		}
	}
	// A narrow entry takes away: device-8 does not get * 's base.
	if a.Grants("device-8", "c").Allows("", "any/topic", Read) {
		t.Error("device-8 inherited * 's grant")
	}
	if !a.Grants("x", "c").Allows("", "any/topic", Read) {
		t.Error("x lacks * 's grant")
	}
}

func TestPercentUAndPercentCSubstituted(t *testing.T) {
	a := mustParse(t, semantics)
	g := a.Grants("device-8", "node-1")
	if !g.Allows("events", "iot/depot/events/device-8", Write) {
		t.Error("user not substituted in filter:")
	}
	if g.Allows("events", "iot/depot/events/device-9", Write) || g.Allows("events", "iot/depot/events/device-8", Read) {
		t.Error("grant wider than the rule")
	}
	if !g.Allows("", "iot/device-8/health/node-1", Write) || g.Allows("", "iot/device-8/health/node-2", Write) {
		t.Error("client id not substituted in topic:")
	}
	if g.Allows("", "iot/device-8/health/node-1", Write) && g.Allows("events", "iot/device-8/health/node-1", Write) {
		t.Error("a topic rule answered for a channel")
	}
}

func TestANameHoldingWildcardOrSlashWithholdsTheRule(t *testing.T) {
	a := mustParse(t, semantics)
	for _, id := range []string{"#", "a/b", "x+", ""} {
		g := a.Grants("device-8", id)
		if g.Allows("", "iot/device-8/health/"+id, Write) {
			t.Errorf("client id %q granted through %%c", id)
		}
		if len(g.Withheld) != 1 || !strings.Contains(g.Withheld[0].Rule.Filter, "%c") {
			t.Errorf("client id %q: withheld %+v", id, g.Withheld)
		}
		// Its other rules still apply.
		if !g.Allows("events", "iot/x/events/device-8", Write) {
			t.Errorf("client id %q took the other rules with it", id)
		}
	}
}

func TestBracesExpandBeforeSubstitution(t *testing.T) {
	a := mustParse(t, semantics)
	g := a.Grants("braces", "c")
	if len(g.List) != 2 || !g.Allows("", "s1/braces", Write) || !g.Allows("", "s9/braces", Write) {
		t.Errorf("grants %+v", g.List)
	}
	// A user calling itself {s1,s9} is put in as written: one level.
	if g := a.Grants("{a,b}", "c"); g.Allows("", "s1/a", Write) {
		t.Error("a braced name expanded")
	}
}

func TestSubscriptionGrantedWholeOrRefused(t *testing.T) {
	a := mustParse(t, semantics)
	dash := a.Grants("dashboard", "c")
	for _, tc := range []struct {
		filter string
		want   bool
	}{
		{"iot/+/events/+", true},      // inside events
		{"iot/depot/events/+", true},  // inside events
		{"iot/depot/events/#", false}, // iot/depot/events itself is broadcast
		{"iot/+/state/x", true},       // inside state
		{"iot/+/presence/+", false},   // no grant on presence
		{"iot/#", false},              // touches presence, and broadcast with no topic rule
		{"a/b", false},                // broadcast, no topic rule
	} {
		if got := dash.AllowsFilter(tc.filter, Read); got != tc.want {
			t.Errorf("dashboard subscribing %s: %v, want %v", tc.filter, got, tc.want)
		}
	}
	on := a.Grants("oncall", "c")
	// topic: "#" does not reach into channels: iot/# needs read on each.
	if on.AllowsFilter("iot/#", Read) || !on.AllowsFilter("a/#", Read) {
		t.Error("a topic rule reached a channel, or did not cover broadcast")
	}
	dev := a.Grants("device-8", "c")
	if dev.AllowsFilter("iot/+/events/device-8", Read) {
		t.Error("write granted read")
	}
}

func TestDisconnectOnlyFromBrokerSessions(t *testing.T) {
	a := mustParse(t, semantics)
	if !a.Grants("oncall", "c").MayHangUp() {
		t.Error("oncall cannot hang up")
	}
	if a.Grants("x", "c").MayHangUp() {
		t.Error("topic # read hangs up")
	}
	var none *Grants
	if !none.MayHangUp() || !none.Allows("events", "t", Write) || !none.AllowsFilter("#", Read) {
		t.Error("no acl_file must allow everything")
	}
}

func TestAnyRoleDenyingAFeatureDeniesIt(t *testing.T) {
	a := mustParse(t, semantics)
	g := a.Grants("sensor-1", "c")
	for _, f := range []Feature{Will, QoS2, Persistent} {
		if !g.Denied(f) {
			t.Errorf("%v not denied", f.Names())
		}
	}
	if g.Denied(Share) || g.Denied(Retained) {
		t.Error("a feature no role denies is denied")
	}
}

func TestClientIDsOnlyRefuse(t *testing.T) {
	a := mustParse(t, semantics)
	for _, tc := range []struct {
		id   string
		want bool
	}{{"device-7", true}, {"dev7-a", true}, {"device-8", false}} {
		if got := a.Grants("device-7", tc.id).ClientIDAllowed; got != tc.want {
			t.Errorf("client id %q: %v", tc.id, got)
		}
	}
	if !a.Grants("device-8", "anything").ClientIDAllowed {
		t.Error("absent client_ids refused")
	}
}

// BenchmarkAllows is the per-delivery check: a 50-rule file, the client's
// entry carrying a handful of them.
func BenchmarkAllows(b *testing.B) {
	var src strings.Builder
	src.WriteString("roles:\n")
	for i := 0; i < 48; i++ {
		fmt.Fprintf(&src, "  r%d:\n    - topic: fleet/%d/#\n      allow: [read]\n", i, i)
	}
	src.WriteString("  dev:\n    - topic: iot/%u/health/#\n      allow: [read]\n    - topic: alerts/+/page\n      allow: [read]\n")
	src.WriteString("users:\n  \"device-*\": [r1, r2, r3, dev]\n")
	for i := 4; i < 48; i++ {
		fmt.Fprintf(&src, "  u%d: [r%d]\n", i, i)
	}
	a, err := Parse("/b", []byte(src.String()), Options{Channels: demoChannels})
	if err != nil {
		b.Fatal(err)
	}
	g := a.Grants("device-7", "c")
	b.ReportAllocs()
	for b.Loop() {
		if !g.Allows("", "alerts/hq/page", Read) {
			b.Fatal("refused")
		}
	}
}

// AllowsMemo answers as Allows does, for clients of one entry and of
// several, with and without personal (%u) rules.
func TestAllowsMemoAnswersAsAllows(t *testing.T) {
	a := mustParse(t, semantics)
	for _, topic := range []string{"iot/device-8/health/c1", "any/topic", "iot/x/events/device-8", "iot/device-9/health/c1"} {
		for _, v := range []Verb{Read, Write} {
			var m Memo // one fan-out: one topic, one verb
			for _, u := range []string{"device-8", "device-9", "x", "device-8", "dashboard", "device-9", "oncall", "x", "sensor-1", "braces"} {
				g := a.Grants(u, "c1")
				if got, want := g.AllowsMemo(&m, "", topic, v), g.Allows("", topic, v); got != want {
					t.Errorf("%s %s %v: memo %v, Allows %v", u, topic, v.Names(), got, want)
				}
			}
		}
	}
}

// A rule's filter ending /# grants the level above it too, as MQTT's
// matching does (a/# matches a): the quick prefix test must not refuse it.
func TestATrailingHashRuleGrantsItsParentLevel(t *testing.T) {
	a := mustParse(t, "roles:\n  r:\n    - topic: TopicA/#\n      allow: [write]\n    - topic: s/+/x\n      allow: [write]\nusers:\n  \"*\": [r]\n")
	g := a.Grants("", "c")
	for topic, want := range map[string]bool{"TopicA": true, "TopicA/B": true, "TopicAB": false, "Topic": false, "s//x": true, "s/x": false} {
		if got := g.Allows("", topic, Write); got != want {
			t.Errorf("write on %q: %v, want %v", topic, got, want)
		}
	}
}
