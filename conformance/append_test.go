package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// Append channels through the binary (issue 11; checklist-channels.md A).
// Each test starts its own broker with an append channel "events" on ev/#.

// appendChannelOn is the configuration of an append channel "events" on
// filter, to follow saguinYAML.
func appendChannelOn(filter string) string {
	return "\nchannels:\n  events:\n    type: append\n    filter: " + filter + "\n"
}

// startAppend runs saguin with the events channel on storage, extra lines
// under broker, and extra channel keys under events.
func startAppend(t *testing.T, dir, storage, broker, channelKeys string) *brokerProc {
	t.Helper()
	y := saguinYAML(storage, broker) + appendChannelOn("ev/#")
	if channelKeys != "" {
		for _, l := range strings.Split(strings.TrimSpace(channelKeys), "\n") {
			y += "    " + l + "\n"
		}
	}
	return startSaguin(t, dir, y)
}

// appendPublisher is an MQTT 5 publisher on b.
func appendPublisher(t *testing.T, b *brokerProc) *raw {
	t.Helper()
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect(clientID(t, "pub"), nil)
	return pub
}

// durableConsumer is a durable consumer id of topic at qos on b: a session
// kept 300 s after its connection, begun new.
func durableConsumer(t *testing.T, b *brokerProc, v byte, id, topic string, qos byte) *raw {
	t.Helper()
	sub := dialRaw(t, b.addr, v)
	sub.mustConnect(id, freshSession(300))
	sub.mustSubscribe(1, topic, qos)
	return sub
}

// userProp is the first value of key, "" and false when absent.
func userProp(p *codec.Publish, key string) (string, bool) {
	for _, u := range p.Properties.User {
		if string(u.Key) == key {
			return string(u.Value), true
		}
	}
	return "", false
}

func offsetOf(t *testing.T, p *codec.Publish) uint64 {
	t.Helper()
	v, ok := userProp(p, "saguin-offset")
	if !ok {
		t.Fatalf("delivery %q carries no saguin-offset: %v", p.Payload, userProps(&p.Properties))
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func payloads(ps []*codec.Publish) []string {
	var out []string
	for _, p := range ps {
		out = append(out, string(p.Payload))
	}
	return out
}

var uuidv7RE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// A1.3, A1.6, A1.7, A1.8, A2.1, A2.3: a record keeps the publisher's
// saguin-id as its Message ID (or gets a UUIDv7), its User Properties in
// order with repeats, its publish properties, and loses every other saguin-
// name; a delivery carries saguin-id, saguin-offset, saguin-timestamp and,
// with an expiry, saguin-expires.
func TestAppendRecordIdentityHeadersAndLabels(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	p := &codec.Publish{Topic: []byte("ev/a"), Payload: []byte("one")}
	for _, kv := range [][2]string{{"b", "1"}, {"saguin-id", "my-id"}, {"a", "2"}, {"saguin-offset", "999"}, {"b", "3"}} {
		p.Properties.AddUser([]byte(kv[0]), []byte(kv[1]))
	}
	p.Properties.ContentType = []byte("text/plain")
	p.Properties.Present.Set(codec.PropContentType)
	if code := pub.publishAs(p, 1); code != codec.Success {
		t.Fatalf("PUBACK 0x%02x", byte(code))
	}
	p2 := &codec.Publish{Topic: []byte("ev/b"), Payload: []byte("two")}
	p2.Properties.MessageExpiry = 3600
	p2.Properties.Present.Set(codec.PropMessageExpiry)
	if code := pub.publishAs(p2, 2); code != codec.Success {
		t.Fatalf("PUBACK 0x%02x", byte(code))
	}

	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", nil)
	sub.mustSubscribe(1, "ev/#", 1)
	got := sub.collect(2)
	if len(got) != 2 {
		t.Fatalf("got %v, want the two records replayed", payloads(got))
	}
	first := userProps(&got[0].Properties)
	want := []string{"b=1", "a=2", "b=3"}
	if len(first) < 3 || strings.Join(first[:3], ",") != strings.Join(want, ",") {
		t.Fatalf("headers %v, want %v first, in order", first, want)
	}
	if id, _ := userProp(got[0], "saguin-id"); id != "my-id" {
		t.Errorf("saguin-id %q, want the publisher's my-id", id)
	}
	if o := offsetOf(t, got[0]); o != 1 {
		t.Errorf("first offset %d, want 1", o)
	}
	for _, u := range got[0].Properties.User {
		if string(u.Key) == "saguin-offset" && string(u.Value) == "999" {
			t.Error("the publisher's saguin-offset reached the consumer")
		}
	}
	if ts, ok := userProp(got[0], "saguin-timestamp"); !ok {
		t.Error("no saguin-timestamp")
	} else if ms, _ := strconv.ParseInt(ts, 10, 64); time.Since(time.UnixMilli(ms)).Abs() > time.Minute {
		t.Errorf("saguin-timestamp %s is not the receipt time in Unix ms", ts)
	}
	if _, ok := userProp(got[0], "saguin-expires"); ok {
		t.Error("saguin-expires on a record published with no expiry")
	}
	if string(got[0].Properties.ContentType) != "text/plain" {
		t.Errorf("Content Type %q not delivered as published", got[0].Properties.ContentType)
	}
	if id, _ := userProp(got[1], "saguin-id"); !uuidv7RE.MatchString(id) {
		t.Errorf("minted saguin-id %q is not a UUIDv7", id)
	}
	if o := offsetOf(t, got[1]); o != 2 {
		t.Errorf("second offset %d, want 2", o)
	}
	if _, ok := userProp(got[1], "saguin-expires"); !ok || got[1].Properties.MessageExpiry == 0 || got[1].Properties.MessageExpiry > 3600 {
		t.Errorf("expiry %d / saguin-expires missing", got[1].Properties.MessageExpiry)
	}
	if _, ok := userProp(got[0], "saguin-channel"); ok {
		t.Error("saguin-channel on a filter reaching one channel")
	}
}

// A4.1, A2.11, A2.13, A12.1: a new consumer replays everything from the
// floor in offset order, then what follows live; a 3.1.1 one gets topic and
// payload only.
func TestAppendReplayFromFloorInOffsetOrder(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	versions(t, func(t *testing.T, v byte) {
		topic := "ev/" + uniq(t)
		pub := dialRaw(t, b.addr, v)
		pub.mustConnect(clientID(t, "pub"), nil)
		for i := 1; i <= 5; i++ {
			pub.publishQoS1(topic, []byte(fmt.Sprint("r", i)), uint16(i))
		}
		sub := dialRaw(t, b.addr, v)
		sub.mustConnect(clientID(t, "sub"), nil)
		sub.mustSubscribe(1, topic, 1)
		pub.publishQoS1(topic, []byte("live"), 9)
		got := sub.readUntil("live")
		if strings.Join(payloads(got), ",") != "r1,r2,r3,r4,r5" {
			t.Fatalf("replay %v, want r1..r5 in order", payloads(got))
		}
		for _, p := range got {
			if p.Retain {
				t.Fatal("RETAIN on an append replay")
			}
			if v != codec.Version5 && len(p.Properties.User) != 0 {
				t.Fatalf("3.1.1 delivery carries properties")
			}
		}
		if v == codec.Version5 {
			for i := 1; i < len(got); i++ {
				if offsetOf(t, got[i]) != offsetOf(t, got[i-1])+1 {
					t.Fatalf("offsets not consecutive: %d then %d", offsetOf(t, got[i-1]), offsetOf(t, got[i]))
				}
			}
		}
	})
}

// A4.2: on start: tail a reader with no position gets only what follows.
func TestAppendStartTailServesOnlyWhatFollows(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "start: tail")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publishQoS1("ev/t", []byte("before"), 1)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", nil)
	sub.mustSubscribe(1, "ev/#", 1)
	pub.publishQoS1("ev/t", []byte("after"), 2)
	pub.publishQoS1("ev/t", []byte("end"), 3)
	if got := payloads(sub.readUntil("end")); strings.Join(got, ",") != "after" {
		t.Fatalf("got %v, want only after", got)
	}
}

// A3.1, A3.6, A3.8, A4.4, A12.1: a durable consumer (MQTT 5 Clean Start 0
// with an expiry; 3.1.1 cleanSession 0) resumes at its position and gets
// exactly what was published while it was away.
func TestAppendDurableConsumerResumesAtItsPosition(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	versions(t, func(t *testing.T, v byte) {
		topic := "ev/" + uniq(t)
		id := clientID(t, "durable")
		pub := dialRaw(t, b.addr, v)
		pub.mustConnect(clientID(t, "pub"), nil)
		for i := 1; i <= 3; i++ {
			pub.publishQoS1(topic, []byte(fmt.Sprint("r", i)), uint16(i))
		}
		pub.publishQoS1(topic, []byte("m1"), 4)
		sub := durableConsumer(t, b, v, id, topic, 1)
		if got := payloads(sub.readUntil("m1")); len(got) != 3 {
			t.Fatalf("first read %v", got)
		}
		sub.disconnect()
		pub.publishQoS1(topic, []byte("away1"), 5)
		pub.publishQoS1(topic, []byte("away2"), 6)
		pub.publishQoS1(topic, []byte("m2"), 7)
		sub = dialRaw(t, b.addr, v)
		if ack := sub.mustConnect(id, session(300)); !ack.SessionPresent {
			t.Fatal("Session Present 0 for a kept session")
		}
		if got := payloads(sub.readUntil("m2")); strings.Join(got, ",") != "away1,away2" {
			t.Fatalf("resumed with %v, want away1,away2", got)
		}
	})
}

// A2.7: RETAIN is never set on an append delivery, except for a
// subscription asking Retain As Published, which gets the publisher's flag.
func TestAppendRetainOnlyForRetainAsPublished(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	p := &codec.Publish{Topic: []byte("ev/r"), Payload: []byte("kept"), Retain: true}
	if code := pub.publishAs(p, 1); code != codec.Success {
		t.Fatalf("retained publish into an append channel: 0x%02x, want 0x00", byte(code))
	}
	plain := dialRaw(t, b.addr, codec.Version5)
	plain.mustConnect("plain", nil)
	plain.mustSubscribe(1, "ev/r", 1)
	if got := plain.collect(1); len(got) != 1 || got[0].Retain {
		t.Fatalf("plain subscriber: %d deliveries, RETAIN set", len(got))
	}
	rap := dialRaw(t, b.addr, codec.Version5)
	rap.mustConnect("rap", nil)
	if ack := rap.subscribeWith(1, nil, codec.Subscription{Filter: []byte("ev/r"), QoS: 1, RetainAsPublished: true}); ack.ReasonCodes[0] != 1 {
		t.Fatalf("SUBACK %v", ack.ReasonCodes)
	}
	if got := rap.collect(1); len(got) != 1 || !got[0].Retain {
		t.Fatal("Retain As Published subscriber did not get the publisher's RETAIN")
	}
}

// A4.10: Retain Handling 2 with no stored position: only what arrives next.
func TestAppendRetainHandling2StartsAtTheHead(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publishQoS1("ev/h", []byte("old"), 1)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", nil)
	sub.subscribeWith(1, nil, codec.Subscription{Filter: []byte("ev/h"), QoS: 1, RetainHandling: 2})
	pub.publishQoS1("ev/h", []byte("new"), 2)
	pub.publishQoS1("ev/h", []byte("end"), 3)
	if got := payloads(sub.readUntil("end")); strings.Join(got, ",") != "new" {
		t.Fatalf("got %v, want new only", got)
	}
}

// A8.1, A8.3: No Local withholds the client's own records (by the publisher
// id stored on the record) and steps over them.
func TestAppendNoLocalFromTheStoredPublisherID(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	me := dialRaw(t, b.addr, codec.Version5)
	me.mustConnect("me", nil)
	me.publishQoS1("ev/n", []byte("mine"), 1)
	other := dialRaw(t, b.addr, codec.Version5)
	other.mustConnect("other", nil)
	other.publishQoS1("ev/n", []byte("theirs"), 1)
	other.publishQoS1("ev/n", []byte("end"), 2)
	me.subscribeWith(2, nil, codec.Subscription{Filter: []byte("ev/n"), QoS: 1, NoLocal: true})
	if got := payloads(me.readUntil("end")); strings.Join(got, ",") != "theirs" {
		t.Fatalf("got %v, want theirs only", got)
	}
}

// A1.20, A1.21: a QoS 2 publish is held with no offset until its PUBREL
// and written then; a reader sees nothing before.
func TestAppendQoS2HeldUntilPubrelThenWritten(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	versions(t, func(t *testing.T, v byte) {
		topic := "ev/" + uniq(t)
		pub := dialRaw(t, b.addr, v)
		pub.mustConnect(clientID(t, "pub"), nil)
		pub.publish(topic, []byte("exactly"), 2, 1)
		if code := pub.expectAck(codec.TypePubrec, 1); code != codec.Success {
			t.Fatalf("PUBREC 0x%02x", byte(code))
		}
		sub := dialRaw(t, b.addr, v)
		sub.mustConnect(clientID(t, "sub"), nil)
		sub.mustSubscribe(1, topic, 1)
		sub.expectNothing("a held QoS 2 publish is invisible to readers")
		pub.sendAck(codec.TypePubrel, 1)
		if code := pub.expectAck(codec.TypePubcomp, 1); code != codec.Success {
			t.Fatalf("PUBCOMP 0x%02x", byte(code))
		}
		if got := sub.collect(1); len(got) != 1 || string(got[0].Payload) != "exactly" {
			t.Fatalf("after PUBREL: %v", payloads(got))
		}
	})
}

// A1.19: at the channel's max_bytes the publish is refused 0x97 and nothing
// is removed; 3.1.1 is closed instead (A1.15).
func TestAppendMaxBytesRefuses0x97(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "max_bytes: 200")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	big := []byte(strings.Repeat("x", 100))
	pub.publishQoS1("ev/f", big, 1)
	p := &codec.Publish{Topic: []byte("ev/f"), Payload: big}
	if code := pub.publishAs(p, 2); code != codec.QuotaExceeded {
		t.Fatalf("PUBACK 0x%02x at max_bytes, want 0x97", byte(code))
	}
	old := dialRaw(t, b.addr, codec.Version311)
	old.mustConnect("old", nil)
	old.publish("ev/f", big, 1, 1)
	old.expectClosed()
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", nil)
	sub.mustSubscribe(1, "ev/#", 1)
	if got := sub.collect(1); len(got) != 1 {
		t.Fatalf("%d records kept, want the one stored", len(got))
	}
}

// A7.1: a record larger than the consumer's Maximum Packet Size disconnects
// it with 0x95; it is never skipped.
func TestAppendRecordTooLargeForConsumerDisconnects0x95(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publishQoS1("ev/big", []byte(strings.Repeat("y", 600)), 1)
	small := func(c *codec.Connect) {
		c.Properties.MaximumPacketSize = 300
		c.Properties.Present.Set(codec.PropMaximumPacketSize)
	}
	for i := 0; i < 2; i++ { // reconnecting with the same bound: disconnected again
		sub := dialRaw(t, b.addr, codec.Version5)
		sub.mustConnect("small", both(session(300), small))
		if i == 0 {
			sub.mustSubscribe(1, "ev/#", 1)
		}
		sub.expectDisconnect(codec.PacketTooLarge)
	}
}

// Restart on both providers (issue 11 "Tests"): every acknowledged record is
// there once, in order, and a stored position resumes where it was - kill -9
// on sqlite, SIGTERM on memory with snapshot_dir.
func TestAppendRestartKill9SQLite(t *testing.T) {
	appendRestart(t, sqliteStorage, (*brokerProc).kill9)
}

func TestAppendRestartSIGTERMMemorySnapshot(t *testing.T) {
	appendRestart(t, snapshotStorage, (*brokerProc).stop)
}

func appendRestart(t *testing.T, storage string, stop func(*brokerProc)) {
	dir := t.TempDir()
	const ackCommit = "session:\n  ack_commit_interval: 10ms"
	b := startAppend(t, dir, storage, ackCommit, "")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	const n = 200
	for i := 1; i <= n; i++ {
		pub.publishQoS1("ev/x", []byte(fmt.Sprint(i)), uint16(i))
	}
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("durable", freshSession(3600))
	sub.mustSubscribe(1, "ev/#", 1)
	got := sub.collect(50)
	if len(got) < 50 {
		t.Fatalf("read %d before the restart", len(got))
	}
	// collect acknowledges the first 50 it reads; what its closing PINGRESP
	// brings behind them is delivered but never acknowledged.
	const acked = 50
	sub.disconnect() // the position is taken for writing now; what it did not store is replayed, never skipped
	stop(b)
	b = startAppend(t, dir, storage, ackCommit, "")
	sub = dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("durable", session(3600))
	pub = dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publishQoS1("ev/x", []byte("end"), 1)
	rest := sub.readUntil("end")
	if len(rest) == 0 {
		t.Fatal("nothing after the restart")
	}
	// Issue 11 "Restart tests": a stored position resumes where it was, at
	// most ack_commit_interval of acknowledgements replayed, never a record
	// skipped. Every acknowledgement was answered (collect's PINGRESP) before
	// the clean DISCONNECT, whose close waits for the position to be stored
	// (A3.11), so what was acknowledged since the last commit is nothing: the
	// first record after the restart is the first one never acknowledged. A
	// broker that lost the position and replayed from offset 1 fails here.
	first := offsetOf(t, rest[0])
	if first > acked+1 {
		t.Fatalf("resumed at %d after %d acknowledged: a record skipped", first, acked)
	}
	if first != acked+1 {
		t.Fatalf("resumed at %d after %d acknowledged and stored: %d acknowledged records replayed", first, acked, acked+1-first)
	}
	for i, p := range rest {
		if want := first + uint64(i); offsetOf(t, p) != want || string(p.Payload) != fmt.Sprint(want) {
			t.Fatalf("after the restart: offset %d payload %q, want %d", offsetOf(t, p), p.Payload, want)
		}
	}
	if last := offsetOf(t, rest[len(rest)-1]); last != n {
		t.Fatalf("last record %d, want %d: acknowledged records lost", last, n)
	}
}

// A3, with stock clients: mosquitto_sub -c -i is a durable consumer, and
// resumes where it stopped.
func TestAppendMosquittoSubDurableConsumer(t *testing.T) {
	subTool := needTool(t, "mosquitto_sub")
	pubTool := needTool(t, "mosquitto_pub")
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	host, port := hostPort(t, b.addr)
	publish := func(msgs ...string) {
		for _, m := range msgs {
			if out, err := exec.Command(pubTool, "-V", "5", "-h", host, "-p", port, "-q", "1", "-t", "ev/s", "-m", m).CombinedOutput(); err != nil {
				t.Fatalf("mosquitto_pub: %v %s", err, out)
			}
		}
	}
	read := func(n int) []string {
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		defer cancel()
		cmd := exec.CommandContext(ctx, subTool, "-V", "5", "-h", host, "-p", port, "-q", "1", "-c", "-i", "stock", "-x", "300", "-t", "ev/#", "-C", strconv.Itoa(n))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var lines []string
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		cmd.Wait()
		return lines
	}
	publish("a", "b")
	if got := read(2); strings.Join(got, ",") != "a,b" {
		t.Fatalf("first read %v", got)
	}
	publish("c")
	if got := read(1); strings.Join(got, ",") != "c" {
		t.Fatalf("resumed read %v, want c", got)
	}
}

// A13.1: a shared subscription over append is served only records written
// after it began, split across the group.
func TestAppendSharedSubscriptionServedLiveOnly(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publishQoS1("ev/g", []byte("before"), 1)
	m1 := dialRaw(t, b.addr, codec.Version5)
	m1.mustConnect("m1", nil)
	m1.mustSubscribe(1, "$share/g/ev/#", 1)
	m2 := dialRaw(t, b.addr, codec.Version5)
	m2.mustConnect("m2", nil)
	m2.mustSubscribe(1, "$share/g/ev/#", 1)
	for i := 0; i < 4; i++ {
		pub.publishQoS1("ev/g", []byte(fmt.Sprint("live", i)), uint16(2+i))
	}
	got := append(m1.collect(2), m2.collect(2)...)
	if len(got) != 4 {
		t.Fatalf("group got %v, want the four live records once each", payloads(got))
	}
	for _, p := range got {
		if string(p.Payload) == "before" {
			t.Fatal("a shared group was replayed history")
		}
	}
}

// seekAs publishes a seek at QoS 1 and returns the reply written to c (nil
// when none came before the PUBACK) and the PUBACK's code: the reply always
// comes first (A6.27). Records arriving meanwhile are acknowledged and kept
// in c.early.
func (c *raw) seekAs(channel, payload, responseTopic string, id uint16) (*codec.Publish, codec.ReasonCode) {
	reply, code, _ := c.seekSeeing(channel, payload, responseTopic, id)
	return reply, code
}

// seekSeeing is seekAs also returning the channel records that arrived
// before the PUBACK after the reply: every PUBLISH but one on the reply's
// topic (responseTopic, or under $saguin/).
func (c *raw) seekSeeing(channel, payload, responseTopic string, id uint16) (*codec.Publish, codec.ReasonCode, []*codec.Publish) {
	var early []*codec.Publish
	c.t.Helper()
	p := &codec.Publish{QoS: 1, PacketID: id, Topic: []byte("$saguin/consumer/" + channel + "/seek"), Payload: []byte(payload)}
	if responseTopic != "" && c.version == codec.Version5 {
		p.Properties.ResponseTopic = []byte(responseTopic)
		p.Properties.Present.Set(codec.PropResponseTopic)
		p.Properties.CorrelationData = []byte("corr-1")
		p.Properties.Present.Set(codec.PropCorrelationData)
	}
	c.sendPublish(p)
	var reply *codec.Publish
	for {
		h, body := c.read()
		switch h.Type {
		case codec.TypePublish:
			var q codec.Publish
			if err := q.Decode(h, body, c.version); err != nil {
				c.t.Fatal(err)
			}
			if t := string(q.Topic); t != responseTopic && !strings.HasPrefix(t, "$saguin/") {
				c.ackDelivery(&q)
				if reply != nil {
					early = append(early, &q) // from the new position, after the reply
				}
				continue
			}
			reply = &q
		case codec.TypePuback:
			var a codec.Ack
			if err := a.Decode(h, body, c.version); err != nil {
				c.t.Fatal(err)
			}
			return reply, a.ReasonCode, early
		default:
			c.t.Fatalf("want the seek's reply or PUBACK, got %s", h.Type)
		}
	}
}

// A6.2, A6.23, A6.24, A6.27, A6.28: seek 0 moves a durable consumer to the
// floor on its current connection; the reply - the stored offset, on the
// Response Topic with the Correlation Data echoed - comes before the PUBACK,
// and the records follow from there.
func TestSeekToFloorRepliesBeforePubackAndReplays(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	for i := 1; i <= 3; i++ {
		pub.publishQoS1("ev/s", []byte(fmt.Sprint("r", i)), uint16(i))
	}
	pub.publishQoS1("ev/s", []byte("m1"), 4)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("seeker", freshSession(300))
	sub.mustSubscribe(1, "ev/#", 1)
	sub.readUntil("m1")
	reply, code, early := sub.seekSeeing("events", "0", "my/replies", 7)
	if code != codec.Success {
		t.Fatalf("PUBACK 0x%02x", byte(code))
	}
	if reply == nil || string(reply.Topic) != "my/replies" || string(reply.Payload) != "1" || string(reply.Properties.CorrelationData) != "corr-1" {
		t.Fatalf("reply %+v, want 1 on my/replies with corr-1, before the PUBACK", reply)
	}
	pub.publishQoS1("ev/s", []byte("m2"), 5)
	if got := payloads(append(early, sub.readUntil("m2")...)); strings.Join(got, ",") != "r1,r2,r3,m1" {
		t.Fatalf("after seek 0: %v", got)
	}
	// -1: the end; nothing outstanding.
	reply, code = sub.seekAs("events", "-1", "", 8)
	if code != codec.Success || reply == nil || string(reply.Topic) != "$saguin/consumer/events/seek/reply" || string(reply.Payload) != "6" {
		t.Fatalf("seek -1: 0x%02x %+v", byte(code), reply)
	}
	sub.expectNothing("after seek -1")
}

// A6.13, A6.15, A6.16, A6.18, A6.20: the refusals - reply word, then PUBACK
// 0x83; 0x90 with no reply for a target that is not an append channel; a
// refused seek closes a 3.1.1 connection.
func TestSeekRefusals(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publishQoS1("ev/s", []byte("r1"), 1)
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect("seeker", freshSession(300))
	for _, tc := range []struct{ payload, word, prop string }{
		{"2026-08-14", "malformed", ""},
		{"-2", "malformed", ""},
		{"99", "beyond-end", "saguin-next=2"},
	} {
		reply, code := c.seekAs("events", tc.payload, "", 1)
		if code != codec.ImplementationSpecificError || reply == nil || string(reply.Payload) != tc.word {
			t.Fatalf("seek %q: 0x%02x %+v, want %s and 0x83", tc.payload, byte(code), reply, tc.word)
		}
		if tc.prop != "" && !strings.Contains(strings.Join(userProps(&reply.Properties), ","), tc.prop) {
			t.Fatalf("seek %q: reply properties %v, want %s", tc.payload, userProps(&reply.Properties), tc.prop)
		}
	}
	if reply, code := c.seekAs("nochannel", "0", "", 2); code != codec.TopicNameInvalid || reply != nil {
		t.Fatalf("seek on no channel: 0x%02x, reply %v; want 0x90 and none", byte(code), reply)
	}
	clean := dialRaw(t, b.addr, codec.Version5)
	clean.mustConnect("clean", nil)
	if reply, code := clean.seekAs("events", "0", "", 1); code != codec.ImplementationSpecificError || reply == nil || string(reply.Payload) != "no-session" {
		t.Fatalf("seek without a durable session: 0x%02x %+v", byte(code), reply)
	}
	old := dialRaw(t, b.addr, codec.Version311)
	old.mustConnect("old", session(0))
	old.publish("$saguin/consumer/events/seek", []byte("bogus"), 1, 1)
	for {
		h, _, err := old.next(waitLong)
		if err != nil {
			break // closed: 3.1.1 cannot be told 0x83
		}
		if h.Type == codec.TypePuback {
			t.Fatal("a refused 3.1.1 seek was acknowledged")
		}
	}
}

// A6, with a stock client: mosquitto_pub -D publish response-topic shows the
// reply (the landed offset) before its PUBACK.
func TestSeekWithMosquittoPubResponseTopic(t *testing.T) {
	pubTool := needTool(t, "mosquitto_pub")
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	host, port := hostPort(t, b.addr)
	out, err := exec.Command(pubTool, "-V", "5", "-h", host, "-p", port, "-q", "1", "-c", "-i", "stock-seeker", "-x", "300",
		"-t", "$saguin/consumer/events/seek", "-m", "0", "-D", "publish", "response-topic", "seek-reply", "-d").CombinedOutput()
	if err != nil {
		t.Fatalf("mosquitto_pub: %v\n%s", err, out)
	}
	s := string(out)
	reply, ack := strings.Index(s, "PUBLISH"), strings.Index(s, "PUBACK")
	if !strings.Contains(s, "received PUBLISH") || reply < 0 || ack < 0 {
		t.Fatalf("no reply seen:\n%s", s)
	}
	if strings.Index(s, "received PUBLISH") > strings.Index(s, "received PUBACK") {
		t.Fatalf("the PUBACK came before the reply:\n%s", s)
	}
}

// A11.1, A11.5, A11.6, A11.14-15: a saguin-filter declaration on a SUBSCRIBE
// delivers, on every filter of the packet, only the topics whose
// topic_hash mod partitions is a declared index - on an append channel and
// on broadcast alike - with the spec's own test vectors as the topics; a
// malformed one refuses every filter 0x83, one on $share/ refuses that
// filter alone.
func TestSaguinFilterPartitionsAppendAndBroadcast(t *testing.T) {
	y := saguinYAML(memoryStorage, "") + appendChannelOn("iot/#")
	b := startSaguin(t, t.TempDir(), y)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("slice", nil)
	declare := func(v ...string) func(*codec.Properties) {
		return func(p *codec.Properties) {
			for _, x := range v {
				p.AddUser([]byte("saguin-filter"), []byte(x))
			}
			p.Present.Set(codec.PropUserProperty)
		}
	}
	ack := sub.subscribeWith(1, declare("topic_hash(3, 1)"),
		codec.Subscription{Filter: []byte("iot/#"), QoS: 1},
		codec.Subscription{Filter: []byte("orders/#"), QoS: 1},
		codec.Subscription{Filter: []byte("a"), QoS: 1},
		codec.Subscription{Filter: []byte("$share/g/x/#"), QoS: 1})
	if got := ack.ReasonCodes; len(got) != 4 || got[0] != 1 || got[1] != 1 || got[2] != 1 || got[3] != codec.ImplementationSpecificError {
		t.Fatalf("SUBACK %v, want 1,1,1 and 0x83 for the shared filter", got)
	}
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	for i, tp := range []string{"iot/depot/events/dev-1", "iot/water/w-7/inspect", "orders/resize/thumbnails/42", "a"} {
		pub.publishQoS1(tp, []byte(tp), uint16(i+1))
	}
	// A channel's records and broadcast reach a subscriber by two paths
	// with no order between them: a marker on each, both in slice 1.
	pub.publishQoS1("a", []byte("end"), 9)
	pub.publishQoS1("iot/depot/events/dev-1", []byte("end"), 10)
	var got []string
	for ends := 0; ends < 2; {
		p := sub.expectPublishWithin(waitLong)
		sub.ackDelivery(p)
		if string(p.Payload) == "end" {
			ends++
			continue
		}
		got = append(got, string(p.Topic))
	}
	sort.Strings(got)
	if strings.Join(got, ",") != "a,iot/depot/events/dev-1" {
		t.Fatalf("delivered %v, want the two topics of slice 1 of 3 (mod 3 = 1)", got)
	}
	bad := dialRaw(t, b.addr, codec.Version5)
	bad.mustConnect("bad", nil)
	ack = bad.subscribeWith(1, declare("topic_hash(4, 0)", "topic_hash(6, 1)"),
		codec.Subscription{Filter: []byte("iot/#"), QoS: 1}, codec.Subscription{Filter: []byte("a"), QoS: 1})
	if got := ack.ReasonCodes; len(got) != 2 || got[0] != codec.ImplementationSpecificError || got[1] != codec.ImplementationSpecificError {
		t.Fatalf("differing counts: SUBACK %v, want 0x83 on every filter", got)
	}
}

// D5.1-D5.3, D5.5, D5.6: $saguin/catalogue/<channel> answers on the asking
// connection with the channel's name, type, filter as written and this
// client's verbs (all of the type's without an acl_file); the empty reply for
// a name that is no channel; 0x83 with no Response Topic, 0x90 for a name
// holding /; a QoS 0 request is dropped.
func TestCatalogueAnswersWhatAChannelIs(t *testing.T) {
	y := saguinYAML(memoryStorage, "") + appendChannelOn("iot/{a,b}/events/#")
	b := startSaguin(t, t.TempDir(), y)
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect("asker", nil)
	ask := c.askCatalogue
	reply, code := ask("events", 1, true)
	want := `{"name":"events","type":"append","filter":"iot/{a,b}/events/#","verbs":["write","read","seek"]}`
	if code != codec.Success || string(reply.Payload) != want || string(reply.Properties.CorrelationData) != "c1" || string(reply.Topic) != "cat/reply" {
		t.Fatalf("0x%02x %q", byte(code), reply.Payload)
	}
	if reply, code := ask("nochannel", 1, true); code != codec.Success || len(reply.Payload) != 0 {
		t.Fatalf("no channel: 0x%02x %q, want 0x00 and the empty reply", byte(code), reply.Payload)
	}
	c.publish("$saguin/catalogue/events", nil, 1, 2)
	if code := c.expectPuback(2); code != codec.ImplementationSpecificError {
		t.Fatalf("no Response Topic: 0x%02x, want 0x83", byte(code))
	}
	c.publish("$saguin/catalogue/a/b", nil, 1, 3)
	if code := c.expectPuback(3); code != codec.TopicNameInvalid {
		t.Fatalf("a name holding /: 0x%02x, want 0x90", byte(code))
	}
	ask("events", 0, true)
	c.expectNothing("a QoS 0 catalogue request is dropped")
}

// A1.22, A1.15: a QoS 2 publish into a channel already at its max_bytes is
// refused at the PUBREC, 0x97, and nothing is held (a PUBREL for it finds
// nothing: PUBCOMP 0x92); a 3.1.1 publisher is closed instead.
func TestAppendQoS2IntoAFullChannelRefused0x97AtPubrec(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "max_bytes: 200")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	big := []byte(strings.Repeat("x", 100))
	pub.publishQoS1("ev/f", big, 1)
	pub.publish("ev/f", big, 2, 2)
	if code := pub.expectAck(codec.TypePubrec, 2); code != codec.QuotaExceeded {
		t.Fatalf("PUBREC 0x%02x into a full channel, want 0x97", byte(code))
	}
	pub.sendAck(codec.TypePubrel, 2)
	if code := pub.expectAck(codec.TypePubcomp, 2); code != codec.PacketIdentifierNotFound {
		t.Fatalf("PUBCOMP 0x%02x for the refused publish, want 0x92: it was held", byte(code))
	}
	old := dialRaw(t, b.addr, codec.Version311)
	old.mustConnect("old", nil)
	old.publish("ev/f", big, 2, 1)
	old.expectClosed()
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sub", nil)
	sub.mustSubscribe(1, "ev/#", 1)
	if got := sub.collect(2); len(got) != 1 {
		t.Fatalf("%d records kept, want the one stored", len(got))
	}
}

// A3.11: a clean DISCONNECT stores the consumer's position before the
// connection is closed - with ack_commit_interval at its longest (1s), a
// kill -9 the moment the client sees its connection close on sqlite loses
// nothing it acknowledged: the session resumes after the last record it
// acknowledged, with none replayed.
func TestAppendPositionStoredBeforeACleanDisconnectCloses(t *testing.T) {
	dir := t.TempDir()
	const ackCommit = "session:\n  ack_commit_interval: 1s"
	b := startAppend(t, dir, sqliteStorage, ackCommit, "")
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	for i := 1; i <= 20; i++ {
		pub.publishQoS1("ev/d", []byte(fmt.Sprint(i)), uint16(i))
	}
	pub.publishQoS1("ev/d", []byte("m1"), 21)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("durable", freshSession(3600))
	sub.mustSubscribe(1, "ev/d", 1)
	if got := sub.readUntil("m1"); len(got) != 20 {
		t.Fatalf("read %d before the DISCONNECT, want 20", len(got))
	}
	// Another publisher keeps the database's one writer busy, so a position
	// written after the close rather than before it is still queued when
	// the kill lands.
	keepWriterBusy(t, b, "ev/flood")
	sub.disconnect() // returns once the broker closed the connection
	b.kill9()
	b = startAppend(t, dir, sqliteStorage, ackCommit, "")
	sub = dialRaw(t, b.addr, codec.Version5)
	if ack := sub.mustConnect("durable", session(3600)); !ack.SessionPresent {
		t.Fatal("Session Present 0 after the restart")
	}
	pub = dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publishQoS1("ev/d", []byte("m2"), 1)
	if got := payloads(sub.readUntil("m2")); len(got) != 0 {
		t.Fatalf("replayed %v after a clean DISCONNECT: its acknowledgements were not stored before the close", got)
	}
}

// keepWriterBusy floods b with QoS 1 publishes to topic, their PUBACKs
// unread, until the broker dies: the sqlite provider's one writer always has
// a publish waiting, so a write no client waits on is still queued when a
// kill -9 lands (notes-0004 "Group commit": waited-on writes go first). It
// returns once 200 publishes are on their way.
func keepWriterBusy(t *testing.T, b *brokerProc, topic string) {
	t.Helper()
	flood := dialRaw(t, b.addr, codec.Version5)
	flood.mustConnect("flood", nil)
	busy := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			p := &codec.Publish{QoS: 1, Topic: []byte(topic), Payload: make([]byte, 512), PacketID: uint16(i%65535 + 1)}
			if _, err := flood.nc.Write(p.Append(nil, codec.Version5)); err != nil {
				return // the broker was killed
			}
			if i == 200 {
				close(busy)
			}
		}
	}()
	<-busy
}

// A3.11, D11.18 (invariant 18: "what the DISCONNECT changes ... stored
// before the connection is closed"): a clean DISCONNECT setting Session
// Expiry 0 on a kept session ends it before the close - with the database's
// writer kept busy, a kill -9 the moment the client sees its connection
// close finds no session after the restart (Session Present 0).
func TestAppendSessionRecordStoredBeforeACleanDisconnectCloses(t *testing.T) {
	dir := t.TempDir()
	b := startAppend(t, dir, sqliteStorage, "", "")
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("leaver", freshSession(3600))
	sub.mustSubscribe(1, "ev/#", 1)
	keepWriterBusy(t, b, "ev/flood")
	d := &codec.Disconnect{}
	d.Properties.SessionExpiry = 0
	d.Properties.Present.Set(codec.PropSessionExpiry)
	sub.send(d.Append(nil, codec.Version5))
	sub.expectClosed()
	b.kill9()
	b = startAppend(t, dir, sqliteStorage, "", "")
	sub = dialRaw(t, b.addr, codec.Version5)
	if ack := sub.mustConnect("leaver", session(3600)); ack.SessionPresent {
		t.Fatal("Session Present 1 after a DISCONNECT that set Session Expiry 0 and a kill -9: the session's end was not stored before the close")
	}
}

// A6.19, E15: a seek is the seek verb on the channel it moves; a client the
// acl_file grants read but not seek there is refused PUBACK 0x87 with no
// reply, and its position does not move (3.1.1: the connection is closed).
func TestSeekRefusedByTheACLIs0x87(t *testing.T) {
	saguinOnly(t, "the test needs a saguin started with its own acl_file")
	dir := t.TempDir()
	pw := writePasswd(t, dir, map[string]string{"seeker": "pws", "reader": "pwr"})
	acl := "roles:\n  seeker:\n    - channel: events\n      allow: [read, seek]\n  reader:\n    - channel: events\n      allow: [read]\n" +
		"users:\n  seeker: [seeker]\n  reader: [reader]\n"
	if err := os.WriteFile(filepath.Join(dir, "acl.yaml"), []byte(acl), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startBrokerIn(t, dir, brokerConfig{MQTT: "password_file: " + pw + "\nacl_file: " + filepath.Join(dir, "acl.yaml"),
		Channels: "events:\n  type: append\n  filter: ev/#"})
	seeker := dialRaw(t, b.addr, codec.Version5)
	seeker.mustConnect("seeker-1", both(freshSession(300), login("seeker", "pws")))
	if reply, code := seeker.seekAs("events", "0", "my/replies", 1); code != codec.Success || reply == nil || string(reply.Payload) != "1" {
		t.Fatalf("granted seek: PUBACK 0x%02x, reply %v; want 0x00 and 1", byte(code), reply)
	}
	reader := dialRaw(t, b.addr, codec.Version5)
	reader.mustConnect("reader-1", both(freshSession(300), login("reader", "pwr")))
	reply, code := reader.seekAs("events", "0", "my/replies", 1)
	if code != codec.NotAuthorized {
		t.Fatalf("seek without the seek verb: PUBACK 0x%02x, want 0x87", byte(code))
	}
	if reply != nil {
		t.Fatalf("a seek the acl_file refused was answered %q on %s, want no reply", reply.Payload, reply.Topic)
	}
	b.log.wait(regexp.MustCompile(`publish refused.*client_id=reader-1.*no seek on channel events`), waitLong)
	old := dialRaw(t, b.addr, codec.Version311)
	old.mustConnect("reader-2", both(freshSession(300), login("reader", "pwr")))
	old.publish("$saguin/consumer/events/seek", []byte("0"), 1, 1)
	old.expectClosed()
}

// MQTT.js (A3.1, A3.8, A4.1, A4.4, A6.2, A6.23, A6.24, A6.27): a durable
// consumer replays the channel from the floor, resumes after a reconnect
// with clean: false at its position without subscribing again (Session
// Present 1), and a seek to 0 answers on its Response Topic with its
// Correlation Data before the records from the floor come again.
func TestAppendMQTTjsDurableConsumerResumesAndSeeks(t *testing.T) {
	node, dir := mqttJS(t)
	b := startAppend(t, t.TempDir(), memoryStorage, "", "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := runNode(ctx, node, dir, "append.js", b.addr, "ev/js", "events")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var res struct {
		Error          string
		Replay         []jsDelivery
		SessionPresent bool
		Resumed        []jsDelivery
		Seek           []jsDelivery
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Error != "" {
		t.Fatalf("append.js printed %q: %v", out, err)
	}
	payloadsOf := func(ds []jsDelivery) string {
		var s []string
		for _, d := range ds {
			s = append(s, d.Payload)
		}
		return strings.Join(s, ",")
	}
	if got := payloadsOf(res.Replay); got != "r1,r2,r3" {
		t.Fatalf("replay from the floor: %s, want r1,r2,r3", got)
	}
	for i, d := range res.Replay {
		if d.User["saguin-offset"] != fmt.Sprint(i+1) || d.Retain {
			t.Fatalf("replayed %+v: want saguin-offset %d and no RETAIN", d, i+1)
		}
	}
	if !res.SessionPresent {
		t.Fatal("reconnected with clean: false: Session Present 0")
	}
	if got := payloadsOf(res.Resumed); got != "a1,a2" {
		t.Fatalf("resumed with %s, want a1,a2 (what was published while it was away)", got)
	}
	if len(res.Seek) != 6 {
		t.Fatalf("after the seek: %+v", res.Seek)
	}
	if r := res.Seek[0]; r.Topic != "reply/ev/js" || r.Payload != "1" || r.Correlation == nil || *r.Correlation != "seek-1" {
		t.Fatalf("first after the seek: %+v, want the reply 1 on reply/ev/js with seek-1", r)
	}
	if got := payloadsOf(res.Seek[1:]); got != "r1,r2,r3,a1,a2" {
		t.Fatalf("after the seek's reply: %s, want the channel from its floor", got)
	}
}
