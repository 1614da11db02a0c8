package sqlite

import (
	"testing"
	"time"

	"github.com/saguin-edge/saguin/store"
)

func TestSweepBySizeTrimsOnlyChannelsOverTheirRetentionBytes(t *testing.T) {
	p := mustOpen(t, testOptions(t))
	r := record(1, 100)
	size := store.RecordSize(&r)
	over, _ := p.Append("over", store.ChannelOptions{RetentionBytes: 3 * size})
	under, _ := p.Append("under", store.ChannelOptions{RetentionBytes: 100 * size})
	for i := 0; i < 5; i++ {
		over.Append(record(i, 100))
		under.Append(record(i, 100))
	}
	removed, err := p.SweepBySize()
	if err != nil || removed != 2 {
		t.Fatalf("removed %d err %v, want 2", removed, err)
	}
	if over.Floor() != 3 || over.Bytes() != 3*size || under.Floor() != 1 || under.Len() != 5 {
		t.Fatalf("over floor %d bytes %d; under floor %d len %d", over.Floor(), over.Bytes(), under.Floor(), under.Len())
	}
}

func TestSweepByAgeRemovesWhatIsOlderThanEachPeriod(t *testing.T) {
	p := mustOpen(t, testOptions(t))
	base := time.Unix(1_700_000_000, 0)
	l, _ := p.Append("events", store.ChannelOptions{RetentionPeriod: time.Hour})
	lt, _ := p.Latest("state", store.ChannelOptions{RetentionPeriod: 10 * time.Hour, DeletionRetentionPeriod: time.Hour})
	for i := 0; i < 4; i++ {
		r := record(i, 10)
		r.Time = base.Add(time.Duration(i) * time.Hour)
		l.Append(r)
	}
	set := func(topic string, at time.Time) {
		r := record(0, 10)
		r.Topic, r.Time = topic, at
		lt.Set(r)
	}
	set("a", base)
	set("b", base.Add(3*time.Hour))
	del := record(0, 0)
	del.Topic, del.Time = "b", base.Add(30*time.Minute) // a tombstone older than an hour at the sweep
	lt.Delete(del)
	removed, err := p.SweepByAge(base.Add(3*time.Hour + 30*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	// events: offsets 1..3 are older than an hour; state: the tombstone of b
	// is past its deletion period, a's value is inside its ten hours.
	if removed != 4 || l.Floor() != 4 || lt.Len() != 1 || lt.Count() != 1 {
		t.Fatalf("removed %d, events floor %d, state len %d count %d", removed, l.Floor(), lt.Len(), lt.Count())
	}
	if p.ShortestAge() != time.Hour {
		t.Fatalf("shortest age %v, want 1h", p.ShortestAge())
	}
}

func TestShortestAgeCountsDeadLetterAndRetainedPeriods(t *testing.T) {
	p := mustOpen(t, testOptions(t))
	p.Append("events", store.ChannelOptions{RetentionPeriod: time.Hour})
	p.Queue("jobs", store.QueueOptions{DLQ: store.ChannelOptions{RetentionPeriod: 20 * time.Minute}})
	if p.ShortestAge() != 20*time.Minute {
		t.Fatalf("shortest %v, want the dead-letter period", p.ShortestAge())
	}
	p.Retained(5 * time.Minute)
	if p.ShortestAge() != 5*time.Minute {
		t.Fatalf("shortest %v, want the retained period", p.ShortestAge())
	}
}
