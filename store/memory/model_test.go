package memory

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// TestAppendLogAgreesWithASimpleModelAcrossChunkBoundaries drives random
// appends, trims and reads through several chunks and checks every answer
// against a plain slice.
func TestAppendLogAgreesWithASimpleModelAcrossChunkBoundaries(t *testing.T) {
	p := open(t, "")
	defer p.Close()
	al, _ := p.Append("events", store.ChannelOptions{})
	rng := rand.New(rand.NewPCG(1, 2))
	var model []store.Record // live records, model[0] at floor
	floor, next := uint64(1), uint64(1)
	var bytes int64
	for step := 0; step < 4000; step++ {
		switch op := rng.IntN(10); {
		case op < 6:
			for n := rng.IntN(20); n > 0; n-- {
				r := record(int(next))
				r.Payload = fmt.Appendf(nil, "p%d", next)
				got, err := al.Append(r)
				if err != nil || got.Offset != next {
					t.Fatalf("step %d: append got %d err %v, want %d", step, got.Offset, err, next)
				}
				r.Offset = next
				next++
				model = append(model, r)
				bytes += store.RecordSize(&r)
			}
		case op < 8:
			keep := rng.Int64N(bytes + 1)
			removed, _, _ := al.Trim(time.Time{}, keep)
			want := 0
			for bytes > keep && len(model) > 0 && keep > 0 {
				bytes -= store.RecordSize(&model[0])
				model = model[1:]
				floor++
				want++
			}
			if removed != want {
				t.Fatalf("step %d: trim to %d removed %d, model %d", step, keep, removed, want)
			}
		default:
			from := floor + uint64(rng.IntN(len(model)+3)) - 1
			max := rng.IntN(3000) + 1
			w, err := al.ReadFrom(from, max, nil)
			if from < floor {
				if !errors.Is(err, store.ErrBelowFloor) {
					t.Fatalf("step %d: read from %d below floor %d: %v", step, from, floor, err)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			i := int(from - floor)
			n := min(max, max0(len(model)-i))
			if len(w.Records) != n {
				t.Fatalf("step %d: read from %d max %d got %d records, model %d", step, from, max, len(w.Records), n)
			}
			for k := range w.Records {
				if w.Records[k].Offset != model[i+k].Offset || string(w.Records[k].Payload) != string(model[i+k].Payload) {
					t.Fatalf("step %d: record %d is offset %d, model %d", step, k, w.Records[k].Offset, model[i+k].Offset)
				}
			}
		}
		if al.Floor() != floor || al.Next() != next || al.Bytes() != bytes || al.Len() != len(model) {
			t.Fatalf("step %d: floor %d next %d bytes %d len %d; model %d %d %d %d", step, al.Floor(), al.Next(), al.Bytes(), al.Len(), floor, next, bytes, len(model))
		}
	}
	if next < 3*chunkSize {
		t.Fatalf("the walk stayed inside %d records; it must cross chunks", next)
	}
}

func max0(n int) int {
	if n < 0 {
		return 0
	}
	return n
}

// TestLatestAgreesWithASimpleModelThroughCompactions drives random sets and
// deletes over a few topics, so compactions happen often, and checks Get and
// Changes against a map.
func TestLatestAgreesWithASimpleModelThroughCompactions(t *testing.T) {
	p := open(t, "")
	defer p.Close()
	l, _ := p.Latest("state", store.ChannelOptions{})
	rng := rand.New(rand.NewPCG(3, 4))
	type entry struct {
		offset  uint64
		deleted bool
	}
	model := map[string]entry{}
	next := uint64(1)
	for step := 0; step < 5000; step++ {
		topic := fmt.Sprintf("t%d", rng.IntN(40))
		r := record(step)
		r.Topic = topic
		if rng.IntN(4) == 0 {
			_, ok, _ := l.Delete(r)
			if e, had := model[topic]; had && !e.deleted {
				if !ok {
					t.Fatalf("step %d: delete of a live topic stored nothing", step)
				}
				model[topic] = entry{next, true}
				next++
			} else if ok {
				t.Fatalf("step %d: delete of an absent topic stored something", step)
			}
		} else {
			got, _ := l.Set(r)
			if got.Offset != next {
				t.Fatalf("step %d: set offset %d want %d", step, got.Offset, next)
			}
			model[topic] = entry{next, false}
			next++
		}
		if step%97 == 0 {
			since := uint64(rng.IntN(int(next) + 1))
			vs, _ := l.Changes(since, true, nil, 1000, nil)
			want := 0
			for _, e := range model {
				if e.offset >= since {
					want++
				}
			}
			if len(vs) != want {
				t.Fatalf("step %d: changes since %d: %d, model %d", step, since, len(vs), want)
			}
			for i := range vs {
				if e := model[vs[i].Topic]; e.offset != vs[i].Offset || e.deleted != vs[i].Deleted {
					t.Fatalf("step %d: %s at %d deleted %v, model %+v", step, vs[i].Topic, vs[i].Offset, vs[i].Deleted, e)
				}
				if i > 0 && vs[i].Offset <= vs[i-1].Offset {
					t.Fatalf("step %d: changes out of offset order", step)
				}
			}
		}
	}
}
