package topic

import (
	"errors"
	"fmt"
	"strings"
)

// MaxExpansions bounds how many plain filters one braced filter may expand to.
// RFC 0002 names no figure; the bound exists so that a line such as
// {a,b,c,d}/{a,b,c,d}/... cannot make the loader allocate without limit
// (invariant 13), and it is far above any filter written by hand.
const MaxExpansions = 1024

// HasBraces reports whether a filter uses the {a,b} notation.
func HasBraces(filter string) bool {
	return strings.ContainsAny(filter, "{}")
}

// Expand turns a filter written with {a,b} levels into the plain filters it
// stands for, every combination when several levels are braced, the first braced
// level varying slowest (RFC 0002 "{a,b}: one level, several spellings"). A
// filter without braces expands to itself. Refused: a brace that is not a whole
// level, one holding /, an empty brace or alternative, an alternative holding a
// brace, + or #, one written twice in a brace, and more than MaxExpansions
// results - counted before anything is allocated. The plain filters are not
// otherwise validated: that is ValidateFilter's job.
func Expand(filter string) ([]string, error) {
	if !HasBraces(filter) {
		return []string{filter}, nil
	}
	total := 1
	for i := 0; ; {
		l, next, last := nextLevel(filter, i)
		n, err := braceLevel(l, filter, i)
		if err != nil {
			return nil, err
		}
		if total *= n; total > MaxExpansions {
			return nil, fmt.Errorf("{a,b} in %q expands to more than %d filters", filter, MaxExpansions)
		}
		if last {
			break
		}
		i = next
	}
	out := []string{""}
	for i := 0; ; {
		l, next, last := nextLevel(filter, i)
		alts := []string{l}
		if strings.HasPrefix(l, "{") {
			alts = strings.Split(l[1:len(l)-1], ",")
		}
		grown := make([]string, 0, len(out)*len(alts))
		for _, prefix := range out {
			for _, a := range alts {
				if i > 0 {
					grown = append(grown, prefix+string(Separator)+a)
				} else {
					grown = append(grown, a)
				}
			}
		}
		out = grown
		if last {
			break
		}
		i = next
	}
	return out, nil
}

// braceLevel checks one level and returns how many spellings it has: 1 for a
// plain level, the number of alternatives for a braced one. at is where the
// level starts in filter, used to tell a brace split by / from a stray one.
func braceLevel(level, filter string, at int) (int, error) {
	if !strings.ContainsAny(level, "{}") {
		return 1, nil
	}
	open := strings.HasPrefix(level, "{")
	closed := strings.HasSuffix(level, "}")
	switch {
	case open && !closed && strings.IndexByte(filter[at:], '}') > len(level):
		return 0, fmt.Errorf("braces in %q hold a /: an alternative is one topic level and never a subtree", filter)
	case !open || !closed || len(level) < 2:
		return 0, fmt.Errorf("level %q of %q: a brace takes a whole level, written {a,b}", level, filter)
	}
	inner := level[1 : len(level)-1]
	if inner == "" {
		return 0, fmt.Errorf("level %q of %q: an empty brace spells nothing; write the level's spellings between the braces", level, filter)
	}
	alts := strings.Split(inner, ",")
	for i, a := range alts {
		if err := alternative(a); err != nil {
			return 0, fmt.Errorf("level %q of %q: %w", level, filter, err)
		}
		for _, b := range alts[:i] {
			if a == b {
				return 0, fmt.Errorf("level %q of %q: %q is written twice", level, filter, a)
			}
		}
	}
	return len(alts), nil
}

func alternative(a string) error {
	switch {
	case a == "":
		return errors.New("an empty alternative spells nothing")
	case strings.ContainsAny(a, "{}"):
		return errors.New("braces do not nest")
	case strings.ContainsAny(a, "+#"):
		return fmt.Errorf("alternative %q is a wildcard; an alternative is a spelled-out level", a)
	}
	return nil
}
