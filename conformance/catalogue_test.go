package conformance

import (
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// askCatalogue publishes $saguin/catalogue/<name> at qos, with Response
// Topic cat/reply and Correlation Data c1 when withResponse, and returns the
// reply (nil at QoS 0, which is dropped) and the PUBACK's code; the reply and
// the PUBACK travel independently, so either may come first.
func (c *raw) askCatalogue(name string, qos byte, withResponse bool) (*codec.Publish, codec.ReasonCode) {
	c.t.Helper()
	p := &codec.Publish{QoS: qos, PacketID: 1, Topic: []byte("$saguin/catalogue/" + name)}
	if withResponse {
		p.Properties.ResponseTopic = []byte("cat/reply")
		p.Properties.Present.Set(codec.PropResponseTopic)
		p.Properties.CorrelationData = []byte("c1")
		p.Properties.Present.Set(codec.PropCorrelationData)
	}
	c.sendPublish(p)
	if qos == 0 {
		return nil, 0
	}
	var reply *codec.Publish
	for {
		h, body := c.read()
		switch h.Type {
		case codec.TypePublish:
			var q codec.Publish
			if err := q.Decode(h, body, c.version); err != nil {
				c.t.Fatal(err)
			}
			reply = &q
		case codec.TypePuback:
			var a codec.Ack
			if err := a.Decode(h, body, c.version); err != nil {
				c.t.Fatal(err)
			}
			if reply == nil {
				reply = c.expectPublishWithin(waitLong)
			}
			return reply, a.ReasonCode
		default:
			c.t.Fatalf("got %s", h.Type)
		}
	}
}

// catalogueChannels are one channel of each type for the scoped answers.
const catalogueChannels = `events:
  type: append
  filter: iot/+/events/#
state:
  type: latest
  filter: state/{a,b}/#
jobs:
  type: queue
  filter: work/+/inspect`

// catalogueACL grants device-7 write on its own part of events, read on
// state, and nothing on jobs.
const catalogueACL = `roles:
  device:
    - channel: events
      filter: iot/%u/events/#
      allow: [write]
    - channel: state
      allow: [read]
users:
  "device-*": [device]
`

// D5.3, D5.4 (checklist-operations B.60): under an acl_file the catalogue
// answers with the verbs this client holds, one verb listed per grant; a
// grant narrowed by filter: learns the whole filter; a channel the client
// holds no verb on answers exactly as one that does not exist; and the answer
// is the permission as it stands, so a re-read changes it under the same
// connection.
func TestCatalogueAnswersWithTheVerbsTheClientHolds(t *testing.T) {
	saguinOnly(t, "the test needs a saguin started with its own acl_file")
	dir := t.TempDir()
	pw := writePasswd(t, dir, map[string]string{"device-7": "pw7"})
	aclPath := filepath.Join(dir, "acl.yaml")
	os.WriteFile(aclPath, []byte(catalogueACL), 0o600)
	b := startBrokerIn(t, dir, brokerConfig{MQTT: "password_file: " + pw + "\nacl_file: " + aclPath, Channels: catalogueChannels})
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect("device-7", login("device-7", "pw7"))
	for _, want := range []struct{ name, answer string }{
		{"events", `{"name":"events","type":"append","filter":"iot/+/events/#","verbs":["write"]}`},
		{"state", `{"name":"state","type":"latest","filter":"state/{a,b}/#","verbs":["read"]}`},
		{"jobs", ""},
		{"nochannel", ""},
	} {
		reply, code := c.askCatalogue(want.name, 1, true)
		if code != codec.Success || string(reply.Payload) != want.answer {
			t.Fatalf("%s: 0x%02x %q, want 0x00 and %q", want.name, byte(code), reply.Payload, want.answer)
		}
	}
	widened := catalogueACL + "  device-7:\n    roles: [device, worker]\n"
	widened = regexp.MustCompile(`(?m)^users:`).ReplaceAllString(widened, "  worker:\n    - channel: jobs\n      allow: [consume]\n    - channel: events\n      allow: [read, seek]\nusers:")
	os.WriteFile(aclPath, []byte(widened), 0o600)
	b.signal(syscall.SIGUSR1)
	b.log.wait(regexp.MustCompile(`credentials re-read and in force`), waitLong)
	for _, want := range []struct{ name, answer string }{
		{"events", `{"name":"events","type":"append","filter":"iot/+/events/#","verbs":["write","read","seek"]}`},
		{"jobs", `{"name":"jobs","type":"queue","filter":"work/+/inspect","verbs":["consume"],"pin":"$saguin/queue/jobs"}`},
	} {
		reply, code := c.askCatalogue(want.name, 1, true)
		if code != codec.Success || string(reply.Payload) != want.answer {
			t.Fatalf("after the re-read, %s: 0x%02x %q, want 0x00 and %q", want.name, byte(code), reply.Payload, want.answer)
		}
	}
}
