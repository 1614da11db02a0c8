package sqlite

import (
	"testing"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// Checklist D5.52 (RFC 0005 "What a metric is allowed to cost"): a scrape
// never counts rows. Every number the channel families read - an append
// channel's next and floor (its records are their difference), its bytes, a
// latest channel's topics held, a queue's depth - is kept by the store from
// its own committed writes. Rows deleted behind the store's back, by another
// connection to the file, move none of them: a store answering from
// count(*) would follow the rows.
func TestD5_52ChannelCountsAreKeptFromWritesNeverCountedFromRows(t *testing.T) {
	o := testOptions(t)
	p := mustOpen(t, o)
	r := func(topic string) store.Record {
		return store.Record{Topic: topic, Payload: []byte("value"), Time: time.Unix(1_700_000_000, 0), MessageID: "m-" + topic}
	}
	events, err := p.Append("events", store.ChannelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	state, err := p.Latest("state", store.ChannelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := p.Queue("jobs", store.QueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := events.Append(r("e/1")); err != nil {
			t.Fatal(err)
		}
	}
	for _, topic := range []string{"s/1", "s/2", "s/3"} {
		if _, err := state.Set(r(topic)); err != nil {
			t.Fatal(err)
		}
	}
	for range 4 {
		if _, err := jobs.Enqueue(r("w/1")); err != nil {
			t.Fatal(err)
		}
	}
	type numbers struct {
		next, floor, depth uint64
		held               int
		bytes              [3]int64
	}
	read := func() numbers {
		return numbers{next: events.Next(), floor: events.Floor(), held: state.Len(), depth: uint64(jobs.Depth()),
			bytes: [3]int64{events.Bytes(), state.Bytes(), jobs.Bytes()}}
	}
	before := read()
	if before.next-before.floor != 5 || before.held != 3 || before.depth != 4 {
		t.Fatalf("after the writes: %+v", before)
	}
	db := rawDB(t, o.FilePath)
	for _, table := range []string{"records", "latest_values", "queue_items"} {
		res, err := db.Exec("DELETE FROM " + table)
		if err != nil {
			t.Fatalf("deleting %s behind the store: %v", table, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			t.Fatalf("%s held no rows to delete", table)
		}
	}
	if after := read(); after != before {
		t.Fatalf("rows deleted behind the store moved its numbers: %+v, were %+v", after, before)
	}
}
