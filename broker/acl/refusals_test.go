package acl

import (
	"strings"
	"testing"
)

// Every load-time refusal of RFC 0002's acl_file rules, each naming the line
// and saying what to do (checklist-operations B.2, B.3).
func TestLoadRefusals(t *testing.T) {
	const base = "roles:\n  r:\n    - topic: a/#\n      allow: [write]\n"
	for _, tc := range []struct {
		name, src string
		line      int
		says      string
	}{
		{"AClientsBlockIsRefusedSayingUsers", base + "clients:\n  a: [r]\n", 5, "write users:"},
		{"AnEntryWithNoRolesIsRefused", base + "users:\n  a:\n    limits: {publish_rate: 5}\n", 6, "no roles:"},
		{"AnEmptyRolesListIsRefused", base + "users:\n  a: []\n", 6, "empty"},
		{"AnUndefinedRoleIsRefused", base + "users:\n  a: [nope]\n", 6, `role "nope"`},
		{"ReadOnAQueueIsRefusedSayingItCannotBeWatched", "roles:\n  r:\n    - channel: jobs\n      allow: [read]\n", 4, "gauge on the metrics listener"},
		{"AVerbNotInTheTableIsRefused", "roles:\n  r:\n    - channel: events\n      allow: [delete]\n", 4, "write, read, seek"},
		{"ConsumeOnATopicIsRefused", "roles:\n  r:\n    - topic: a/#\n      allow: [consume]\n", 4, "write, read"},
		{"DisconnectOnTopicHashIsRefused", "roles:\n  r:\n    - topic: \"#\"\n      allow: [disconnect]\n", 4, "not a verb"},
		{"DenyOffFeaturesIsRefused", "roles:\n  r:\n    - topic: a/#\n      deny: [will]\n", 4, "only on a broker: features"},
		{"AllowOnFeaturesIsRefused", "roles:\n  r:\n    - broker: features\n      allow: [will]\n", 4, "deny: and nothing else"},
		{"AnUnknownFeatureIsRefused", "roles:\n  r:\n    - broker: features\n      deny: [wills]\n", 4, "not a feature"},
		{"RetainIsRefusedByNameSayingRetained", "roles:\n  r:\n    - broker: features\n      deny: [retain]\n", 4, "the feature is retained"},
		{"AFeatureWrittenTwiceIsRefused", "roles:\n  r:\n    - broker: features\n      deny: [will, will]\n", 4, "twice"},
		{"AChannelHoldingPercentIsRefusedSayingSo", "roles:\n  r:\n    - channel: ev-%u\n      allow: [read]\n", 3, "holds %"},
		{"AnUnconfiguredChannelIsRefused", "roles:\n  r:\n    - channel: nope\n      allow: [read]\n", 3, "channel nope is not configured"},
		{"AFilterMatchingNoneOfItsChannelIsRefusedNamingBoth", "roles:\n  r:\n    - channel: events\n      filter: iot/+/state/+\n      allow: [read]\n", 4, "filter iot/+/state/+ matches none of channel events's topics, whose filter is iot/+/events/+"},
		{"AHashInTheMiddleIsRefused", "roles:\n  r:\n    - topic: alerts/#/page\n      allow: [read]\n", 3, "last level"},
		{"APlusInsideALevelIsRefused", "roles:\n  r:\n    - topic: alerts/a+\n      allow: [read]\n", 3, "whole level"},
		{"AChannelRuleFilterStartingWithAWildcardIsRefused", "roles:\n  r:\n    - channel: events\n      filter: +/x/events/y\n      allow: [read]\n", 4, "first level"},
		{"ATopicRuleInsideAChannelIsRefusedNamingBoth", "roles:\n  r:\n    - topic: iot/hq/events/+\n      allow: [read]\n", 3, "topic iot/hq/events/+ is inside channel events, whose filter is iot/+/events/+; write it as a channel rule"},
		{"ATopicRuleWithPercentUInsideAChannelIsRefused", "roles:\n  r:\n    - topic: iot/%u/events/+\n      allow: [read]\n", 3, "inside channel events"},
		{"ARuleDeeperThanMaxTopicLevelsIsRefused", "roles:\n  r:\n    - topic: a/b/c/d/e/f/g/h/i\n      allow: [read]\n", 3, "max_topic_levels"},
		{"ARuleNamingTwoKindsIsRefused", "roles:\n  r:\n    - topic: a\n      channel: events\n      allow: [read]\n", 3, "exactly one"},
		{"FilterOnATopicRuleIsRefused", "roles:\n  r:\n    - topic: a\n      filter: a\n      allow: [read]\n", 4, "narrows a channel rule"},
		{"AZeroPublishRateIsRefused", base + "users:\n  a:\n    roles: [r]\n    limits: {publish_rate: 0}\n", 8, "publish_rate 0"},
		{"AZeroPublishBytesIsRefused", base + "users:\n  a:\n    roles: [r]\n    limits:\n      publish_bytes: 0\n", 9, "publish_bytes 0"},
		{"AnAmbiguousSizeIsRefused", base + "users:\n  a:\n    roles: [r]\n    limits:\n      publish_bytes: 64KB\n", 9, "not a size"},
		{"AnEmptyClientIDsListIsRefused", base + "users:\n  a:\n    roles: [r]\n    client_ids: []\n", 8, "admits no client id"},
		{"AClientIDsKeyWithNothingUnderItIsRefused", base + "users:\n  a:\n    roles: [r]\n    client_ids:\n", 8, "admits no client id"},
		{"EqualLiteralOverlappingPatternsAreRefusedNamingBoth", base + "users:\n  \"device-*\": [r]\n  \"*-device\": [r]\n", 7, `"device-*" (line 6) and "*-device" (line 7)`},
		{"AnUnknownEntryKeyIsRefused", base + "users:\n  a:\n    roles: [r]\n    grants: x\n", 8, "not a key"},
		{"AnUnknownTopLevelBlockIsRefused", base + "groups: {}\n", 5, "not a block"},
		{"AnEmptyAllowIsRefused", "roles:\n  r:\n    - topic: a\n      allow: []\n", 4, "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("/etc/saguin/acl.yaml", []byte(tc.src), Options{Channels: demoChannels, MaxTopicLevels: 8})
			if err == nil {
				t.Fatalf("accepted:\n%s", tc.src)
			}
			es, ok := err.(Errors)
			if !ok {
				t.Fatalf("error %T %v", err, err)
			}
			found := false
			for _, e := range es {
				if e.Line == tc.line && strings.Contains(e.Msg, tc.says) && strings.HasPrefix(e.Error(), "/etc/saguin/acl.yaml:") {
					found = true
				}
			}
			if !found {
				t.Errorf("want line %d saying %q, got:\n%v", tc.line, tc.says, err)
			}
		})
	}
}

// Crossing rules are accepted: # and +/telemetry are how an operator says
// "any broadcast topic".
func TestCrossingTopicRulesAreAccepted(t *testing.T) {
	mustParse(t, "roles:\n  r:\n    - topic: \"#\"\n      allow: [read]\n    - topic: +/telemetry\n      allow: [read]\n    - topic: iot/#\n      allow: [read]\n")
}

func TestUnequalOrDisjointPatternsAreAccepted(t *testing.T) {
	mustParse(t, "roles:\n  r:\n    - topic: a\n      allow: [read]\nusers:\n  \"device-*\": [r]\n  \"*-7\": [r]\n  \"gw-*\": [r]\n  \"sensor-*\": [r]\n  device-7: [r]\n")
}

func TestGlobsMeet(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"device-*", "*-device", true}, // device-device
		{"device-*", "gw-*", false},
		{"a*b", "ab*", true},
		{"*", "x", true},
		{"a*", "b*", false},
		{"*a", "*b", false},
		{"x*y*z", "*q*", true},
		{"abc", "abd", false},
	} {
		if got := globsMeet(tc.a, tc.b); got != tc.want {
			t.Errorf("globsMeet(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}

func FuzzParse(f *testing.F) {
	data, _ := readExample()
	f.Add(string(data))
	f.Add("roles:\n  r:\n    - channel: events\n      filter: iot/{a,b}/events/%u\n      allow: [read]\n    - broker: features\n      deny: [will]\nusers:\n  \"*\": [r]\n")
	f.Fuzz(func(t *testing.T, src string) {
		a, err := Parse("/f", []byte(src), Options{Channels: demoChannels, MaxTopicLevels: 8})
		if err != nil {
			return
		}
		// Whatever compiles resolves and answers without panicking.
		g := a.Grants("device-7", "c/1")
		g.Allows("events", "iot/a/events/x", Read)
		g.AllowsFilter("iot/#", Read)
	})
}

func FuzzGlob(f *testing.F) {
	f.Add("device-*", "device-7")
	f.Fuzz(func(t *testing.T, p, name string) {
		// A name matching p shows p meets itself and the literal name.
		if globMatch(p, name) && !globsMeet(p, name) {
			t.Fatalf("%q matches %q but globsMeet says they share nothing", p, name)
		}
	})
}
