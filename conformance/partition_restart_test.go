package conformance

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/saguin-edge/saguin/broker/channel"
	"github.com/saguin-edge/saguin/codec"
)

// A subscription's saguin-filter declaration is restored with its session
// after a broker restart (RFC 0003 "Sessions: one owner, one ending": the
// subscriptions come back "with options and partition declarations"): the
// session that resumes without subscribing again is served only its slice,
// on an append channel, a latest channel and broadcast alike - what the
// broadcast log kept for it while it was away included. kill -9 on sqlite,
// SIGTERM on memory with snapshot_dir.
func TestSaguinFilterRestoredAfterARestartKill9SQLite(t *testing.T) {
	partitionRestart(t, sqliteStorage, (*brokerProc).kill9)
}

func TestSaguinFilterRestoredAfterARestartSIGTERMMemorySnapshot(t *testing.T) {
	partitionRestart(t, snapshotStorage, (*brokerProc).stop)
}

// sliceTopics are n topics under prefix whose slice of 3 (RFC 0003 "The
// hash, in full") is 1 when in is set, another slice otherwise.
func sliceTopics(prefix string, in bool, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		tp := fmt.Sprintf("%sk%d", prefix, i)
		if (channel.TopicHash(tp)%3 == 1) == in {
			out = append(out, tp)
		}
	}
	return out
}

func partitionRestart(t *testing.T, storage string, stop func(*brokerProc)) {
	dir := t.TempDir()
	y := saguinYAML(storage, "session:\n  ack_commit_interval: 10ms") + appendChannelOn("iot/#") +
		"  state:\n    type: latest\n    filter: st/#\n"
	b := startSaguin(t, dir, y)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("sliced", freshSession(3600))
	declare := func(p *codec.Properties) {
		p.AddUser([]byte("saguin-filter"), []byte("topic_hash(3, 1)"))
		p.Present.Set(codec.PropUserProperty)
	}
	ack := sub.subscribeWith(1, declare,
		codec.Subscription{Filter: []byte("iot/#"), QoS: 1},
		codec.Subscription{Filter: []byte("st/#"), QoS: 1},
		codec.Subscription{Filter: []byte("bc/#"), QoS: 1})
	if got := ack.ReasonCodes; len(got) != 3 || got[0] != 1 || got[1] != 1 || got[2] != 1 {
		t.Fatalf("SUBACK %v", got)
	}
	sub.disconnect()
	var want []string
	publish := func(round string) {
		pub := dialRaw(t, b.addr, codec.Version5)
		pub.mustConnect("pub-"+round, nil)
		id := uint16(1)
		for _, prefix := range []string{"iot/" + round + "/", "st/" + round + "/", "bc/" + round + "/"} {
			for _, tp := range sliceTopics(prefix, true, 2) {
				pub.publishQoS1(tp, []byte(round), id)
				want = append(want, tp)
				id++
			}
			for _, tp := range sliceTopics(prefix, false, 2) {
				pub.publishQoS1(tp, []byte(round), id)
				id++
			}
		}
		pub.disconnect()
	}
	publish("before") // owed to the session while it is away, then restored
	stop(b)
	b = startSaguin(t, dir, y)
	publish("after")
	// One marker per path (append, latest, broadcast), each in slice 1: the
	// three reach the session with no order between them.
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub-end", nil)
	var markers []string
	for i, prefix := range []string{"iot/end/", "st/end/", "bc/end/"} {
		tp := sliceTopics(prefix, true, 1)[0]
		markers = append(markers, tp)
		pub.publishQoS1(tp, []byte("end"), uint16(i+1))
	}
	sub = dialRaw(t, b.addr, codec.Version5)
	if ack := sub.mustConnect("sliced", session(3600)); !ack.SessionPresent {
		t.Fatal("Session Present 0 after the restart")
	}
	var got []string
	for ends := 0; ends < len(markers); {
		p := sub.expectPublishWithin(waitLong)
		sub.ackDelivery(p)
		if string(p.Payload) == "end" {
			ends++
			continue
		}
		if channel.TopicHash(string(p.Topic))%3 != 1 {
			t.Fatalf("after the restart %s was delivered: outside the declared slice topic_hash(3, 1)", p.Topic)
		}
		got = append(got, string(p.Topic))
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("after the restart, delivered\n%v\nwant the slice's\n%v", got, want)
	}
}

// A11.19, B3.6, B5.8 across a restart: unlike saguin-filter, saguin-deletions
// is the SUBSCRIBE's and is not restored with the session (RFC 0003: "A
// resumed session does NOT carry it"; "missing deletions degrades safely").
// After a kill -9 on sqlite, a session that subscribed with it resumes
// without subscribing again and is served the channel's full state - its
// mark did not survive - with no deletion in it; a new SUBSCRIBE carrying
// saguin-deletions is served the deletion.
func TestSaguinDeletionsIsNotRestoredAfterARestart(t *testing.T) {
	dir := t.TempDir()
	y := saguinYAML(sqliteStorage, "") + "\nchannels:\n" + indentLines(latestChannel, "  ") + "\n"
	b := startSaguin(t, dir, y)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.set("state/gone", "1", 1)
	pub.set("state/gone", "", 2)
	pub.set("state/kept", "1", 3)
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("mirror", freshSession(3600))
	sub.subscribeWith(1, deletionsProp, codec.Subscription{Filter: []byte("state/#"), QoS: 1})
	if got := sub.collectAcked(2); got["state/gone"] == nil || len(got["state/gone"].Payload) != 0 {
		t.Fatalf("the state pass with saguin-deletions: %v, want the deletion of state/gone", got)
	}
	sub.leave()
	b.kill9()
	b = startSaguin(t, dir, y)
	back := resume(t, b.addr, codec.Version5, "mirror", 3600)
	back.expectValue("state/kept", "1", "the full state after the restart")
	back.expectNothing("a deletion on a resume: saguin-deletions is not restored")
	back.subscribeWith(2, deletionsProp, codec.Subscription{Filter: []byte("state/#"), QoS: 1})
	if got := back.collectAcked(2); got["state/gone"] == nil || len(got["state/gone"].Payload) != 0 {
		t.Fatalf("a new SUBSCRIBE with saguin-deletions: %v, want the deletion of state/gone", got)
	}
}
