package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker/channel"
	"github.com/saguin-edge/saguin/codec"
)

// Latest channels (issue 12, checklist-channels.md B): through the binary,
// MQTT bytes and the stock mosquitto clients.

// latestChannel is a latest channel "state" over state/#.
const latestChannel = "state:\n  type: latest\n  filter: state/#"

func latestBroker(t *testing.T) *brokerProc {
	t.Helper()
	return startBroker(t, brokerConfig{Channels: latestChannel})
}

// set publishes a value (or, empty, a deletion) at QoS 1 and wants 0x00.
func (c *raw) set(topic, payload string, id uint16) {
	c.t.Helper()
	c.sendPublish(&codec.Publish{QoS: 1, PacketID: id, Topic: []byte(topic), Payload: []byte(payload)})
	if code := c.expectAck(codec.TypePuback, id); code != codec.Success {
		c.t.Fatalf("PUBACK 0x%02x for %s=%q", byte(code), topic, payload)
	}
}

// label is the value of a User Property, "" when absent.
func label(p *codec.Publish, key string) string {
	for _, u := range p.Properties.User {
		if string(u.Key) == key {
			return string(u.Value)
		}
	}
	return ""
}

// collectAcked reads n PUBLISHes, acknowledging each, keyed by topic.
func (c *raw) collectAcked(n int) map[string]*codec.Publish {
	c.t.Helper()
	out := map[string]*codec.Publish{}
	for i := 0; i < n; i++ {
		p := c.expectPublish()
		c.ackDelivery(p)
		out[string(p.Topic)] = p
	}
	return out
}

// expectValue reads the next PUBLISH, acknowledges it and fails unless it
// is topic=payload.
func (c *raw) expectValue(topic, payload, why string) *codec.Publish {
	c.t.Helper()
	p := c.expectPublish()
	c.ackDelivery(p)
	if string(p.Topic) != topic || string(p.Payload) != payload {
		c.t.Fatalf("%s: got %s=%q, want %s=%q", why, p.Topic, p.Payload, topic, payload)
	}
	return p
}

// B3.1, B3.2, B3.4, B3.8: the state pass sends every current value with
// RETAIN, even where no publisher set it, labelled (MQTT 5) with saguin-id,
// saguin-offset and saguin-timestamp; 3.1.1 gets topic, payload and RETAIN.
func TestLatestCatchUpCarriesRetainAndLabels(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		b := latestBroker(t)
		pub := dialRaw(t, b.addr, v)
		pub.mustConnect("pub", nil)
		pub.set("state/a", "1", 1)
		pub.set("state/b", "2", 2)
		pub.set("state/a", "3", 3)
		sub := dialRaw(t, b.addr, v)
		sub.mustConnect("sub", nil)
		sub.mustSubscribe(1, "state/#", 1)
		got := sub.collectAcked(2)
		a, bb := got["state/a"], got["state/b"]
		if a == nil || bb == nil || string(a.Payload) != "3" || string(bb.Payload) != "2" {
			t.Fatalf("state pass = %v, want state/a=3 and state/b=2", got)
		}
		if !a.Retain || !bb.Retain {
			t.Fatal("a catch-up value without RETAIN")
		}
		sub.expectNothing("only the current value of each topic")
		if v != codec.Version5 {
			return
		}
		if label(a, "saguin-offset") != "3" || label(bb, "saguin-offset") != "2" {
			t.Fatalf("offsets %v / %v, want 3 and 2", userProps(&a.Properties), userProps(&bb.Properties))
		}
		if label(a, "saguin-id") == "" || label(a, "saguin-timestamp") == "" {
			t.Fatalf("labels %v, want saguin-id and saguin-timestamp", userProps(&a.Properties))
		}
		if ms, err := strconv.ParseInt(label(a, "saguin-timestamp"), 10, 64); err != nil || time.Since(time.UnixMilli(ms)) > time.Minute {
			t.Fatalf("saguin-timestamp %q is not the receipt time in Unix ms", label(a, "saguin-timestamp"))
		}
	})
}

// B4.1, B3.2 with mosquitto_sub -F '%r %t %p': RETAIN on the catch-up, not on
// a change.
func TestLatestMosquittoSubSeesRetainOnCatchUpAndNotOnChanges(t *testing.T) {
	b := latestBroker(t)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.set("state/valve", "open", 1)
	host, port := hostPort(t, b.addr)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	cmd := exec.CommandContext(ctx, "mosquitto_sub", "-h", host, "-p", port, "-V", "5", "-q", "1", "-t", "state/#", "-C", "2", "-F", "%r %t %p")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	var got []string
	if lines.Scan() {
		got = append(got, lines.Text()) // the catch-up: it is subscribed
	}
	pub.set("state/valve", "closed", 2)
	if lines.Scan() {
		got = append(got, lines.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("mosquitto_sub: %v (%q)", err, got)
	}
	if strings.Join(got, "|") != "1 state/valve open|0 state/valve closed" {
		t.Fatalf("mosquitto_sub printed %q, want the catch-up with RETAIN 1 then the change with 0", got)
	}
}

// B4.1: a Retain As Published subscriber's change carries the publisher's
// flag; B4.2: a live deletion reaches every subscriber.
func TestLatestLiveChangesAndDeletions(t *testing.T) {
	b := latestBroker(t)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", nil)
	sub.subscribeWith(1, nil, codec.Subscription{Filter: []byte("state/#"), QoS: 1, RetainAsPublished: true})
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.sendPublish(&codec.Publish{QoS: 1, PacketID: 1, Retain: true, Topic: []byte("state/a"), Payload: []byte("r")})
	pub.expectAck(codec.TypePuback, 1)
	p := sub.expectPublish()
	sub.ackDelivery(p)
	if !p.Retain || string(p.Payload) != "r" {
		t.Fatalf("RAP change %q retain %v, want the publisher's RETAIN", p.Payload, p.Retain)
	}
	pub.set("state/a", "", 2)
	p = sub.expectPublish()
	if len(p.Payload) != 0 || p.Retain || label(p, "saguin-offset") != "2" {
		t.Fatalf("live deletion %q retain %v %v, want an empty payload at offset 2", p.Payload, p.Retain, userProps(&p.Properties))
	}
}

// B2.1, B3.5: a deleted topic is not in the state pass; with
// saguin-deletions it is, empty, at the offset it was stored at.
func TestLatestDeletionsOnlyWithSaguinDeletions(t *testing.T) {
	b := latestBroker(t)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.set("state/a", "1", 1)
	pub.set("state/gone", "1", 2)
	pub.set("state/gone", "", 3)
	pub.set("state/never", "", 4) // stores nothing (B1.5)
	plain := dialRaw(t, b.addr, codec.Version5)
	plain.mustConnect("plain", nil)
	plain.mustSubscribe(1, "state/#", 1)
	if got := plain.collectAcked(1); got["state/a"] == nil {
		t.Fatalf("state pass = %v", got)
	}
	plain.expectNothing("a deletion without saguin-deletions")
	del := dialRaw(t, b.addr, codec.Version5)
	del.mustConnect("del", nil)
	ack := del.subscribeWith(1, func(p *codec.Properties) {
		p.User = append(p.User, codec.UserProperty{Key: []byte("saguin-deletions"), Value: []byte("yes")})
		p.Present.Set(codec.PropUserProperty)
	}, codec.Subscription{Filter: []byte("state/#"), QoS: 1})
	if ack.ReasonCodes[0] != 1 {
		t.Fatalf("SUBACK %v with saguin-deletions", ack.ReasonCodes)
	}
	got := del.collectAcked(2)
	g := got["state/gone"]
	if g == nil || len(g.Payload) != 0 || !g.Retain || label(g, "saguin-offset") != "3" {
		t.Fatalf("state pass with deletions = %v", got)
	}
	del.expectNothing("state/never was never stored")
}

// B3.7: Retain Handling 2 sends no state; 1 only for a new subscription.
func TestLatestRetainHandling(t *testing.T) {
	b := latestBroker(t)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.set("state/a", "1", 1)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", nil)
	sub.subscribeWith(1, nil, codec.Subscription{Filter: []byte("state/#"), QoS: 1, RetainHandling: 2})
	sub.expectNothing("Retain Handling 2")
	sub.subscribeWith(2, nil, codec.Subscription{Filter: []byte("state/#"), QoS: 1, RetainHandling: 1})
	sub.expectNothing("Retain Handling 1 on a subscription it holds")
	sub.subscribeWith(3, nil, codec.Subscription{Filter: []byte("state/+"), QoS: 1, RetainHandling: 1})
	if p := sub.expectPublish(); !p.Retain || string(p.Payload) != "1" {
		t.Fatalf("Retain Handling 1 on a new subscription: %q retain %v", p.Payload, p.Retain)
	}
}

// B5.1, B5.9: a resumed session with no new SUBSCRIBE is sent only the
// topics that changed while it was away; MQTT 5 and 3.1.1.
func TestLatestResumedSessionReceivesOnlyWhatChanged(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		b := latestBroker(t)
		pub := dialRaw(t, b.addr, v)
		pub.mustConnect("pub", nil)
		for i, k := range []string{"a", "b", "c"} {
			pub.set("state/"+k, "1", uint16(i+1))
		}
		sub := dialRaw(t, b.addr, v)
		sub.mustConnect("sub", session(600))
		sub.mustSubscribe(1, "state/#", 1)
		sub.collectAcked(3)
		sub.leave()
		pub.set("state/b", "2", 10)
		pub.set("state/b", "3", 11)
		back := resume(t, b.addr, v, "sub", 600)
		back.expectValue("state/b", "3", "resume: only the topic that changed, at its current value")
		back.expectNothing("topics that did not change while it was away")
	})
}

// B4.7: a value larger than the subscriber's Maximum Packet Size ends the
// connection with DISCONNECT 0x95, never skipped.
func TestLatestValueTooLargeDisconnectsWith0x95(t *testing.T) {
	b := latestBroker(t)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.set("state/big", strings.Repeat("x", 500), 1)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", func(c *codec.Connect) {
		c.Properties.MaximumPacketSize = 200
		c.Properties.Present.Set(codec.PropMaximumPacketSize)
	})
	sub.subscribeWith(1, nil, codec.Subscription{Filter: []byte("state/#"), QoS: 1})
	h, body := sub.read()
	if h.Type != codec.TypeDisconnect {
		t.Fatalf("got %s, want DISCONNECT 0x95", h.Type)
	}
	var d codec.Disconnect
	if err := d.Decode(h, body, codec.Version5); err != nil || d.ReasonCode != codec.PacketTooLarge {
		t.Fatalf("DISCONNECT %v (%v), want 0x95", d.ReasonCode, err)
	}
}

// B4.7: a value too large is judged at the QoS it goes at: a subscriber
// at QoS 1 whose Maximum Packet Size is one byte below the PUBLISH (so the
// same value at QoS 0, 2 bytes shorter without its packet identifier, would
// fit) is disconnected 0x95, not left waiting; at QoS 0 the same bound takes
// the value.
func TestLatestValueWithinItsPacketIdentifierOfTheBoundIsTooLarge(t *testing.T) {
	b := latestBroker(t)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.set("state/edge", strings.Repeat("x", 100), 1)
	measure := dialRaw(t, b.addr, codec.Version5)
	measure.mustConnect("measure", nil)
	measure.mustSubscribe(1, "state/#", 1)
	h, _ := measure.read()
	if h.Type != codec.TypePublish || h.Flags>>1&3 != 1 {
		t.Fatalf("got %s with flags %#x, want the value at QoS 1", h.Type, h.Flags)
	}
	bound := func(c *codec.Connect) {
		c.Properties.MaximumPacketSize = uint32(h.Total() - 1)
		c.Properties.Present.Set(codec.PropMaximumPacketSize)
	}
	q0 := dialRaw(t, b.addr, codec.Version5)
	q0.mustConnect("q0", bound)
	q0.mustSubscribe(1, "state/#", 0)
	if p := q0.expectPublish(); string(p.Topic) != "state/edge" {
		t.Fatalf("QoS 0 subscriber got %s, want state/edge", p.Topic)
	}
	q1 := dialRaw(t, b.addr, codec.Version5)
	q1.mustConnect("q1", bound)
	q1.subscribeWith(1, nil, codec.Subscription{Filter: []byte("state/#"), QoS: 1})
	q1.expectDisconnect(codec.PacketTooLarge)
}

// B9.1: a shared subscription over a latest channel gets changes only.
func TestLatestSharedSubscriptionGetsChangesOnly(t *testing.T) {
	b := latestBroker(t)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.set("state/a", "before", 1)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", nil)
	sub.mustSubscribe(1, "$share/g/state/#", 1)
	sub.expectNothing("a state pass to a shared subscription")
	pub.set("state/a", "after", 2)
	if p := sub.expectPublish(); string(p.Payload) != "after" || p.Retain {
		t.Fatalf("shared got %q retain %v, want the change without RETAIN", p.Payload, p.Retain)
	}
}

// pointRead publishes $saguin/kv/get for key and returns the PUBACK code;
// a reply written before the PUBACK (the two travel independently) is kept
// for the next reply().
func (c *raw) pointRead(key string, id uint16, response string, corr []byte) codec.ReasonCode {
	c.t.Helper()
	p := &codec.Publish{QoS: 1, PacketID: id, Topic: []byte("$saguin/kv/get"), Payload: []byte(key)}
	if response != "" {
		p.Properties.ResponseTopic = []byte(response)
		p.Properties.Present.Set(codec.PropResponseTopic)
	}
	if corr != nil {
		p.Properties.CorrelationData = corr
		p.Properties.Present.Set(codec.PropCorrelationData)
	}
	c.sendPublish(p)
	for {
		h, body := c.read()
		if h.Type == codec.TypePublish {
			var r codec.Publish
			if err := r.Decode(h, body, c.version); err != nil {
				c.t.Fatal(err)
			}
			c.early = append(c.early, &r)
			continue
		}
		if h.Type != codec.TypePuback {
			c.t.Fatalf("want PUBACK for %d, got %s", id, h.Type)
		}
		var a codec.Ack
		if err := a.Decode(h, body, c.version); err != nil || a.PacketID != id {
			c.t.Fatalf("PUBACK %+v (%v), want one for %d", a, err, id)
		}
		return a.ReasonCode
	}
}

// reply is the next point-read reply, whether it came before its PUBACK or
// comes after it.
func (c *raw) reply() *codec.Publish {
	c.t.Helper()
	if len(c.early) > 0 {
		p := c.early[0]
		c.early = c.early[1:]
		return p
	}
	return c.expectPublish()
}

// B8.1-6: the point read answers the asking connection only, on its
// Response Topic, with the value or an empty payload, echoing Correlation
// Data or else the key; it subscribes nobody.
func TestLatestPointReadAnswersTheAskerOnly(t *testing.T) {
	b := latestBroker(t)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.set("state/a", "v1", 1)
	pub.set("state/d", "x", 2)
	pub.set("state/d", "", 3)
	watcher := dialRaw(t, b.addr, codec.Version5)
	watcher.mustConnect("watcher", nil)
	watcher.mustSubscribe(1, "reply/#", 1)
	asker := dialRaw(t, b.addr, codec.Version5)
	asker.mustConnect("asker", nil)
	if code := asker.pointRead("state/a", 1, "reply/me", []byte("c-1")); code != codec.Success {
		t.Fatalf("PUBACK 0x%02x", byte(code))
	}
	p := asker.reply()
	if string(p.Topic) != "reply/me" || string(p.Payload) != "v1" || string(p.Properties.CorrelationData) != "c-1" || p.Retain {
		t.Fatalf("reply %s %q corr %q retain %v", p.Topic, p.Payload, p.Properties.CorrelationData, p.Retain)
	}
	for _, key := range []string{"state/d", "state/never"} {
		asker.pointRead(key, 2, "reply/me", nil)
		p = asker.reply()
		if len(p.Payload) != 0 || string(p.Properties.CorrelationData) != key {
			t.Fatalf("reply for %s: %q corr %q, want empty with the key as Correlation Data", key, p.Payload, p.Properties.CorrelationData)
		}
	}
	watcher.expectNothing("a point read's reply is never published")
	pub.set("state/a", "v2", 4)
	asker.expectNothing("a point read subscribes nobody")
}

// B8.7-13, B8.15: every refusal on the PUBACK, nothing on the Response Topic.
func TestLatestPointReadRefusals(t *testing.T) {
	b := startBroker(t, brokerConfig{Channels: latestChannel + "\nevents:\n  type: append\n  filter: events/#", Limits: "max_topic_levels: 4"})
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect("asker", nil)
	for _, tc := range []struct {
		key, response string
		code          codec.ReasonCode
	}{
		{"other/a", "r", codec.TopicNameInvalid},       // broadcast
		{"events/a", "r", codec.TopicNameInvalid},      // an append channel
		{"state/+", "r", codec.TopicNameInvalid},       // wildcard
		{"$SYS/x", "r", codec.TopicNameInvalid},        // reserved
		{"state/a/b/c/d", "r", codec.TopicNameInvalid}, // too deep
		{"", "r", codec.ImplementationSpecificError},   // empty key
		{"state/a", "", codec.ImplementationSpecificError},
	} {
		if got := c.pointRead(tc.key, 1, tc.response, nil); got != tc.code {
			t.Errorf("key %q response %q: PUBACK 0x%02x, want 0x%02x", tc.key, tc.response, byte(got), byte(tc.code))
		}
	}
	if len(c.early) > 0 {
		t.Fatalf("a refusal answered on the Response Topic: %s %q", c.early[0].Topic, c.early[0].Payload)
	}
	c.expectNothing("a refusal is never answered on the Response Topic")
	// QoS 0: dropped, nothing answered.
	p := &codec.Publish{Topic: []byte("$saguin/kv/get"), Payload: []byte("state/a")}
	p.Properties.ResponseTopic = []byte("r")
	p.Properties.Present.Set(codec.PropResponseTopic)
	c.sendPublish(p)
	c.expectNothing("a QoS 0 point read")
}

// B8 with mosquitto_rr: the stock request/response client gets the value.
func TestLatestPointReadWithMosquittoRR(t *testing.T) {
	b := latestBroker(t)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.set("state/valve", "open", 1)
	host, port := hostPort(t, b.addr)
	out, err := exec.Command("mosquitto_rr", "-h", host, "-p", port, "-V", "5", "-q", "1",
		"-t", "$saguin/kv/get", "-e", "reply/rr", "-m", "state/valve", "-W", "5").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "open" {
		t.Fatalf("mosquitto_rr: %v %q, want open", err, out)
	}
}

// latestRestart: every acknowledged value and deletion is there after a
// restart, each at its offset, on sqlite after kill -9 and on memory with
// snapshot_dir after SIGTERM.
func latestRestart(t *testing.T, storage string, stop func(*brokerProc)) {
	dir := t.TempDir()
	yaml := saguinYAML(storage, "") + "channels:\n  state:\n    type: latest\n    filter: state/#\n"
	b := startSaguin(t, dir, yaml)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.set("state/a", "1", 1)
	pub.set("state/b", "2", 2)
	pub.set("state/a", "", 3)
	pub.set("state/c", "3", 4)
	stop(b)
	b = startSaguin(t, dir, yaml)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", nil)
	sub.subscribeWith(1, func(p *codec.Properties) {
		p.User = append(p.User, codec.UserProperty{Key: []byte("saguin-deletions"), Value: []byte("")})
		p.Present.Set(codec.PropUserProperty)
	}, codec.Subscription{Filter: []byte("state/#"), QoS: 1})
	got := sub.collectAcked(3)
	want := map[string][2]string{"state/a": {"", "3"}, "state/b": {"2", "2"}, "state/c": {"3", "4"}}
	for k, w := range want {
		p := got[k]
		if p == nil || string(p.Payload) != w[0] || label(p, "saguin-offset") != w[1] {
			t.Fatalf("%s after the restart = %v, want %q at offset %s", k, p, w[0], w[1])
		}
	}
	pub = dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.set("state/d", "4", 1)
	if p := sub.expectPublish(); label(p, "saguin-offset") != "5" {
		t.Fatalf("the next offset after the restart is %s, want 5 (never reused)", label(p, "saguin-offset"))
	}
}

func TestLatestValuesSurviveKill9OnSqlite(t *testing.T) {
	latestRestart(t, sqliteStorage, (*brokerProc).kill9)
}

func TestLatestValuesSurviveSIGTERMOnMemoryWithSnapshot(t *testing.T) {
	latestRestart(t, snapshotStorage, (*brokerProc).stop)
}

// B5.7: after a restart, a session that comes back gets the full state.
func TestLatestAfterARestartAResumedSessionGetsTheFullState(t *testing.T) {
	dir := t.TempDir()
	yaml := saguinYAML(sqliteStorage, "") + "channels:\n  state:\n    type: latest\n    filter: state/#\n"
	b := startSaguin(t, dir, yaml)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.set("state/a", "1", 1)
	pub.set("state/b", "1", 2)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", session(600))
	sub.mustSubscribe(1, "state/#", 1)
	sub.collectAcked(2)
	sub.ping()
	b.kill9()
	b = startSaguin(t, dir, yaml)
	back := resume(t, b.addr, codec.Version5, "sub", 600)
	if got := back.collectAcked(2); len(got) != 2 || !got["state/a"].Retain {
		t.Fatalf("resume after a restart = %v, want the full state with RETAIN", got)
	}
}

// B10: at a start, retained values a latest channel now claims move into it
// (the startup line says how many); those under an append channel are
// discarded.
func TestLatestRetainedValuesMoveInAtStart(t *testing.T) {
	dir := t.TempDir()
	b := startSaguin(t, dir, saguinYAML(sqliteStorage, ""))
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.retain("state/a", []byte("kept"), 1, nil)
	pub.retain("events/x", []byte("gone"), 2, nil)
	pub.retain("other/y", []byte("stays"), 3, nil)
	b.stop()
	b = startSaguin(t, dir, saguinYAML(sqliteStorage, "")+"channels:\n  state:\n    type: latest\n    filter: state/#\n  events:\n    type: append\n    filter: events/#\n")
	line := b.log.wait(regexp.MustCompile("retained values settled"), waitLong)
	if !strings.Contains(line, `moved="state=1"`) || !strings.Contains(line, `discarded="events=1"`) {
		t.Fatalf("startup line %q", line)
	}
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", nil)
	sub.mustSubscribe(1, "state/#", 1)
	if p := sub.expectPublish(); string(p.Payload) != "kept" || label(p, "saguin-offset") == "" {
		t.Fatalf("moved value %q %v, want it served by the channel", p.Payload, userProps(&p.Properties))
	}
	sub.mustSubscribe(2, "other/#", 1)
	if p := sub.expectPublish(); string(p.Payload) != "stays" || label(p, "saguin-offset") != "" {
		t.Fatalf("broadcast retained value %q %v", p.Payload, userProps(&p.Properties))
	}
	sub.mustSubscribe(3, "events/#", 1)
	sub.expectNothing("a retained value now under an append channel")
}

// withUser adds User Properties to a SUBSCRIBE.
func withUser(kv ...string) func(*codec.Properties) {
	return func(p *codec.Properties) {
		for i := 0; i+1 < len(kv); i += 2 {
			p.User = append(p.User, codec.UserProperty{Key: []byte(kv[i]), Value: []byte(kv[i+1])})
		}
		p.Present.Set(codec.PropUserProperty)
	}
}

// A11.16, B3.10: saguin-filter applies to the state pass and to the changes
// alike; A11.9: a malformed declaration refuses every filter of the packet.
func TestLatestSaguinFilterAppliesToTheStatePassAndChanges(t *testing.T) {
	b := latestBroker(t)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	var mine, others []string
	for i := 0; len(mine) < 3 || len(others) < 3; i++ {
		k := "state/dev-" + strconv.Itoa(i)
		if channel.TopicHash(k)%2 == 1 {
			mine = append(mine, k)
		} else {
			others = append(others, k)
		}
	}
	pub.set(mine[0], "m", 1)
	pub.set(others[0], "o", 2)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", nil)
	if ack := sub.subscribeWith(1, withUser("saguin-filter", "topic_hash(2, 1)"), codec.Subscription{Filter: []byte("state/#"), QoS: 1}); ack.ReasonCodes[0] != 1 {
		t.Fatalf("SUBACK %v", ack.ReasonCodes)
	}
	p := sub.expectPublish()
	sub.ackDelivery(p)
	if string(p.Topic) != mine[0] || !p.Retain {
		t.Fatalf("state pass sent %s, want only %s (its slice)", p.Topic, mine[0])
	}
	pub.set(others[1], "o", 3)
	pub.set(mine[1], "m", 4)
	if p := sub.expectPublish(); string(p.Topic) != mine[1] || p.Retain {
		t.Fatalf("change %s, want only %s of its slice", p.Topic, mine[1])
	}
	bad := dialRaw(t, b.addr, codec.Version5)
	bad.mustConnect("bad", nil)
	ack := bad.subscribeWith(1, withUser("saguin-filter", "topic_hash(2, 5)"),
		codec.Subscription{Filter: []byte("state/#"), QoS: 1}, codec.Subscription{Filter: []byte("other/#"), QoS: 1})
	if len(ack.ReasonCodes) != 2 || ack.ReasonCodes[0] != codec.ImplementationSpecificError || ack.ReasonCodes[1] != codec.ImplementationSpecificError {
		t.Fatalf("SUBACK %v for an index past the count, want 0x83 on every filter", ack.ReasonCodes)
	}
}

// D9: a latest channel's series on the scrape - its info, values and
// deletions published, topics held (tombstones included), and values
// superseded while waiting.
func TestLatestSeriesOnTheScrape(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP+"\nmin_scrape_interval: 60s", brokerConfig{Channels: latestChannel})
	pub := dialRaw(t, ob.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.set("state/a", "1", 1)
	pub.set("state/a", "2", 2)
	pub.set("state/b", "1", 3)
	pub.set("state/b", "", 4)
	_, body := ob.get(t, "GET", "/metrics")
	fams := parseScrape(t, body)
	if v, ok := value(fams["saguin_published_total"], "channel", "state"); !ok || v != 4 {
		t.Errorf("saguin_published_total{channel=state} = %v %v, want 4", v, ok)
	}
	if v, ok := value(fams["saguin_channel_records"], "channel", "state"); !ok || v != 2 {
		t.Errorf("saguin_channel_records{channel=state} = %v %v, want 2 (a value and a tombstone)", v, ok)
	}
	if _, ok := value(fams["saguin_latest_superseded_total"], "channel", "state"); !ok {
		t.Error("saguin_latest_superseded_total{channel=state} is missing")
	}
	if v, ok := value(fams["saguin_channel_info"], "channel", "state", "type", "latest", "filter", "state/#"); !ok || v != 1 {
		t.Errorf("saguin_channel_info{channel=state} = %v %v", v, ok)
	}
}

// B9.2 (A13.4): a shared group over a latest channel whose member's session
// outlives its connection holds the changes made while nobody was connected
// - the newest of each topic - and the member gets them when it comes back,
// without RETAIN.
func TestLatestSharedGroupWithAKeptMemberHoldsChangesWhileAway(t *testing.T) {
	b := latestBroker(t)
	m := dialRaw(t, b.addr, codec.Version5)
	m.mustConnect("member", session(300))
	m.mustSubscribe(1, "$share/g/state/#", 1)
	m.disconnect()
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.set("state/a", "1", 1)
	pub.set("state/a", "2", 2)
	pub.set("state/b", "3", 3)
	back := resume(t, b.addr, codec.Version5, "member", 300)
	got := back.collectAcked(2)
	a, bb := got["state/a"], got["state/b"]
	if a == nil || bb == nil || string(a.Payload) != "2" || string(bb.Payload) != "3" || a.Retain || bb.Retain {
		t.Fatalf("member back got %v, want state/a=2 and state/b=3 without RETAIN", got)
	}
	back.expectNothing("a superseded change")
}

// jsDelivery is one message as conformance/interop/latest.js saw it.
type jsDelivery struct {
	Topic       string
	Payload     string
	Retain      bool
	User        map[string]any
	Correlation *string
}

// MQTT.js (B3.1-B3.3, B4.1-B4.2, B8.1-B8.3): a reader subscribing with
// saguin-deletions gets the current value and a tombstone with RETAIN and
// the labels, then a live deletion without RETAIN; a point read answers on
// the Response Topic, to the asker alone, with its Correlation Data.
func TestLatestMQTTjsReadsStateDeletionAndPointRead(t *testing.T) {
	node, dir := mqttJS(t)
	b := startBroker(t, brokerConfig{Channels: "js:\n  type: latest\n  filter: js/#"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := runNode(ctx, node, dir, "latest.js", b.addr, "js/site1")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var res struct {
		Error     string
		State     []jsDelivery
		Deletion  jsDelivery
		PointRead jsDelivery
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Error != "" {
		t.Fatalf("latest.js printed %q: %v", out, err)
	}
	state := map[string]jsDelivery{}
	for _, d := range res.State {
		state[d.Topic] = d
		if !d.Retain {
			t.Errorf("state pass %s without RETAIN", d.Topic)
		}
		for _, k := range []string{"saguin-id", "saguin-offset", "saguin-timestamp"} {
			if _, ok := d.User[k]; !ok {
				t.Errorf("state pass %s without %s: %v", d.Topic, k, d.User)
			}
		}
	}
	if a, bb := state["js/site1/a"], state["js/site1/b"]; a.Payload != "open" || bb.Topic == "" || bb.Payload != "" {
		t.Fatalf("state pass = %+v, want js/site1/a=open and js/site1/b's tombstone", res.State)
	}
	if d := res.Deletion; d.Topic != "js/site1/a" || d.Payload != "" || d.Retain {
		t.Fatalf("live deletion = %+v, want js/site1/a empty without RETAIN", d)
	}
	if p := res.PointRead; p.Topic != "reply/js/site1" || p.Payload != "closed" || p.Correlation == nil || *p.Correlation != "req-7" || p.Retain {
		t.Fatalf("point read reply = %+v, want closed on reply/js/site1 with Correlation Data req-7", p)
	}
}

// B8.11: a point-read key longer than max_topic_length is refused 0x90 on
// the PUBACK, and nothing is answered on the Response Topic.
func TestLatestPointReadKeyLongerThanMaxTopicLengthIs0x90(t *testing.T) {
	b := startBroker(t, brokerConfig{Channels: latestChannel, Limits: "max_topic_length: 20"})
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect("asker", nil)
	c.mustSubscribe(1, "r", 1)
	c.set("state/abc", "v", 1)
	if got := c.pointRead("state/abc", 2, "r", nil); got != codec.Success {
		t.Fatalf("a key within the bound: PUBACK 0x%02x, want 0x00", byte(got))
	}
	if p := c.reply(); string(p.Payload) != "v" {
		t.Fatalf("reply %q, want v", p.Payload)
	}
	if got := c.pointRead("state/abcdefghijklmnop", 3, "r", nil); got != codec.TopicNameInvalid {
		t.Fatalf("a 22-byte key under max_topic_length 20: PUBACK 0x%02x, want 0x90", byte(got))
	}
	if len(c.early) > 0 {
		t.Fatalf("the refusal answered on the Response Topic: %q", c.early[0].Payload)
	}
	c.expectNothing("a refused point read is never answered")
}

// B8.16: a 3.1.1 client cannot give a Response Topic, so its point read is
// refused, and a 3.1.1 refusal of a PUBLISH closes the connection.
func TestLatestPointReadFrom311ClosesTheConnection(t *testing.T) {
	b := latestBroker(t)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.set("state/a", "v", 1)
	c := dialRaw(t, b.addr, codec.Version311)
	c.mustConnect("old", nil)
	c.publish("$saguin/kv/get", []byte("state/a"), 1, 1)
	c.expectClosed()
}

// B11.1: a schema registry is an ordinary latest channel; a `schema` User
// Property on a value passes through to subscribers, while `saguin-schema`
// (reserved prefix) is stripped.
func TestLatestSchemaUserPropertyPassesAndSaguinSchemaIsStripped(t *testing.T) {
	b := latestBroker(t)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	p := &codec.Publish{QoS: 1, PacketID: 1, Topic: []byte("state/temp"), Payload: []byte("21.5")}
	withUser("schema", "schemas/temp/v1", "saguin-schema", "forged")(&p.Properties)
	pub.sendPublish(p)
	if code := pub.expectAck(codec.TypePuback, 1); code != codec.Success {
		t.Fatalf("PUBACK 0x%02x", byte(code))
	}
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", nil)
	sub.mustSubscribe(1, "state/#", 1)
	got := sub.expectPublish()
	if string(got.Payload) != "21.5" || label(got, "schema") != "schemas/temp/v1" {
		t.Fatalf("got %q schema %q, want 21.5 with schema schemas/temp/v1", got.Payload, label(got, "schema"))
	}
	if v := label(got, "saguin-schema"); v != "" {
		t.Fatalf("saguin-schema %q reached the subscriber, want it stripped", v)
	}
}

// B11.3: a retained Will whose topic a latest channel claims becomes that
// topic's value (the availability pattern): a later subscriber's state pass
// and a point read both carry it.
func TestLatestRetainedWillBecomesTheValue(t *testing.T) {
	b := latestBroker(t)
	w := dialRaw(t, b.addr, codec.Version5)
	w.mustConnect("watch", nil)
	w.mustSubscribe(1, "state/#", 1)
	dev := dialRaw(t, b.addr, codec.Version5)
	dev.mustConnect("dev", will("state/dev/status", "offline", 1, true, 0))
	dev.drop()
	if p := w.expectPublish(); string(p.Topic) != "state/dev/status" || string(p.Payload) != "offline" {
		t.Fatalf("watcher got %s %q, want the Will", p.Topic, p.Payload)
	}
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", nil)
	sub.mustSubscribe(1, "state/#", 1)
	if p := sub.expectPublish(); string(p.Topic) != "state/dev/status" || string(p.Payload) != "offline" || !p.Retain {
		t.Fatalf("state pass %s %q retain %v, want the Will as the value with RETAIN", p.Topic, p.Payload, p.Retain)
	}
	asker := dialRaw(t, b.addr, codec.Version5)
	asker.mustConnect("asker", nil)
	if code := asker.pointRead("state/dev/status", 1, "r", nil); code != codec.Success {
		t.Fatalf("point read PUBACK 0x%02x", byte(code))
	}
	if p := asker.reply(); string(p.Payload) != "offline" {
		t.Fatalf("point read %q, want offline", p.Payload)
	}
}

// B8.17: both point-read refusal codes are counted in
// saguin_publish_refused_total by code.
func TestLatestPointReadRefusalsAreCountedByCode(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP+"\nmin_scrape_interval: 60s", brokerConfig{Channels: latestChannel})
	c := dialRaw(t, ob.addr, codec.Version5)
	c.mustConnect("asker", nil)
	if got := c.pointRead("other/a", 1, "r", nil); got != codec.TopicNameInvalid {
		t.Fatalf("broadcast key: PUBACK 0x%02x, want 0x90", byte(got))
	}
	if got := c.pointRead("other/b", 2, "r", nil); got != codec.TopicNameInvalid {
		t.Fatalf("broadcast key: PUBACK 0x%02x, want 0x90", byte(got))
	}
	if got := c.pointRead("", 3, "r", nil); got != codec.ImplementationSpecificError {
		t.Fatalf("empty key: PUBACK 0x%02x, want 0x83", byte(got))
	}
	_, body := ob.get(t, "GET", "/metrics")
	fams := parseScrape(t, body)
	if v, ok := value(fams["saguin_publish_refused_total"], "reason", "topic name invalid"); !ok || v != 2 {
		t.Errorf("saguin_publish_refused_total{reason=topic name invalid} = %v %v, want 2", v, ok)
	}
	if v, ok := value(fams["saguin_publish_refused_total"], "reason", "implementation specific error"); !ok || v != 1 {
		t.Errorf("saguin_publish_refused_total{reason=implementation specific error} = %v %v, want 1", v, ok)
	}
}

// B8.14: a point read whose roles lack read on that latest channel is
// refused 0x87 on the PUBACK, with nothing on the Response Topic; a role
// holding read is answered.
func TestLatestPointReadWithoutReadIs0x87(t *testing.T) {
	saguinOnly(t, "the test needs a saguin started with its own acl_file")
	dir := t.TempDir()
	pw := writePasswd(t, dir, map[string]string{"writer": "pww", "reader": "pwr"})
	acl := "roles:\n  writer:\n    - channel: state\n      allow: [write]\n  reader:\n    - channel: state\n      allow: [read]\n" +
		"users:\n  writer: [writer]\n  reader: [reader]\n"
	if err := os.WriteFile(filepath.Join(dir, "acl.yaml"), []byte(acl), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startBrokerIn(t, dir, brokerConfig{MQTT: "password_file: " + pw + "\nacl_file: " + filepath.Join(dir, "acl.yaml"),
		Channels: latestChannel})
	writer := dialRaw(t, b.addr, codec.Version5)
	writer.mustConnect("writer-1", login("writer", "pww"))
	writer.set("state/a", "v", 1)
	if got := writer.pointRead("state/a", 2, "r", nil); got != codec.NotAuthorized {
		t.Fatalf("write-only role: PUBACK 0x%02x, want 0x87", byte(got))
	}
	if len(writer.early) > 0 {
		t.Fatalf("the refusal answered on the Response Topic: %q", writer.early[0].Payload)
	}
	writer.expectNothing("a refused point read is never answered")
	reader := dialRaw(t, b.addr, codec.Version5)
	reader.mustConnect("reader-1", login("reader", "pwr"))
	if got := reader.pointRead("state/a", 1, "r", nil); got != codec.Success {
		t.Fatalf("read role: PUBACK 0x%02x, want 0x00", byte(got))
	}
	if p := reader.reply(); string(p.Payload) != "v" {
		t.Fatalf("reply %q, want v", p.Payload)
	}
}

// deletionsProp is the saguin-deletions User Property on a SUBSCRIBE.
var deletionsProp = withUser("saguin-deletions", "")

// B3.6: saguin-deletions covers every filter of its SUBSCRIBE, and a resumed
// session does not keep it: a later SUBSCRIBE without it gets no deletions.
func TestLatestSaguinDeletionsCoversThePacketAndIsNotKeptByTheSession(t *testing.T) {
	b := latestBroker(t)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.set("state/a/x", "1", 1)
	pub.set("state/a/x", "", 2)
	pub.set("state/b/y", "1", 3)
	pub.set("state/b/y", "", 4)
	pub.set("state/b/z", "1", 5)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", session(600))
	ack := sub.subscribeWith(1, deletionsProp,
		codec.Subscription{Filter: []byte("state/a/#"), QoS: 1}, codec.Subscription{Filter: []byte("state/b/#"), QoS: 1})
	if len(ack.ReasonCodes) != 2 || ack.ReasonCodes[0] != 1 || ack.ReasonCodes[1] != 1 {
		t.Fatalf("SUBACK %v", ack.ReasonCodes)
	}
	got := sub.collectAcked(3)
	for _, topic := range []string{"state/a/x", "state/b/y"} {
		if p := got[topic]; p == nil || len(p.Payload) != 0 {
			t.Fatalf("the state pass lacks the deletion of %s under the second filter too: %v", topic, got)
		}
	}
	sub.leave()
	back := resume(t, b.addr, codec.Version5, "sub", 600)
	back.mustSubscribe(2, "state/b/#", 1)
	back.expectValue("state/b/z", "1", "state pass after resume: state/b/z only")
	back.expectNothing("a deletion: the resumed session does not keep saguin-deletions")
}

// B5.8: a topic deleted while the session was away is not reported on
// resume, even to a subscription made with saguin-deletions; a topic
// changed meanwhile is.
func TestLatestDeletedWhileAwayIsNotReportedOnResume(t *testing.T) {
	b := latestBroker(t)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.set("state/a", "1", 1)
	pub.set("state/b", "1", 2)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", session(600))
	sub.subscribeWith(1, deletionsProp, codec.Subscription{Filter: []byte("state/#"), QoS: 1})
	sub.collectAcked(2)
	sub.leave()
	pub.set("state/a", "", 3)
	pub.set("state/b", "2", 4)
	back := resume(t, b.addr, codec.Version5, "sub", 600)
	back.expectValue("state/b", "2", "resume: the topic changed while away")
	back.expectNothing("the deletion of state/a made while the session was away")
}

// B4.5: delivery waits only on the subscriber: a latest subscriber that
// reads nothing from its socket does not delay the publisher's PUBACKs.
func TestLatestSubscriberReadingNothingDoesNotDelayThePublisher(t *testing.T) {
	b := latestBroker(t)
	deaf := dialRaw(t, b.addr, codec.Version5)
	deaf.mustConnect("deaf", nil)
	deaf.mustSubscribe(1, "state/#", 1)
	// deaf reads nothing more: 200 values of 32 KiB on distinct topics fill
	// its socket's buffers many times over.
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	value := strings.Repeat("v", 32<<10)
	start := time.Now()
	for i := 0; i < 200; i++ {
		pub.set("state/t"+strconv.Itoa(i), value, uint16(i+1))
	}
	if d := time.Since(start); d > waitLong {
		t.Fatalf("200 PUBACKs took %v with a deaf subscriber", d)
	}
}

// B7.3: at startup the broker logs, per latest channel, how many values'
// topics its filter no longer matches; append channels are not checked.
func TestLatestStartupCountsValuesItsFilterNoLongerMatches(t *testing.T) {
	dir := t.TempDir()
	before := "channels:\n  state:\n    type: latest\n    filter: state/#\n  events:\n    type: append\n    filter: events/#\n"
	b := startSaguin(t, dir, saguinYAML(sqliteStorage, "")+before)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.set("state/kept/a", "1", 1)
	pub.set("state/old/b", "2", 2)
	pub.set("state/old/c", "3", 3)
	pub.set("events/old/x", "4", 4)
	b.stop()
	after := "channels:\n  state:\n    type: latest\n    filter: state/kept/#\n  events:\n    type: append\n    filter: events/new/#\n"
	b = startSaguin(t, dir, saguinYAML(sqliteStorage, "")+after)
	stray := regexp.MustCompile("filter no longer matches")
	line := b.log.wait(stray, waitLong)
	if line == "" || !strings.Contains(line, "values=2") || !strings.Contains(line, "channel=state") {
		t.Fatalf("startup line %q, want the state channel's 2 values its filter no longer matches", line)
	}
	if b.log.wait(regexp.MustCompile("broker started"), waitLong) == "" {
		t.Fatal("no broker started line")
	}
	for _, l := range b.log.snapshot() {
		if stray.MatchString(l) && l != line {
			t.Fatalf("a second such line %q: append channels are not checked", l)
		}
	}
}

// B7.2: the broker-wide default_retention_period applies to latest channels
// too: a channel that sets no retention_period stops serving a value older
// than the default, on a point read and in a state pass.
func TestLatestDefaultRetentionPeriodAppliesToLatestChannels(t *testing.T) {
	storage := strings.Replace(memoryStorage, "default_retention_period: none", "default_retention_period: 2s", 1)
	b := startSaguin(t, t.TempDir(), saguinYAML(storage, "")+"channels:\n  state:\n    type: latest\n    filter: state/#\n")
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect("c", nil)
	c.set("state/weekly", "v", 1)
	if code := c.pointRead("state/weekly", 2, "r", nil); code != codec.Success {
		t.Fatalf("PUBACK 0x%02x", byte(code))
	}
	if p := c.reply(); string(p.Payload) != "v" {
		t.Fatalf("a fresh value read %q, want v", p.Payload)
	}
	// The value's age is the rule's subject: ask until it is past the
	// default (2s) and no longer served, or fail at waitLong.
	deadline := time.Now().Add(waitLong)
	for {
		c.pointRead("state/weekly", 3, "r", nil)
		if p := c.reply(); len(p.Payload) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still served %v after the 2s default_retention_period", waitLong)
		}
		<-time.After(100 * time.Millisecond) // polling; nothing waits on this
	}
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", nil)
	sub.mustSubscribe(1, "state/#", 1)
	sub.expectNothing("a value past default_retention_period in the state pass")
}

// B5.5: a value the subscriber missed (too large for its Maximum Packet
// Size) holds the mark below it for the session's life: it is re-sent on
// every resume, not just the first, until a new SUBSCRIBE clears the mark.
func TestLatestMissedValueMarkLastsUntilANewSubscribe(t *testing.T) {
	b := latestBroker(t)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", both(session(600), func(c *codec.Connect) {
		c.Properties.MaximumPacketSize = 200
		c.Properties.Present.Set(codec.PropMaximumPacketSize)
	}))
	sub.mustSubscribe(1, "state/#", 1)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	big := strings.Repeat("x", 500)
	pub.set("state/big", big, 1)
	sub.expectDisconnect(codec.PacketTooLarge)
	for _, why := range []string{"first resume", "second resume"} {
		c := resume(t, b.addr, codec.Version5, "sub", 600)
		c.expectValue("state/big", big, why+": the missed value re-sent")
		c.leave()
	}
	c := resume(t, b.addr, codec.Version5, "sub", 600)
	c.expectValue("state/big", big, "third resume: the missed value re-sent")
	c.mustSubscribe(2, "state/#", 1)
	if p := c.expectValue("state/big", big, "state pass"); !p.Retain {
		t.Fatal("state pass: state/big without RETAIN")
	}
	c.leave()
	resume(t, b.addr, codec.Version5, "sub", 600).expectNothing("a re-send once a new SUBSCRIBE cleared the mark")
}
