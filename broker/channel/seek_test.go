package channel

import (
	"errors"
	"testing"
	"time"
)

var seekNow = time.Date(2026, 8, 14, 12, 0, 0, 0, time.UTC)

func TestSeekPayloadForms(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Seek
	}{
		{"0", Seek{Kind: SeekFloor}},
		{"-1", Seek{Kind: SeekNext}},
		{"42", Seek{Kind: SeekOffset, Offset: 42}},
		{"0042", Seek{Kind: SeekOffset, Offset: 42}},
		{"1763000000", Seek{Kind: SeekOffset, Offset: 1763000000}}, // a bare integer is an offset, never a time
		{"-12h", Seek{Kind: SeekTime, Time: seekNow.Add(-12 * time.Hour)}},
		{"12h", Seek{Kind: SeekTime, Time: seekNow.Add(-12 * time.Hour)}},
		{"90m", Seek{Kind: SeekTime, Time: seekNow.Add(-90 * time.Minute)}},
		{"7d", Seek{Kind: SeekTime, Time: seekNow.Add(-7 * 24 * time.Hour)}},
		{"30s", Seek{Kind: SeekTime, Time: seekNow.Add(-30 * time.Second)}},
		{"2026-08-14T09:00:00Z", Seek{Kind: SeekTime, Time: time.Date(2026, 8, 14, 9, 0, 0, 0, time.UTC)}},
		{"2026-08-14T11:00:00+02:00", Seek{Kind: SeekTime, Time: time.Date(2026, 8, 14, 9, 0, 0, 0, time.UTC)}},
	} {
		got, err := ParseSeek([]byte(c.in), seekNow)
		if err != nil || got.Kind != c.want.Kind || got.Offset != c.want.Offset || !got.Time.Equal(c.want.Time) {
			t.Errorf("ParseSeek(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

func TestSeekMalformed(t *testing.T) {
	for _, in := range []string{"", "2026-08-14", "-2", "-42", "00", "+5", "1.5h", "h", "-h", "12w", "12H", "1y",
		"99999999999999999999999", "yesterday", " 0", "0 ", "-0", "2026-08-14 09:00:00"} {
		if s, err := ParseSeek([]byte(in), seekNow); !errors.Is(err, ErrSeekMalformed) {
			t.Errorf("ParseSeek(%q) = %+v, %v; want malformed", in, s, err)
		}
	}
}

func TestSeekResolve(t *testing.T) {
	times := map[uint64]time.Time{5: seekNow.Add(-3 * time.Hour), 6: seekNow.Add(-2 * time.Hour), 7: seekNow.Add(-time.Hour)}
	first := func(at time.Time) (uint64, bool, error) {
		best := uint64(0)
		for off, ts := range times {
			if !ts.Before(at) && (best == 0 || off < best) {
				best = off
			}
		}
		return best, best != 0, nil
	}
	b := Bounds{Floor: 5, Next: 8, Now: seekNow, FirstAtOrAfter: first}
	for _, c := range []struct {
		s    Seek
		off  uint64
		word string
	}{
		{Seek{Kind: SeekFloor}, 5, ""},
		{Seek{Kind: SeekNext}, 8, ""},
		{Seek{Kind: SeekOffset, Offset: 5}, 5, ""},
		{Seek{Kind: SeekOffset, Offset: 8}, 8, ""}, // next itself is the end, not beyond it
		{Seek{Kind: SeekOffset, Offset: 4}, 0, WordBelowFloor},
		{Seek{Kind: SeekOffset, Offset: 9}, 0, WordBeyondEnd},
		{Seek{Kind: SeekTime, Time: seekNow.Add(-90 * time.Minute)}, 7, ""},
		{Seek{Kind: SeekTime, Time: seekNow.Add(-150 * time.Minute)}, 6, ""},
		{Seek{Kind: SeekTime, Time: seekNow.Add(-5 * time.Hour)}, 0, WordBelowFloor}, // older than the oldest surviving, floor moved
		{Seek{Kind: SeekTime, Time: seekNow.Add(time.Hour)}, 8, ""},                  // the future: nothing yet
	} {
		off, word, err := Resolve(c.s, b)
		if err != nil || off != c.off || word != c.word {
			t.Errorf("Resolve(%+v) = %d, %q, %v; want %d, %q", c.s, off, word, err, c.off, c.word)
		}
	}
	// Nothing ever removed: an old moment serves from the start.
	b1 := Bounds{Floor: 1, Next: 3, Now: seekNow, FirstAtOrAfter: func(time.Time) (uint64, bool, error) { return 1, true, nil }}
	if off, word, _ := Resolve(Seek{Kind: SeekTime, Time: seekNow.Add(-100 * time.Hour)}, b1); off != 1 || word != "" {
		t.Errorf("floor 1: %d %q", off, word)
	}
	// Retention emptied the channel: a past moment is refused, a future one is not.
	empty := Bounds{Floor: 9, Next: 9, Now: seekNow, FirstAtOrAfter: func(time.Time) (uint64, bool, error) { return 0, false, nil }}
	if _, word, _ := Resolve(Seek{Kind: SeekTime, Time: seekNow.Add(-time.Hour)}, empty); word != WordBelowFloor {
		t.Errorf("emptied, past: %q", word)
	}
	if off, word, _ := Resolve(Seek{Kind: SeekTime, Time: seekNow.Add(time.Hour)}, empty); word != "" || off != 9 {
		t.Errorf("emptied, future: %d %q", off, word)
	}
	broken := Bounds{Floor: 1, Next: 3, FirstAtOrAfter: func(time.Time) (uint64, bool, error) { return 0, false, errors.New("disk") }}
	if _, word, err := Resolve(Seek{Kind: SeekTime, Time: seekNow}, broken); word != WordStorage || err == nil {
		t.Errorf("storage: %q %v", word, err)
	}
}

func FuzzSeekPayload(f *testing.F) {
	for _, s := range []string{"0", "-1", "42", "-12h", "7d", "2026-08-14T09:00:00Z", "2026-08-14", "-2", "x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := ParseSeek(in, seekNow)
		if err != nil {
			if s != (Seek{}) {
				t.Fatalf("refused %q but answered %+v", in, s)
			}
			return
		}
		switch s.Kind {
		case SeekOffset:
			if s.Offset == 0 {
				t.Fatalf("%q: offset 0", in)
			}
		case SeekTime:
			if _, isDuration := duration(string(in)); isDuration && s.Time.After(seekNow) {
				// A duration always means ago.
				t.Fatalf("%q: a duration in the future: %v", in, s.Time)
			}
		case SeekFloor, SeekNext:
		default:
			t.Fatalf("%q: kind %d", in, s.Kind)
		}
	})
}
