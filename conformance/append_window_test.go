package conformance

import (
	"fmt"
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// TestAppendWindowOfPublishesSharesSQLiteCommitsAckedInOrder is issue 11's
// window rule: one connection with 64 QoS 1 publishes in flight into an
// append channel on sqlite has several of its records in one commit
// (saguin_storage_committed_records_total over saguin_storage_commits_total),
// its PUBACKs come back in the order it published, and each was sent only
// once its record was committed - after a kill -9 every acknowledged record
// is there, once, in order.
func TestAppendWindowOfPublishesSharesSQLiteCommitsAckedInOrder(t *testing.T) {
	dir := t.TempDir()
	start := func() *opsBroker {
		b := startAppend(t, dir, sqliteStorage, "operations:\n  listen:\n    tcp:\n      address: 127.0.0.1:0", "")
		ob := withOps(b)
		if ob.ops == "" {
			t.Fatalf("no operations door in the log:\n%s", b.log)
		}
		return ob
	}
	b := start()
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("windowed", nil)
	const window = 64
	var burst []byte // the whole window in one write, as a client with 64 in flight sends it
	for i := 1; i <= window; i++ {
		p := codec.Publish{QoS: 1, Topic: []byte("ev/w"), PacketID: uint16(i), Payload: fmt.Appendf(nil, "%d", i)}
		burst = p.Append(burst, codec.Version5)
	}
	pub.send(burst)
	for i := 1; i <= window; i++ {
		if code := pub.expectAck(codec.TypePuback, uint16(i)); code != codec.Success {
			t.Fatalf("PUBACK %d: %v", i, code)
		}
	}

	_, body := b.get(t, "GET", "/metrics")
	fams := parseScrape(t, body)
	records, _ := value(fams["saguin_storage_committed_records_total"], "provider", "db")
	var commits float64
	for _, by := range []string{"records", "interval", "commit", "unbatched"} {
		n, _ := value(fams["saguin_storage_commits_total"], "provider", "db", "closed_by", by)
		commits += n
	}
	if records != window {
		t.Fatalf("%v records committed, want the %d acknowledged", records, window)
	}
	// One commit per record is what a connection that waits for each
	// commit before reading its next publish gets; 8 a commit at least is
	// a window shared, with room for the kernel splitting the write.
	if commits == 0 || records/commits < 8 {
		t.Fatalf("%v records in %v commits: the window's records did not share commits", records, commits)
	}

	b.kill9()
	b = start()
	sub := dialRaw(t, b.addr, codec.Version5)
	sub.mustConnect("reader", nil)
	sub.mustSubscribe(1, "ev/#", 1)
	got := sub.collect(window) // and whatever else came before a PINGRESP
	if len(got) != window {
		t.Fatalf("%d records after kill -9, want the %d acknowledged, once each", len(got), window)
	}
	for i, p := range got {
		if want := fmt.Sprint(i + 1); string(p.Payload) != want || offsetOf(t, p) != uint64(i+1) {
			t.Fatalf("record %d after kill -9: payload %q offset %d, want %s at %d", i, p.Payload, offsetOf(t, p), want, i+1)
		}
	}
}
