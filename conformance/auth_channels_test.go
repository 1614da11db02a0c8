package conformance

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

const channelACL = `roles:
  reader:
    - channel: events
      allow: [read]
  writer:
    - channel: events
      filter: ev/%u/#
      allow: [write]
users:
  dashboard: [reader]
  device-7: [writer]
`

// An append consumer whose delivery the acl_file refuses is stalled, not
// skipped, and the re-read granting it back is what wakes it (RFC 0002 "What
// a refused client sees", invariant 16); a channel rule's filter narrows
// write, and a subscription needs read on the channel.
func TestAppendConsumerRefusedIsStalledAndWokenByTheReload(t *testing.T) {
	saguinOnly(t, "the test needs a saguin started with its own acl_file")
	dir := t.TempDir()
	pw := writePasswd(t, dir, authUsers)
	aclPath := filepath.Join(dir, "acl.yaml")
	os.WriteFile(aclPath, []byte(channelACL), 0o600)
	b := startBrokerIn(t, dir, brokerConfig{
		MQTT:     "password_file: " + pw + "\nacl_file: " + aclPath,
		Channels: "events:\n  type: append\n  filter: ev/#",
	})
	dev := dialRaw(t, b.addr, codec.Version5)
	dev.mustConnect(clientID(t, "dev"), login("device-7", "pw7"))
	if got := dev.subscribe(1, "ev/#", 1); got[0] != codec.NotAuthorized {
		t.Fatalf("a writer subscribing: SUBACK 0x%02x, want 0x87", byte(got[0]))
	}
	dev.publish("ev/device-8/x", []byte("other's"), 1, 2)
	if code := dev.expectPuback(2); code != codec.NotAuthorized {
		t.Fatalf("outside the rule's filter: PUBACK 0x%02x, want 0x87", byte(code))
	}

	dash := dialRaw(t, b.addr, codec.Version5)
	dash.mustConnect(clientID(t, "dash"), both(login("dashboard", "pwd"), freshSession(600)))
	if got := dash.subscribe(1, "ev/#", 1); got[0] != 1 {
		t.Fatalf("reader subscribing: SUBACK 0x%02x", byte(got[0]))
	}
	dev.publish("ev/device-7/a", []byte("first"), 1, 3)
	if code := dev.expectPuback(3); code != codec.Success {
		t.Fatalf("PUBACK 0x%02x", byte(code))
	}
	p := dash.expectPublish()
	if string(p.Payload) != "first" {
		t.Fatalf("got %q", p.Payload)
	}
	dash.ackDelivery(p)

	os.WriteFile(aclPath, []byte(strings.Replace(channelACL, "      allow: [read]\n", "      allow: [seek]\n", 1)), 0o600)
	b.signal(syscall.SIGUSR1)
	b.log.wait(regexp.MustCompile(`credentials re-read and in force`), waitLong)
	dev.publish("ev/device-7/b", []byte("second"), 1, 4)
	if code := dev.expectPuback(4); code != codec.Success {
		t.Fatalf("PUBACK 0x%02x", byte(code))
	}
	dash.expectNothing("a delivery the acl_file no longer grants")

	os.WriteFile(aclPath, []byte(channelACL), 0o600)
	b.signal(syscall.SIGUSR1)
	// No publish: the grant returning is what wakes the consumer, at the
	// record it was held at.
	if p := dash.expectPublish(); string(p.Payload) != "second" {
		t.Fatalf("after the grant came back: %q, want the held record", p.Payload)
	}
}
