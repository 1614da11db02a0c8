package storetest

import (
	"testing"

	"github.com/saguin-edge/saguin/store"
)

// FarFloor is where a channel seeded by FarRecords starts: past what 32 bits
// hold, so a provider or a 32-bit build (armhf) that keeps an offset in an
// int or a uint32 anywhere shows it (notes-0001 A5: offsets are 64-bit
// everywhere).
const FarFloor uint64 = 1<<32 + 7

// FarRecords are the two records a seeded append channel "events" holds, at
// FarFloor and FarFloor+1, with next FarFloor+2.
func FarRecords() []store.Record {
	a, b := rec(1), rec(2)
	a.Offset, b.Offset = FarFloor, FarFloor+1
	return []store.Record{a, b}
}

// CheckFarOffsets opens, with open, a provider whose dir was seeded with
// FarRecords, and checks that the channel's counters and records are where
// they were put, that an append takes the next offset past them, and that
// all of it survives a restart.
func CheckFarOffsets(t *testing.T, dir string, open Opener) {
	t.Helper()
	s := &script{open: open}
	p := s.mustOpen(t, Config{Dir: dir})
	l, err := p.Append("events", store.ChannelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Floor() != FarFloor || l.Next() != FarFloor+2 || l.Len() != 2 {
		t.Fatalf("seeded channel: floor %d next %d len %d, want %d %d 2", l.Floor(), l.Next(), l.Len(), FarFloor, FarFloor+2)
	}
	got, err := l.Append(rec(3))
	if err != nil {
		t.Fatal(err)
	}
	if got.Offset != FarFloor+2 {
		t.Fatalf("append took offset %d, want %d", got.Offset, FarFloor+2)
	}
	check := func(when string, l store.AppendLog) {
		t.Helper()
		w, err := l.ReadFrom(FarFloor+1, 10, nil)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if len(w.Records) != 2 || w.Records[0].Offset != FarFloor+1 || w.Records[1].Offset != FarFloor+2 ||
			string(w.Records[1].Payload) != string(rec(3).Payload) || w.Floor != FarFloor || w.Next != FarFloor+3 {
			t.Fatalf("%s: read from %d: %d records, floor %d next %d", when, FarFloor+1, len(w.Records), w.Floor, w.Next)
		}
		if _, err := l.ReadFrom(FarFloor-1, 10, nil); err == nil {
			t.Fatalf("%s: a read below the floor %d was served", when, FarFloor)
		}
	}
	check("before restart", l)
	mustClose(t, p)
	p = s.mustOpen(t, Config{Dir: dir})
	defer mustClose(t, p)
	l, err = p.Append("events", store.ChannelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check("after restart", l)
}
