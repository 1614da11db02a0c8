package config

import (
	"errors"
	"testing"
	"time"
)

func TestDurationIsAWholeNumberAndOneUnit(t *testing.T) {
	good := map[string]time.Duration{"90m": 90 * time.Minute, "5ms": 5 * time.Millisecond, "30d": 30 * Day, "1s": time.Second, "3h": 3 * time.Hour, "0s": 0}
	for s, want := range good {
		if d, err := ParseDuration(s); err != nil || d != want {
			t.Errorf("ParseDuration(%q) = %v %v", s, d, err)
		}
	}
	for _, s := range []string{"1h30m", "1.5h", "-1s", "+1s", "10", "s", "1 s", "1S", "1w", "", "99999999999999999999d"} {
		if _, err := ParseDuration(s); err == nil {
			t.Errorf("ParseDuration(%q) accepted", s)
		}
	}
	if _, err := ParseDuration("none"); !errors.Is(err, errNone) {
		t.Error("none")
	}
}

func TestSizeIsBytesOrABinaryUnit(t *testing.T) {
	good := map[string]int64{"1MiB": 1 << 20, "8KiB": 8 << 10, "20GiB": 20 << 30, "512": 512, "512B": 512, "1TiB": 1 << 40}
	for s, want := range good {
		if n, err := ParseSize(s); err != nil || n != want {
			t.Errorf("ParseSize(%q) = %v %v", s, n, err)
		}
	}
	for _, s := range []string{"1MB", "1kB", "1K", "1.5MiB", "-1", "MiB", "", "1 MiB", "99999999999TiB"} {
		if _, err := ParseSize(s); err == nil {
			t.Errorf("ParseSize(%q) accepted", s)
		}
	}
}

func TestFormatReadsBack(t *testing.T) {
	for _, d := range []time.Duration{time.Millisecond, 1500 * time.Millisecond, 90 * time.Minute, 30 * Day, 0} {
		s := FormatDuration(d)
		back, err := ParseDuration(s)
		if d == 0 {
			if !errors.Is(err, errNone) {
				t.Errorf("0 wrote %q", s)
			}
			continue
		}
		if err != nil || back != d {
			t.Errorf("%v wrote %q read %v %v", d, s, back, err)
		}
	}
	for _, n := range []int64{1, 1023, 1 << 20, 3 << 30, 1000} {
		back, err := ParseSize(FormatSize(n))
		if err != nil || back != n {
			t.Errorf("%d wrote %q", n, FormatSize(n))
		}
	}
}

// FuzzDurationAndSize: the value parsers never panic, and what they accept
// formats to a string they read back as the same value.
func FuzzDurationAndSize(f *testing.F) {
	for _, s := range []string{"90m", "5ms", "30d", "none", "1MiB", "8KiB", "1h30m", "1MB", "18446744073709551615d", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := ParseDuration(s); err == nil && d > 0 {
			if back, err := ParseDuration(FormatDuration(d)); err != nil || back != d {
				t.Fatalf("%q: %v wrote %q", s, d, FormatDuration(d))
			}
		}
		if n, err := ParseSize(s); err == nil && n > 0 {
			if back, err := ParseSize(FormatSize(n)); err != nil || back != n {
				t.Fatalf("%q: %d wrote %q", s, n, FormatSize(n))
			}
		}
	})
}
