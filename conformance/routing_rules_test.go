package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// Routing a topic to a channel and a filter reaching several channels
// (checklist-channels.md D1, D2), through the binary. Where a record landed
// is what its delivery says: a channel record carries saguin-offset, a
// broadcast message does not, and a delivery on a filter reaching more than
// one channel names its channel in saguin-channel (A2.5).

// appendChannels is the channels: body of one append channel per
// name=filter pair.
func appendChannels(pairs ...string) string {
	var b strings.Builder
	for _, p := range pairs {
		name, filter, _ := strings.Cut(p, "=")
		fmt.Fprintf(&b, "%s:\n  type: append\n  filter: %s\n", name, filter)
	}
	return b.String()
}

// placement publishes each topic at QoS 1 (topic as payload) and answers
// where each landed, as a subscriber on # reached by every channel sees it:
// the channel's name from saguin-channel, "broadcast" for a message with no
// saguin-offset.
func placement(t *testing.T, b *brokerProc, topics ...string) map[string]string {
	t.Helper()
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("where", nil)
	sub.mustSubscribe(1, "#", 1)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	for i, topic := range topics {
		pub.publishQoS1(topic, []byte(topic), uint16(i+1))
	}
	// Each channel is its own delivery routine: order across them is not
	// fixed, the count is.
	got := map[string]string{}
	for _, p := range sub.collect(len(topics)) {
		where := "broadcast"
		if _, ok := userProp(p, "saguin-offset"); ok {
			where, _ = userProp(p, "saguin-channel")
		}
		if _, dup := got[string(p.Topic)]; dup {
			t.Fatalf("%s delivered twice", p.Topic)
		}
		got[string(p.Topic)] = where
	}
	return got
}

// wantPlacement fails unless got is exactly want, listing both sorted.
func wantPlacement(t *testing.T, got, want map[string]string) {
	t.Helper()
	if fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(want)) {
		t.Fatalf("placement\n got %v\nwant %v", sorted(got), sorted(want))
	}
}

func sorted(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"->"+v)
	}
	sort.Strings(out)
	return out
}

// D1.1, D1.3: a channel claims what its filter matches by ordinary MQTT
// matching - + one level, # the last level and zero levels, a filter without
// # only topics of its own depth - and every other topic is broadcast.
func TestD1_1ChannelsClaimTopicsByOrdinaryMatching(t *testing.T) {
	b := startBroker(t, brokerConfig{Channels: appendChannels("deep=ev/+/x/#", "flat=fixed/+")})
	wantPlacement(t, placement(t, b,
		"ev/a/x", "ev/a/x/y/z", "ev/a/b/x", "ev/x", "fixed/a", "fixed/a/b", "fixed", "other/t"),
		map[string]string{
			"ev/a/x": "deep", "ev/a/x/y/z": "deep", "ev/a/b/x": "broadcast", "ev/x": "broadcast",
			"fixed/a": "flat", "fixed/a/b": "broadcast", "fixed": "broadcast", "other/t": "broadcast",
		})
}

// D1.2: a channel with no filter: claims <name>/#; one with a filter claims
// only that, its name's topics staying broadcast.
func TestD1_2AChannelWithoutAFilterClaimsItsNameAndAFilterReplacesThat(t *testing.T) {
	b := startBroker(t, brokerConfig{Channels: "things:\n  type: append\nlogs:\n  type: append\n  filter: l/#\n"})
	wantPlacement(t, placement(t, b, "things", "things/a/b", "logs/a", "l/a"),
		map[string]string{"things": "things", "things/a/b": "things", "logs/a": "broadcast", "l/a": "logs"})
}

// D1.4, invariant 12: the most exact filter owns a topic, whatever the file
// order - at the first level that differs a spelled-out level beats + and #,
// + beats #, and a filter ending there beats one continuing with #.
func TestD1_4TheMostExactFilterOwnsATopic(t *testing.T) {
	b := startBroker(t, brokerConfig{Channels: appendChannels(
		"hash=r/#", "exact=r/k/x", "plus=r/+/x", "khash=r/k/#", "kend=r/k")})
	wantPlacement(t, placement(t, b, "r/k/x", "r/j/x", "r/k/y", "r/j/y", "r/k", "r"),
		map[string]string{
			"r/k/x": "exact", "r/j/x": "plus", "r/k/y": "khash", "r/j/y": "hash", "r/k": "kend", "r": "hash",
		})
}

// D1.5: filters identical after brace expansion refuse the start, naming
// both channels.
func TestD1_5FiltersIdenticalAfterBraceExpansionRefuseTheStartNamingBoth(t *testing.T) {
	saguinOnly(t, "a configuration refused at start")
	code, log := startFailing(t, brokerConfig{Channels: appendChannels("pair=s/{x,y}/v", "single=s/y/v")}, t.TempDir())
	if code != 1 || !strings.Contains(log, "pair") || !strings.Contains(log, "single") || !strings.Contains(log, "s/y/v") {
		t.Fatalf("exit %d, want 1 with a line naming channels pair and single and the filter s/y/v:\n%s", code, log)
	}
}

// D1.6: a brace-expanded filter claims every spelling, and nothing else.
func TestD1_6ABraceExpandedFilterClaimsEverySpelling(t *testing.T) {
	b := startBroker(t, brokerConfig{Channels: appendChannels("spelt=s/{x,y}/{v,w}", "other=o/#")})
	wantPlacement(t, placement(t, b, "s/x/v", "s/x/w", "s/y/v", "s/y/w", "s/z/v", "s/x/u"),
		map[string]string{
			"s/x/v": "spelt", "s/x/w": "spelt", "s/y/v": "spelt", "s/y/w": "spelt",
			"s/z/v": "broadcast", "s/x/u": "broadcast",
		})
}

// D1.7: a brace in a client's SUBSCRIBE is a literal level: granted, and the
// spellings it would expand to do not reach it.
func TestD1_7ABraceInASubscribeIsALiteralLevel(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", nil)
	if got := sub.subscribe(1, "s/{x,y}/v", 1); len(got) != 1 || got[0] != codec.GrantedQoS1 {
		t.Fatalf("SUBACK %v, want 0x01", got)
	}
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publishQoS1("s/x/v", []byte("spelling"), 1)
	pub.publishQoS1("s/{x,y}/v", []byte("literal"), 2)
	if p := sub.expectPublish(); string(p.Payload) != "literal" {
		t.Fatalf("got %q on %s, want only the literal topic's message", p.Payload, p.Topic)
	}
	sub.expectNothing("a spelling the braces would expand to")
}

// D1.8 ("Changing a filter"): editing a filter moves nothing stored - a
// record written under the old filter is served from the channel it is in,
// while the same topic published after the edit is broadcast.
func TestD1_8EditingAFilterMovesNothingStored(t *testing.T) {
	saguinOnly(t, "the test restarts saguin on an edited configuration")
	dir := t.TempDir()
	b := startSaguin(t, dir, saguinYAML(sqliteStorage, "")+"channels:\n"+indentLines(appendChannels("events=ev/#"), "  "))
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publishQoS1("ev/a", []byte("before the edit"), 1)
	b.stop()

	b = startSaguin(t, dir, saguinYAML(sqliteStorage, "")+"channels:\n"+indentLines(appendChannels("events=moved/#"), "  "))
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", nil)
	sub.mustSubscribe(1, "#", 1) // touches events through moved/#
	p := sub.expectPublish()
	sub.ackDelivery(p)
	if string(p.Topic) != "ev/a" || string(p.Payload) != "before the edit" || offsetOf(t, p) != 1 {
		t.Fatalf("replay %s %q, want ev/a's record at offset 1 still in events", p.Topic, p.Payload)
	}
	pub = dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publishQoS1("ev/a", []byte("after the edit"), 1)
	p = sub.expectPublish()
	if _, ok := userProp(p, "saguin-offset"); ok || string(p.Payload) != "after the edit" {
		t.Fatalf("after the edit ev/a delivered %q with labels %v, want a broadcast message", p.Payload, userProps(&p.Properties))
	}
}

// D1.9: a publish no filter claims - a mistyped channel topic - is a
// broadcast answered 0x00 even with no subscriber (never 0x10), seen only as
// saguin_broadcast_unmatched_total.
func TestD1_9AMistypedChannelTopicIsABroadcastAnswered0x00AndCountedUnmatched(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP+"\nmin_scrape_interval: 60s", brokerConfig{Channels: appendChannels("events=ev/+/x")})
	pub := dialRaw(t, ob.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	for i, topic := range []string{"ev/a/y", "ev/a/x/extra", "ev/b/y"} {
		pub.publish(topic, []byte("typo"), 1, uint16(i+1))
		if code := pub.expectPuback(uint16(i + 1)); code != codec.Success {
			t.Fatalf("%s: PUBACK 0x%02x, want 0x00", topic, byte(code))
		}
	}
	_, body := ob.get(t, "GET", "/metrics")
	if v, ok := value(parseScrape(t, body)["saguin_broadcast_unmatched_total"]); !ok || v != 3 {
		t.Fatalf("saguin_broadcast_unmatched_total = %v (present %v), want 3", v, ok)
	}
}

// D1.11, A1.12: a 3.1.1 publisher's message into a channel is an ordinary
// record - a minted UUIDv7 Message ID, an offset and a receipt timestamp -
// as an MQTT 5 reader sees it.
func TestD1_11A311PublishIntoAChannelIsACompleteRecord(t *testing.T) {
	b := startBroker(t, brokerConfig{Channels: appendChannels("events=ev/#")})
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", nil)
	sub.mustSubscribe(1, "ev/#", 1)
	pub := dialRaw(t, b.addr, codec.Version311)
	pub.mustConnect("old-device", nil)
	pub.publishQoS1("ev/old", []byte("3.1.1"), 1)
	p := sub.expectPublish()
	id, _ := userProp(p, "saguin-id")
	ts, _ := userProp(p, "saguin-timestamp")
	if !uuidv7RE.MatchString(id) || offsetOf(t, p) != 1 || !regexp.MustCompile(`^\d{13}$`).MatchString(ts) {
		t.Fatalf("record from 3.1.1: %v, want a UUIDv7 saguin-id, saguin-offset 1 and a ms saguin-timestamp", userProps(&p.Properties))
	}
}

// D2.1, D2.2: a filter spanning two append channels is two deliveries, one
// position each: a durable consumer that acknowledged one channel's record
// and not the other's is given again only the one it did not.
func TestD2_2AFilterOverTwoAppendChannelsHoldsOnePositionEach(t *testing.T) {
	b := startBroker(t, brokerConfig{Channels: appendChannels("left=p/a/#", "right=p/b/#")})
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("both", session(600))
	sub.mustSubscribe(1, "p/#", 1)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publishQoS1("p/a/1", []byte("left record"), 1)
	pub.publishQoS1("p/b/1", []byte("right record"), 2)
	seen := map[string]bool{}
	for range 2 {
		p := sub.expectPublish()
		channel, _ := userProp(p, "saguin-channel")
		seen[channel] = true
		if channel == "left" {
			sub.ackDelivery(p)
		}
	}
	if !seen["left"] || !seen["right"] {
		t.Fatalf("deliveries named channels %v, want left and right", seen)
	}
	sub.leave()
	back := resume(t, b.addr, codec.Version5, "both", 600)
	back.expectValue("p/b/1", "right record", "resume: the unacknowledged channel's record")
	back.expectNothing("the acknowledged channel's record: its position moved on its own")
}

// D2.4: a filter matching nothing yet is granted, and serves what is
// published under it next.
func TestD2_4AFilterMatchingNothingYetIsGranted(t *testing.T) {
	b := startBroker(t, brokerConfig{Channels: appendChannels("events=ev/#")})
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("early", nil)
	if got := sub.subscribe(1, "not/yet/+/#", 1); len(got) != 1 || got[0] != codec.GrantedQoS1 {
		t.Fatalf("SUBACK %v, want 0x01", got)
	}
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publishQoS1("not/yet/here", []byte("now"), 1)
	if p := sub.expectPublish(); string(p.Payload) != "now" {
		t.Fatalf("got %q", p.Payload)
	}
}

// D2.7: a filter needs the read grant on every channel it touches, and a
// topic: rule where it can match broadcast topics; it is granted whole or
// refused 0x87, never served in part.
func TestD2_7AFilterNeedsTheGrantOfEveryChannelItTouches(t *testing.T) {
	saguinOnly(t, "the test needs a saguin started with its own acl_file")
	dir := t.TempDir()
	pw := writePasswd(t, dir, map[string]string{"one": "pw1", "two": "pw2"})
	acl := `roles:
  left-and-broadcast:
    - channel: left
      allow: [read]
    - topic: "p/#"
      allow: [read]
  both-channels:
    - channel: left
      allow: [read]
    - channel: right
      allow: [read]
users:
  one: [left-and-broadcast]
  two: [both-channels]
`
	if err := os.WriteFile(filepath.Join(dir, "acl.yaml"), []byte(acl), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startBrokerIn(t, dir, brokerConfig{
		MQTT:     "password_file: " + pw + "\nacl_file: " + filepath.Join(dir, "acl.yaml"),
		Channels: appendChannels("left=p/a/#", "right=p/b/#"),
	})
	for _, k := range []struct {
		user, pass, filter string
		want               codec.ReasonCode
	}{
		{"one", "pw1", "p/a/#", codec.GrantedQoS1},       // left only
		{"one", "pw1", "p/c/#", codec.GrantedQoS1},       // broadcast only
		{"one", "pw1", "p/#", codec.NotAuthorized},       // touches right too
		{"one", "pw1", "p/+/x", codec.NotAuthorized},     // p/b/x is right's
		{"two", "pw2", "p/b/#", codec.GrantedQoS1},       // right only
		{"two", "pw2", "p/#", codec.NotAuthorized},       // can match broadcast p/c/...
		{"two", "pw2", "p/+/x", codec.NotAuthorized},     // p/c/x is broadcast
		{"two", "pw2", "p/{a,b}/x", codec.NotAuthorized}, // a literal level: broadcast
	} {
		c := dialRaw(t, b.addr, codec.Version5)
		c.mustConnect(clientID(t, k.user), login(k.user, k.pass))
		if got := c.subscribe(1, k.filter, 1); len(got) != 1 || got[0] != k.want {
			t.Errorf("%s subscribing %s: SUBACK %v, want 0x%02x", k.user, k.filter, got, byte(k.want))
		}
		c.disconnect()
	}
}

// D3.3: a $saguin/ topic that must name a channel of one kind is answered
// 0x90 for a channel of another kind, with a Reason String saying which.
func TestD3_3AReservedTopicNamingTheWrongKindIs0x90SayingWhich(t *testing.T) {
	b := startBroker(t, brokerConfig{Channels: appendChannels("events=ev/#") + latestChannel + "\n" + queueChannel})
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect("asker", nil)
	for i, k := range []struct{ topic, kind string }{
		{"$saguin/consumer/state/seek", "latest"},
		{"$saguin/consumer/jobs/seek", "queue"},
		{"$saguin/queue/events/response", "append"},
		{"$saguin/queue/state/response", "latest"},
	} {
		id := uint16(i + 1)
		c.sendPublish(&codec.Publish{QoS: 1, PacketID: id, Topic: []byte(k.topic), Payload: []byte("0")})
		a := c.expectAckPacket(codec.TypePuback, id)
		if a.ReasonCode != codec.TopicNameInvalid || !strings.Contains(string(a.Properties.ReasonString), k.kind) {
			t.Errorf("%s: PUBACK 0x%02x %q, want 0x90 with a Reason String naming %s", k.topic, byte(a.ReasonCode), a.Properties.ReasonString, k.kind)
		}
	}
}

// D3.5, D3.6: nothing under $saguin/ can be watched: a seek's reply on the
// default reply topic reaches the seeker and not a subscriber on #.
func TestD3_6AHashSubscriberNeverSeesTheReservedSpace(t *testing.T) {
	b := startBroker(t, brokerConfig{Channels: appendChannels("events=ev/#")})
	watch := dialRaw(t, b.addr, codec.Version5)
	watch.mustConnect("watch", nil)
	watch.mustSubscribe(1, "#", 1)
	seeker := dialRaw(t, b.addr, codec.Version5)
	seeker.mustConnect("seeker", session(60))
	seeker.mustSubscribe(1, "$saguin/consumer/events/seek/reply", 1)
	reply, code := seeker.seekAs("events", "0", "", 1)
	if code != codec.Success || reply == nil || string(reply.Topic) != "$saguin/consumer/events/seek/reply" {
		t.Fatalf("seek: PUBACK 0x%02x, reply %v, want 0x00 and a reply on the default reply topic", byte(code), reply)
	}
	watch.expectNothing("a reply in $saguin/ delivered to a # subscriber")
}

// D3.7: a channel filter whose first level is a wildcard or begins with $
// refuses the start, naming the channel.
func TestD3_7AChannelFilterMustSpellOutItsFirstLevel(t *testing.T) {
	saguinOnly(t, "a configuration refused at start")
	for _, filter := range []string{"+/x", "#", "$sys/x", "$saguin/x"} {
		code, log := startFailing(t, brokerConfig{Channels: appendChannels("bad=" + filter)}, t.TempDir())
		if code != 1 || !strings.Contains(log, "bad") {
			t.Errorf("filter %q: exit %d, want 1 naming channel bad:\n%s", filter, code, log)
		}
	}
}

// D3.10: at QoS 2 the code a $saguin/ topic earns is carried on the PUBREC.
func TestD3_10AReservedTopicAtQoS2IsAnsweredOnThePubrec(t *testing.T) {
	b := startBroker(t, brokerConfig{Channels: latestChannel})
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect("asker", nil)
	for i, topic := range []string{"$saguin/nothing/here", "$saguin/consumer/state/seek", "$saguin/consumer/none/seek"} {
		id := uint16(i + 1)
		c.sendPublish(&codec.Publish{QoS: 2, PacketID: id, Topic: []byte(topic), Payload: []byte("0")})
		if code := c.expectAck(codec.TypePubrec, id); code != codec.TopicNameInvalid {
			t.Errorf("%s at QoS 2: PUBREC 0x%02x, want 0x90", topic, byte(code))
		}
	}
}

// D3's SUBACK table: the seek reply topic of an append channel is granted
// (E24: 0x87 for a name that is none), on MQTT 5 and 3.1.1; every other
// filter under $saguin/, any $share/ group over $saguin/ or $SYS/, and $SYS/
// itself are 0x87 (3.1.1's 0x80).
func TestD3SubackTableForTheReservedSpace(t *testing.T) {
	b := startBroker(t, brokerConfig{Channels: appendChannels("events=ev/#") + latestChannel})
	versions(t, func(t *testing.T, v byte) {
		c := dialRaw(t, b.addr, v)
		c.mustConnect("sub", nil)
		refused := refusedCode(v, codec.NotAuthorized, codec.SubackFailure311)
		for i, k := range []struct {
			filter string
			want   codec.ReasonCode
		}{
			{"$saguin/consumer/events/seek/reply", codec.GrantedQoS1},
			{"$saguin/consumer/state/seek/reply", refused},
			{"$saguin/consumer/nope/seek/reply", refused},
			{"$saguin/consumer/events/seek", refused},
			{"$saguin/catalogue/events", refused},
			{"$saguin/+/events/seek/reply", refused},
			{"$share/g/$saguin/consumer/events/seek/reply", refused},
			{"$share/g/$SYS/broker/uptime", refused},
			{"$SYS/broker/uptime", refused},
		} {
			if got := c.subscribe(uint16(i+1), k.filter, 1); len(got) != 1 || got[0] != k.want {
				t.Errorf("%s: SUBACK %v, want 0x%02x", k.filter, got, byte(k.want))
			}
		}
	})
}

// D4.7: every refused filter is counted in
// saguin_subscriptions_refused_total under the code decided, a 3.1.1
// client's wire 0x80 under its real reason.
func TestD4_7RefusedFiltersAreCountedUnderTheDecidedReason(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP+"\nmin_scrape_interval: 60s", brokerConfig{})
	old := dialRaw(t, ob.addr, codec.Version311)
	old.mustConnect("old", nil)
	if got := old.subscribe(1, "$saguin/#", 1); len(got) != 1 || got[0] != codec.SubackFailure311 {
		t.Fatalf("3.1.1 SUBACK %v, want 0x80", got)
	}
	c := dialRaw(t, ob.addr, codec.Version5)
	c.mustConnect("new", nil)
	c.subscribe(1, "$SYS/#", 1)
	c.subscribe(2, "$saguin/queue/#", 1)
	_, body := ob.get(t, "GET", "/metrics")
	f := parseScrape(t, body)["saguin_subscriptions_refused_total"]
	if v, _ := value(f, "reason", "not authorized"); v != 2 {
		t.Errorf(`saguin_subscriptions_refused_total{reason="not authorized"} = %v, want 2 (one 3.1.1, one MQTT 5)`, v)
	}
	if v, _ := value(f, "reason", "topic filter invalid"); v != 1 {
		t.Errorf(`saguin_subscriptions_refused_total{reason="topic filter invalid"} = %v, want 1`, v)
	}
}

// D1.12: a Will is checked on its way into a channel like any publish: one
// that would pass the channel's max_bytes is not stored, and the refusal is
// logged naming its client and code.
func TestD1_12AWillIntoAFullChannelIsRefusedAndLogged(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "max_bytes: 200")
	dev := dialRaw(t, b.addr, codec.Version5)
	dev.mustConnect("dying", will("ev/will", strings.Repeat("w", 300), 1, false, 0))
	dev.drop()
	if b.log.wait(regexp.MustCompile(`Will not published.*client_id=dying.*code="Quota exceeded"`), waitLong) == "" {
		t.Fatal("no warn line for the Will the channel refused")
	}
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("reader", nil)
	sub.mustSubscribe(1, "ev/#", 1)
	sub.expectNothing("a Will past max_bytes stored anyway")
}

// D8.1: a Will into an append channel is a record like a publish: its
// saguin-id is the Message ID, every other saguin- property is stripped,
// its other User Properties and publish properties are kept, and it gets
// an offset.
func TestD8_1AWillIntoAnAppendChannelIsAnOrdinaryRecord(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("reader", nil)
	sub.mustSubscribe(1, "ev/#", 1)
	dev := dialRaw(t, b.addr, codec.Version5)
	dev.mustConnect("dying", both(will("ev/will", "gone", 1, false, 0), func(c *codec.Connect) {
		c.WillProperties.AddUser([]byte("saguin-id"), []byte("will-0001"))
		c.WillProperties.AddUser([]byte("saguin-bogus"), []byte("x"))
		c.WillProperties.AddUser([]byte("site"), []byte("north"))
		c.WillProperties.ContentType = []byte("text/plain")
		c.WillProperties.Present.Set(codec.PropContentType)
	}))
	dev.drop()
	p := sub.expectPublish()
	id, _ := userProp(p, "saguin-id")
	site, _ := userProp(p, "site")
	_, bogus := userProp(p, "saguin-bogus")
	if string(p.Payload) != "gone" || id != "will-0001" || site != "north" || bogus || offsetOf(t, p) != 1 ||
		string(p.Properties.ContentType) != "text/plain" {
		t.Fatalf("Will record %q %v content type %q, want saguin-id will-0001, site=north, no saguin-bogus, offset 1, text/plain",
			p.Payload, userProps(&p.Properties), p.Properties.ContentType)
	}
}

// D8.4: a retained Will into an append channel is admitted (CONNACK 0x00)
// and stored; RETAIN reaches only a Retain As Published subscriber.
func TestD8_4ARetainedWillIntoAnAppendChannelIsAdmitted(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	dev := dialRaw(t, b.addr, codec.Version5)
	if ack := dev.connect("dying", will("ev/will", "retained gone", 1, true, 0)); ack.ReasonCode != codec.Success {
		t.Fatalf("CONNACK 0x%02x for a retained Will into append, want 0x00", byte(ack.ReasonCode))
	}
	dev.drop()
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("reader", nil)
	sub.subscribeWith(1, nil, codec.Subscription{Filter: []byte("ev/#"), QoS: 1, RetainAsPublished: true})
	if p := sub.expectPublish(); string(p.Payload) != "retained gone" || !p.Retain {
		t.Fatalf("replayed %q RETAIN %v, want the Will's record with RETAIN for Retain As Published", p.Payload, p.Retain)
	}
}

// D9.1: a retention sweep's removals are counted in
// saguin_channel_retention_removed_total for the channel, and
// saguin_channel_records is next - floor after it.
func TestD9_1RetentionRemovalsAreCountedForTheChannel(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP+"\nmin_scrape_interval: 60s", brokerConfig{
		Channels: "events:\n  type: append\n  filter: ev/#\n  retention_bytes: 600"})
	pub := dialRaw(t, ob.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	for i := uint16(1); i <= 20; i++ {
		pub.publishQoS1("ev/r", []byte(strings.Repeat("r", 100)), i)
	}
	watch := dialRaw(t, ob.addr, codec.Version5)
	watch.mustConnect("watcher", freshSession(300))
	waitFloorAbove(t, watch, "events", 1)
	floor := floorOf(t, watch, "events", 1000)
	_, body := ob.get(t, "GET", "/metrics")
	fams := parseScrape(t, body)
	removed, _ := value(fams["saguin_channel_retention_removed_total"], "channel", "events")
	records, _ := value(fams["saguin_channel_records"], "channel", "events")
	if removed < float64(floor-1) || removed == 0 {
		t.Fatalf("retention_removed_total = %v, want at least %d (the floor moved to %d)", removed, floor-1, floor)
	}
	if records != 20-removed {
		t.Fatalf("saguin_channel_records = %v, want next - floor = %v", records, 20-removed)
	}
}
