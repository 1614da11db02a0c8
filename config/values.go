package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Day is the d unit of a configuration duration.
const Day = 24 * time.Hour

var durationUnits = []struct {
	suffix string
	unit   time.Duration
}{
	// ms before m and s, so "5ms" is not read as 5m followed by garbage.
	{"ms", time.Millisecond},
	{"s", time.Second},
	{"m", time.Minute},
	{"h", time.Hour},
	{"d", Day},
}

var errNone = errors.New("none")

// ParseDuration reads a duration as RFC 0002 writes one: a whole number and one
// unit from ms, s, m, h and d - "90m", never "1h30m" or "1.5h". The word none
// is returned as errNone for the caller to accept or refuse.
func ParseDuration(s string) (time.Duration, error) {
	if s == "none" {
		return 0, errNone
	}
	for _, u := range durationUnits {
		num, ok := strings.CutSuffix(s, u.suffix)
		if !ok || num == "" {
			continue
		}
		n, err := wholeNumber(num)
		if err != nil {
			break
		}
		if n > uint64(math.MaxInt64/int64(u.unit)) {
			return 0, fmt.Errorf("%q is longer than this broker can count", s)
		}
		return time.Duration(n) * u.unit, nil
	}
	return 0, fmt.Errorf("%q is not a duration: write a whole number and one unit from ms, s, m, h and d, such as 90s or 30d", s)
}

// wholeNumber reads decimal digits and nothing else: no sign, no point, no
// space, no underscore.
func wholeNumber(s string) (uint64, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	return strconv.ParseUint(s, 10, 64)
}

// FormatDuration writes d in the largest unit that holds it exactly, the form
// ParseDuration reads back; 0 is written none.
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "none"
	}
	for i := len(durationUnits) - 1; i >= 0; i-- {
		u := durationUnits[i]
		if d%u.unit == 0 {
			return strconv.FormatInt(int64(d/u.unit), 10) + u.suffix
		}
	}
	return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
}

var sizeUnits = []struct {
	suffix string
	unit   int64
}{
	{"KiB", 1 << 10},
	{"MiB", 1 << 20},
	{"GiB", 1 << 30},
	{"TiB", 1 << 40},
	{"B", 1},
}

// ParseSize reads a size: a whole number of bytes, or a whole number and one of
// B, KiB, MiB, GiB and TiB. KB, MB and GB are refused rather than guessed at,
// since half of those who write them mean 1000 and half 1024. none is errNone.
func ParseSize(s string) (int64, error) {
	if s == "none" {
		return 0, errNone
	}
	num, unit := s, int64(1)
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, unit = n, u.unit
			break
		}
	}
	for _, bad := range []string{"KB", "MB", "GB", "TB", "kB", "K", "M", "G"} {
		if strings.HasSuffix(num, bad) {
			return 0, fmt.Errorf("%q is ambiguous: write KiB, MiB or GiB (1024-based), or a whole number of bytes", s)
		}
	}
	n, err := wholeNumber(num)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size: write a whole number of bytes, or one with a unit from B, KiB, MiB, GiB and TiB, such as 64MiB", s)
	}
	if n > uint64(math.MaxInt64/unit) {
		return 0, fmt.Errorf("%q is larger than this broker can count", s)
	}
	return int64(n) * unit, nil
}

// FormatSize writes n in the largest binary unit that holds it exactly; 0 is
// written none.
func FormatSize(n int64) string {
	if n == 0 {
		return "none"
	}
	for i := len(sizeUnits) - 2; i >= 0; i-- {
		u := sizeUnits[i]
		if n%u.unit == 0 {
			return strconv.FormatInt(n/u.unit, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
