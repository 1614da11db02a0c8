package config

import (
	"strings"
	"testing"
	"time"
)

func bridgeCfg(bridge string) string {
	return minimal + `channels:
  readings:
    type: append
  alerts:
    type: latest
  jobs:
    type: queue
    filter: iot/+/work/+
bridges:
` + bridge
}

func TestBridgeExampleLoadsWithItsDefaultsAndLandings(t *testing.T) {
	cfg := accepted(t, bridgeCfg(`  head-office:
    peer: tls://mqtt.example.com:8883
    client_id: vessel-07
    topics:
      - filter: fleet/+/telemetry/#
        topic: readings/telemetry/$1/$#
        direction: in
      - filter: alerts/#
        direction: both
`))
	b := cfg.Bridges[0]
	if b.SessionExpiry != Day || b.ReceiveMaximum != 20 || b.AckInterval != 5*time.Millisecond || b.Scheme != "tls" || b.Port != "8883" {
		t.Errorf("bridge %+v", b)
	}
	s := cfg.Summary("saguin.yaml")
	for _, want := range []string{
		`bridge "head-office", in "fleet/+/telemetry/#": lands in readings (append)`,
		`bridge "head-office", both "alerts/#": lands in alerts (latest)`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}

func TestBridgeCrossingAQueueSaysSo(t *testing.T) {
	cfg := accepted(t, bridgeCfg(`  head-office:
    peer: tcp://hub:1883
    client_id: vessel-07
    topics:
      - filter: iot/#
        direction: both
`))
	if s := cfg.Summary("saguin.yaml"); !strings.Contains(s, "crosses jobs (queue), never served") || !strings.Contains(s, "jobs__dlq (append)") {
		t.Errorf("summary:\n%s", s)
	}
}

func TestDiscardedSubstitutionIsANoteNotAFinding(t *testing.T) {
	cfg := accepted(t, bridgeCfg(`  head-office:
    peer: tcp://hub:1883
    client_id: vessel-07
    topics:
      - filter: fleet/+/alerts/#
        topic: alerts/$#
        direction: in
`))
	var said, latest bool
	for _, n := range cfg.Notes {
		said = said || strings.Contains(n.Message, "discards $1")
		latest = latest || strings.Contains(n.Message, "latest channel alerts")
	}
	if !said || !latest {
		t.Errorf("notes %v", cfg.Notes)
	}
}

func TestBridgeBracesExpandIntoOneRulePerSpelling(t *testing.T) {
	cfg := accepted(t, bridgeCfg(`  b:
    peer: tcp://hub:1883
    client_id: c
    topics:
      - filter: fleet/{a,b}/x
        direction: out
        topic: out/x
`))
	if e := cfg.Bridges[0].Expanded; len(e) != 2 || e[0].Filter != "fleet/a/x" || e[1].Filter != "fleet/b/x" {
		t.Errorf("expanded %+v", e)
	}
}

func TestBridgeRefusals(t *testing.T) {
	base := "  b:\n    peer: tcp://hub:1883\n    client_id: c\n"
	rule := func(r string) string { return base + "    topics:\n" + r }
	cases := []struct {
		name, bridge, key, at string
		words                 []string
	}{
		{"PeerSchemeMQTTIsRefused", "  b:\n    peer: mqtt://hub:1883\n    client_id: c\n    topics:\n      - filter: a/#\n        direction: both\n", "bridges.b.peer", "peer:", []string{"mqtt://"}},
		{"PeerCarriesAPort", "  b:\n    peer: tcp://hub\n    client_id: c\n    topics:\n      - filter: a/#\n        direction: both\n", "bridges.b.peer", "peer:", []string{"port"}},
		{"ClientIDIsRequired", "  b:\n    peer: tcp://hub:1883\n    topics:\n      - filter: a/#\n        direction: both\n", "bridges.b.client_id", "b:", []string{"no default"}},
		{"ABridgeCarriesSomething", base, "bridges.b.topics", "b:", []string{"carrying nothing"}},
		{"SessionExpiryNoneIsRefused", base + "    session_expiry: none\n    topics:\n      - filter: a/#\n        direction: both\n", "bridges.b.session_expiry", "session_expiry", []string{"guest"}},
		{"SessionExpiryAboveMQTTCeilingIsRefused", base + "    session_expiry: 50000d\n    topics:\n      - filter: a/#\n        direction: both\n", "bridges.b.session_expiry", "session_expiry", []string{"longer"}},
		{"ReceiveMaximumZeroIsRefused", base + "    receive_maximum: 0\n    topics:\n      - filter: a/#\n        direction: both\n", "bridges.b.receive_maximum", "receive_maximum", []string{"in flight"}},
		{"AckIntervalAboveOneSecondIsRefused", base + "    ack_interval: 2s\n    topics:\n      - filter: a/#\n        direction: both\n", "bridges.b.ack_interval", "ack_interval", []string{"ceiling"}},
		{"CAFileBesideAnUnencryptedPeerIsRefused", base + "    ca_file: /etc/ca.pem\n    topics:\n      - filter: a/#\n        direction: both\n", "bridges.b.ca_file", "ca_file", []string{"unencrypted"}},
		{"CertFileBesideAnUnencryptedPeerIsRefused", base + "    cert_file: /etc/c.pem\n    key_file: /etc/k.pem\n    topics:\n      - filter: a/#\n        direction: both\n", "bridges.b.cert_file", "cert_file", []string{"unencrypted"}},
		{"CertFileAndKeyFileGoTogether", "  b:\n    peer: tls://hub:8883\n    client_id: c\n    cert_file: /etc/c.pem\n    topics:\n      - filter: a/#\n        direction: both\n", "bridges.b.key_file", "b:", []string{"together"}},
		{"DirectionIsRequired", rule("      - filter: a/#\n        topic: x/$#\n"), "bridges.b.topics[0].direction", "- filter", []string{"in, out or both"}},
		{"TopicIsRequiredOnAnInRule", rule("      - filter: a/#\n        direction: in\n"), "bridges.b.topics[0].topic", "- filter", []string{"in rule"}},
		{"TopicIsRefusedOnABothRule", rule("      - filter: a/#\n        topic: x/$#\n        direction: both\n"), "bridges.b.topics[0].topic", "topic: x", []string{"both"}},
		{"ReservedSpaceFilterIsRefused", rule("      - filter: $saguin/queue/jobs\n        topic: x\n        direction: in\n"), "bridges.b.topics[0].filter", "filter:", []string{"$saguin/"}},
		{"BothOnADollarFilterIsRefused", rule("      - filter: $SYS/#\n        direction: both\n"), "bridges.b.topics[0].filter", "filter:", []string{"begins with $"}},
		{"PlusTakesAWholeLevel", rule("      - filter: fleet/a+b/#\n        topic: x/$#\n        direction: in\n"), "bridges.b.topics[0].filter", "filter:", []string{"whole level"}},
		{"TopicUsesOnlySubstitutionsItsFilterProvides", rule("      - filter: fleet/+/x\n        topic: y/$2\n        direction: in\n"), "bridges.b.topics[0].topic", "topic:", []string{"$2"}},
		{"DollarHashOnlyWhereTheFilterEndsInHash", rule("      - filter: fleet/+/x\n        topic: y/$1/$#\n        direction: in\n"), "bridges.b.topics[0].topic", "topic:", []string{"does not end in #"}},
		{"DollarHashOnlyAtTheEnd", rule("      - filter: fleet/#\n        topic: y/$#/z\n        direction: in\n"), "bridges.b.topics[0].topic", "topic:", []string{"goes last"}},
		{"AFilterEndingInHashUsesDollarHash", rule("      - filter: fleet/+/#\n        topic: y/$1\n        direction: in\n"), "bridges.b.topics[0].topic", "topic:", []string{"$#"}},
		{"TopicHoldsNoWildcard", rule("      - filter: fleet/#\n        topic: y/+/$#\n        direction: in\n"), "bridges.b.topics[0].topic", "topic:", []string{"wildcard"}},
		{"TopicDoesNotBeginWithSlash", rule("      - filter: fleet/#\n        topic: /y/$#\n        direction: in\n"), "bridges.b.topics[0].topic", "topic:", []string{"begins or ends"}},
		{"TopicHasNoBareDollar", rule("      - filter: fleet/#\n        topic: $x/$#\n        direction: in\n"), "bridges.b.topics[0].topic", "topic:", []string{"bare $"}},
		{"TwoOutboundRulesWithOneFilterAndTopicAreRefused", rule("      - filter: fleet/{a,b}\n        topic: out\n        direction: out\n      - filter: fleet/a\n        topic: out\n        direction: out\n"), "bridges.b.topics", "", []string{"twice"}},
		{"InRuleLandingInADeadLetterChannelIsRefused", rule("      - filter: up/+\n        topic: iot/$1/work/x/__dlq\n        direction: in\n"), "bridges.b.topics", "", []string{"jobs__dlq"}},
		{"FilterDeeperThanMaxTopicLevelsIsRefused", rule("      - filter: " + strings.Repeat("a/", 200) + "#\n        topic: x/$#\n        direction: in\n"), "bridges.b.topics[0].filter", "filter:", []string{"max_topic_levels"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := bridgeCfg(c.bridge)
			line := 0
			if c.at != "" {
				line = lineIn(t, src[strings.Index(src, "bridges:"):], c.at) + strings.Count(src[:strings.Index(src, "bridges:")], "\n")
			}
			refused(t, src, c.key, line, c.words...)
		})
	}
}

func TestTwoBridgesSharingAClientIDAtOnePeerAreRefused(t *testing.T) {
	src := bridgeCfg(`  a:
    peer: tcp://hub:1883
    client_id: same
    topics:
      - filter: a/#
        direction: both
  b:
    peer: tcp://HUB:1883
    client_id: same
    topics:
      - filter: b/#
        direction: both
`)
	refused(t, src, "bridges.b.client_id", 0, "bridge a")
	// The same id at two different peers is fine.
	accepted(t, strings.Replace(src, "tcp://HUB:1883", "tcp://other:1883", 1))
}

func TestSYSIsAllowedInWithATemplate(t *testing.T) {
	accepted(t, bridgeCfg("  b:\n    peer: tcp://hub:1883\n    client_id: c\n    topics:\n      - filter: $SYS/#\n        topic: hub/sys/$#\n        direction: in\n"))
}
