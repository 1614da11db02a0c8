package conformance

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// The restart promises of RFC 0003 "Sessions" and RFC 0002 "Every session's
// state: broker.session": a sqlite provider keeps sessions, what they are
// owed, retained values and Wills across kill -9; a memory provider with a
// snapshot_dir keeps them across SIGTERM.

// storedConfig is the test configuration with its one provider, "mem",
// replaced by kind: a sqlite file or a memory provider with a snapshot_dir,
// both inside dir.
func storedConfig(t *testing.T, dir, kind string) string {
	t.Helper()
	y := brokerConfig{}.yaml(dir)
	const mem = "      mem:\n        type: memory\n        snapshot_dir: none\n"
	if !strings.Contains(y, mem) {
		t.Fatalf("the base configuration no longer names its provider as expected:\n%s", y)
	}
	var p string
	switch kind {
	case "sqlite":
		p = "      mem:\n        type: sqlite\n        file_path: " + filepath.Join(dir, "saguin.db") + "\n"
	case "snapshot":
		p = "      mem:\n        type: memory\n        snapshot_dir: " + filepath.Join(dir, "snap") + "\n"
	default:
		p = mem
	}
	return strings.Replace(y, mem, p, 1)
}

// startStored starts saguin on storedConfig in dir; a second call on the same
// dir is the restart.
func startStored(t *testing.T, dir, kind string) *brokerProc {
	t.Helper()
	if *brokerFlag != "" {
		t.Skip("restarts a broker of its own; -broker is set")
	}
	path := filepath.Join(dir, "saguin.yaml")
	if err := os.WriteFile(path, []byte(storedConfig(t, dir, kind)), 0o644); err != nil {
		t.Fatal(err)
	}
	return launch(t, dir, path)
}

// persistent is a CONNECT that resumes and asks its session to outlive it.
func persistent(v byte) func(*codec.Connect) {
	return func(p *codec.Connect) {
		p.CleanStart = false
		if v == codec.Version5 {
			p.Properties.SessionExpiry = 3600
			p.Properties.Present.Set(codec.PropSessionExpiry)
		}
	}
}

// ackPublish answers a QoS 1 delivery.
func (c *raw) ackPublish(p *codec.Publish) {
	c.t.Helper()
	a := &codec.Ack{Type: codec.TypePuback, PacketID: p.PacketID}
	c.send(a.Append(nil, c.version))
}

// restartKeepsSessions is the one scenario both providers are held to: a
// subscriber away, a QoS 1 message and a retained value published for it,
// the broker stopped by stop and started again.
func restartKeepsSessions(t *testing.T, kind string, stop func(*brokerProc)) {
	versions(t, func(t *testing.T, v byte) {
		dir := t.TempDir()
		b := startStored(t, dir, kind)
		sub := dialRaw(t, b.addr, v)
		sub.connect("away", persistent(v))
		if codes := sub.subscribe(1, "kept/#", 1); codes[0] != 1 {
			t.Fatalf("SUBACK %v", codes)
		}
		sub.nc.Close()
		if b.log.wait(regexp.MustCompile(`msg="(disconnect stored|Will waiting out its delay)".*client_id=away`), waitLong) == "" {
			t.Fatal("the broker never saw the subscriber leave")
		}

		pub := dialRaw(t, b.addr, v)
		pub.mustConnect("pub", nil)
		pub.publish("kept/msg", []byte("owed"), 1, 7)
		if code := pub.expectPuback(7); code != codec.Success {
			t.Fatalf("PUBACK 0x%02x", byte(code))
		}
		p := &codec.Publish{QoS: 1, Retain: true, Topic: []byte("kept/state"), Payload: []byte("on"), PacketID: 8}
		pub.send(p.Append(nil, v))
		pub.expectPuback(8)
		pub.nc.Close()

		stop(b)
		b = startStored(t, dir, kind)

		sub = dialRaw(t, b.addr, v)
		ack := sub.mustConnect("away", persistent(v))
		if !ack.SessionPresent {
			t.Fatal("Session Present 0 after the restart: the session was not kept")
		}
		got := sub.expectPublish()
		if string(got.Payload) != "owed" || got.QoS != 1 {
			t.Fatalf("resumed session got %q at QoS %d, want the owed message at QoS 1", got.Payload, got.QoS)
		}
		sub.ackPublish(got)

		fresh := dialRaw(t, b.addr, v)
		fresh.mustConnect("fresh", nil)
		fresh.subscribe(1, "kept/state", 1)
		r := fresh.expectPublish()
		if string(r.Payload) != "on" || !r.Retain {
			t.Fatalf("retained value after the restart: %q retain=%v, want \"on\" with RETAIN", r.Payload, r.Retain)
		}
	})
}

func TestSQLiteProviderKeepsSessionsOwedMessagesAndRetainedValuesAcrossKill9(t *testing.T) {
	restartKeepsSessions(t, "sqlite", (*brokerProc).kill9)
}

func TestMemoryProviderWithSnapshotKeepsSessionsOwedMessagesAndRetainedValuesAcrossSIGTERM(t *testing.T) {
	restartKeepsSessions(t, "snapshot", func(b *brokerProc) {
		b.signal(sigterm)
		if code := b.waitExit(waitLong); code != 0 {
			t.Fatalf("SIGTERM exit code %d", code)
		}
	})
}

func TestMemoryProviderWithoutSnapshotKeepsNoSessionAcrossARestart(t *testing.T) {
	dir := t.TempDir()
	b := startStored(t, dir, "none")
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect("gone", persistent(codec.Version5))
	c.subscribe(1, "x", 1)
	c.nc.Close()
	b.signal(sigterm)
	b.waitExit(waitLong)
	b = startStored(t, dir, "none")
	c = dialRaw(t, b.addr, codec.Version5)
	if ack := c.mustConnect("gone", persistent(codec.Version5)); ack.SessionPresent {
		t.Fatal("Session Present 1 from a memory provider with snapshot_dir: none")
	}
}

// withWill arms a retained Will on status/<id> with delay seconds.
func withWill(v byte, id string, delay uint32) func(*codec.Connect) {
	return func(p *codec.Connect) {
		persistent(v)(p)
		p.WillFlag, p.WillQoS, p.WillRetain = true, 1, true
		p.WillTopic, p.WillPayload = []byte("status/"+id), []byte("offline")
		if v == codec.Version5 && delay > 0 {
			p.WillProperties.WillDelay = delay
			p.WillProperties.Present.Set(codec.PropWillDelay)
		}
	}
}

func TestWillWaitingOutItsDelayIsPublishedAfterKill9(t *testing.T) {
	dir := t.TempDir()
	b := startStored(t, dir, "sqlite")
	dev := dialRaw(t, b.addr, codec.Version5)
	dev.mustConnect("dev", withWill(codec.Version5, "dev", 1))
	dev.nc.Close()
	if b.log.wait(regexp.MustCompile(`msg="Will waiting out its delay".*client_id=dev`), waitLong) == "" {
		t.Fatal("the broker never said the Will is waiting")
	}
	b.kill9()
	b = startStored(t, dir, "sqlite")
	mon := dialRaw(t, b.addr, codec.Version5)
	mon.mustConnect("mon", nil)
	mon.subscribe(1, "status/dev", 1)
	got := mon.expectPublish()
	if string(got.Payload) != "offline" {
		t.Fatalf("got %q on the Will's topic, want the Will", got.Payload)
	}
}

func TestGracefulStopKeepsTheConnectedClientsWillUnpublishedAndItsSessionPresent(t *testing.T) {
	dir := t.TempDir()
	b := startStored(t, dir, "snapshot")
	dev := dialRaw(t, b.addr, codec.Version5)
	dev.mustConnect("dev", withWill(codec.Version5, "dev", 0))
	b.signal(sigterm)
	b.waitExit(waitLong)
	b = startStored(t, dir, "snapshot")
	mon := dialRaw(t, b.addr, codec.Version5)
	mon.mustConnect("mon", nil)
	mon.subscribe(1, "status/#", 1)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publish("status/marker", []byte("marker"), 1, 1)
	pub.expectPuback(1)
	if got := mon.expectPublish(); string(got.Payload) != "marker" {
		t.Fatalf("first on status/# after a graceful stop: %q, want only the marker (no Will)", got.Payload)
	}
	// The client connected at the stop comes back to its session.
	dev = dialRaw(t, b.addr, codec.Version5)
	if ack := dev.mustConnect("dev", persistent(codec.Version5)); !ack.SessionPresent {
		t.Fatal("the session of a client connected at the stop is not present after the restart")
	}
}

// TestSQLiteSharedGroupBacklogKeepsAcrossKill9: RFC 0002 "What a shared group
// is owed: broker.share" - a backlog keeps across a restart what the sessions
// keep; on sqlite that is a crash.
func TestSQLiteSharedGroupBacklogKeepsAcrossKill9(t *testing.T) {
	dir := t.TempDir()
	b := startStored(t, dir, "sqlite")
	m := dialRaw(t, b.addr, codec.Version5)
	m.mustConnect("member", persistent(codec.Version5))
	if codes := m.subscribe(1, "$share/g/jobs/#", 1); codes[0] != 1 {
		t.Fatalf("SUBACK %v", codes)
	}
	m.send((&codec.Disconnect{}).Append(nil, codec.Version5))
	if b.log.wait(regexp.MustCompile(`msg="(disconnect stored|Will waiting out its delay)".*client_id=member`), waitLong) == "" {
		t.Fatal("the broker never saw the member leave")
	}
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	for i, p := range []string{"one", "two"} {
		pub.publish("jobs/x", []byte(p), 1, uint16(i+1))
		if code := pub.expectPuback(uint16(i + 1)); code != codec.Success {
			t.Fatalf("PUBACK 0x%02x", byte(code))
		}
	}
	// The group's cursor was stored with its durable member's SUBSCRIBE and
	// each message's log write came before its PUBACK: nothing more to wait for.
	b.kill9()
	b = startStored(t, dir, "sqlite")
	back := dialRaw(t, b.addr, codec.Version5)
	if ack := back.mustConnect("member", persistent(codec.Version5)); !ack.SessionPresent {
		t.Fatal("Session Present 0 after kill -9")
	}
	for _, want := range []string{"one", "two"} {
		p := back.expectPublish()
		if string(p.Payload) != want {
			t.Fatalf("backlog after kill -9 gave %q, want %q in publish order", p.Payload, want)
		}
		back.ackPublish(p)
	}
}
