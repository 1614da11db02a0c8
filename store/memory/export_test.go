package memory

import (
	"reflect"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/store"
)

func TestChannelFileRoundTripsForTheMigrationCommands(t *testing.T) {
	dir := t.TempDir()
	if has, err := HasSnapshots(dir); err != nil || has {
		t.Fatalf("empty dir has snapshots: %v %v", has, err)
	}
	r1, r2 := record(1), record(2)
	r1.Offset, r2.Offset = 41, 43
	q := &Channel{
		Name: "jobs", Kind: "queue", Next: 44, Floor: 41,
		Jobs: []store.Job{{Record: r1, Attempts: 2, FirstDelivery: t0, LastDelivery: t0.Add(time.Second)}, {Record: r2}},
		DeadLetters: &Channel{Name: "jobs__dlq", Kind: "append", Next: 8, Floor: 7, Records: []store.Record{func() store.Record {
			r := record(3)
			r.Offset = 7
			return r
		}()}, Positions: []store.Position{{Reader: "bridge:b", Offset: 8}}},
	}
	if err := WriteChannelFile(dir, q, "migration"); err != nil {
		t.Fatal(err)
	}
	files, err := ChannelFiles(dir)
	if err != nil || len(files) != 1 {
		t.Fatalf("channel files %v %v", files, err)
	}
	got, err := ReadChannelFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	norm := func(c *Channel) {
		for i := range c.Jobs {
			c.Jobs[i].Time = time.Unix(0, store.UnixNanos(c.Jobs[i].Time))
			c.Jobs[i].FirstDelivery = store.FromUnixNanos(store.UnixNanos(c.Jobs[i].FirstDelivery))
			c.Jobs[i].LastDelivery = store.FromUnixNanos(store.UnixNanos(c.Jobs[i].LastDelivery))
		}
		for i := range c.DeadLetters.Records {
			c.DeadLetters.Records[i].Time = time.Unix(0, store.UnixNanos(c.DeadLetters.Records[i].Time))
		}
		for i := range c.DeadLetters.Positions {
			c.DeadLetters.Positions[i].SavedAt = store.FromUnixNanos(store.UnixNanos(c.DeadLetters.Positions[i].SavedAt))
		}
	}
	norm(got)
	norm(q)
	if !reflect.DeepEqual(got, q) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, q)
	}
	if has, _ := HasSnapshots(dir); !has {
		t.Fatal("a written channel file is not seen")
	}
	// A broker starting on the directory finds the queue at its offsets.
	p := open(t, dir)
	defer p.Close()
	qs, err := p.Queue("jobs", store.QueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if qs.Next() != 44 || qs.Depth() != 2 || qs.DeadLetters().Next() != 8 {
		t.Fatalf("migrated queue: next %d depth %d dlq next %d", qs.Next(), qs.Depth(), qs.DeadLetters().Next())
	}
	j, _, _, _ := qs.Offer("w", t0)
	if j.Offset != 41 || j.Attempts != 2 {
		t.Fatalf("migrated job %+v", j)
	}
}

func TestMigrationRefusesToWriteAFileABrokerWouldRefuse(t *testing.T) {
	r := record(1)
	r.Offset = 9
	c := &Channel{Name: "events", Kind: "append", Next: 5, Floor: 1, Records: []store.Record{r}}
	if err := WriteChannelFile(t.TempDir(), c, "m"); err == nil {
		t.Fatal("a record beyond next was written")
	}
}
