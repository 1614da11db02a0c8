package conformance

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// Tests for the rules of checklist-operations section B (the acl_file)
// that the audit of issue 14 found untested or tested in part; each is
// named after its rule.

// aclBroker starts saguin with a password file of users (written by
// mosquitto_passwd), acl as its acl_file, and the extra configuration cfg
// (its MQTT lines are added to the two files' keys).
func aclBroker(t *testing.T, users map[string]string, acl string, cfg brokerConfig) *brokerProc {
	t.Helper()
	saguinOnly(t, "the test needs a saguin started with its own acl_file")
	dir := t.TempDir()
	pw := writePasswd(t, dir, users)
	aclPath := filepath.Join(dir, "acl.yaml")
	if err := os.WriteFile(aclPath, []byte(acl), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.MQTT = "password_file: " + pw + "\nacl_file: " + aclPath + "\n" + cfg.MQTT
	return startBrokerIn(t, dir, cfg)
}

// untilRefused publishes QoS 1 to topic, ten at once, and says how many
// were acknowledged 0x00 before the first 0x97 (10: none refused).
func untilRefused(t *testing.T, c *raw, topic string) int {
	t.Helper()
	for i := uint16(1); i <= 10; i++ {
		c.publish(topic, []byte("x"), 1, i)
		switch code := c.expectPuback(i); code {
		case codec.Success:
		case codec.QuotaExceeded:
			return int(i - 1)
		default:
			t.Fatalf("%s: PUBACK 0x%02x", topic, byte(code))
		}
	}
	return 10
}

// Checklist B30 (RFC 0002 "How fast one client may publish"): an entry's
// limits: replace the broker-wide figures for the users it applies to, up
// as well as down, at run time - not only in what --acl prints - and a
// user whose entry carries none is held to the broker-wide ones.
func TestB30EntryLimitsAreEnforced(t *testing.T) {
	acl := `roles:
  any:
    - topic: "#"
      allow: [write, read]
users:
  slow:
    roles: [any]
    limits: {publish_rate: 1}
  fast:
    roles: [any]
    limits: {publish_rate: 1000}
  plain: [any]
`
	b := aclBroker(t, map[string]string{"slow": "pws", "fast": "pwf", "plain": "pwp"}, acl, brokerConfig{Limits: "publish_rate: 3"})
	for _, tc := range []struct {
		user, pass string
		ok         func(int) bool
		want       string
	}{
		{"slow", "pws", func(n int) bool { return n < 3 }, "fewer than the broker-wide 3 (its entry's 1 a second)"},
		{"fast", "pwf", func(n int) bool { return n == 10 }, "all 10 (its entry's 1000 a second)"},
		{"plain", "pwp", func(n int) bool { return n >= 3 && n < 10 }, "the broker-wide 3 a second, bursting no further"},
	} {
		c := dialRaw(t, b.addr, codec.Version5)
		c.mustConnect(clientID(t, tc.user), login(tc.user, tc.pass))
		if n := untilRefused(t, c, "t/"+tc.user); !tc.ok(n) {
			t.Errorf("%s: %d of ten publishes at once acknowledged before a 0x97, want %s", tc.user, n, tc.want)
		}
	}
}
