package auth

import (
	"fmt"
)

// Outcome is what a credential check found. The wire answers Wrong and
// Unknown alike (0x86); the log says which (RFC 0002 "Who may connect").
type Outcome uint8

const (
	OK Outcome = iota
	// Unknown: the file names no such user.
	Unknown
	// Wrong: the user is named and the password is not theirs.
	Wrong
)

func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Unknown:
		return "no such user"
	}
	return "wrong password"
}

// Entry is one user of a password file.
type Entry struct {
	User string
	Hash string
	Line int
}

// Users is one password file's users, decoded once; it is never changed, a
// re-read builds a new one.
type Users struct {
	Path  string
	users map[string]Hash
	// dummy is verified for a name the file does not hold, so that an
	// unknown user costs what a known one does and the time a refusal takes
	// does not say which user names exist.
	dummy Hash
}

// NewUsers decodes entries (already checked for duplicates and shape by the
// configuration's reader). A hash that does not decode is refused naming the
// file and the line.
func NewUsers(path string, entries []Entry) (*Users, error) {
	u := &Users{Path: path, users: make(map[string]Hash, len(entries))}
	// counts is keyed by iteration count, 0 standing for $6$.
	counts := map[int]int{}
	for _, e := range entries {
		h, err := ParseHash(e.Hash)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: user %q: %w", path, e.Line, e.User, err)
		}
		if _, dup := u.users[e.User]; dup {
			return nil, fmt.Errorf("%s:%d: user %q is named twice", path, e.Line, e.User)
		}
		u.users[e.User] = h
		counts[h.Iterations]++
	}
	u.dummy = dummyHash(mostCommon(counts))
	return u, nil
}

// mostCommon is the hash most of the file's users have - an iteration
// count, 0 for $6$ - the cost an unknown user should match; an empty file
// costs what saguin --passwd writes.
func mostCommon(counts map[int]int) int {
	best, n := Iterations, 0
	for it, c := range counts {
		if c > n || c == n && it > best {
			best, n = it, c
		}
	}
	return best
}

// dummySalt is fixed: the dummy's digest is never compared with anything a
// caller chose, it only has to cost what a real verify costs.
var dummySalt = []byte("saguin-dummy")

func dummyHash(iterations int) Hash {
	if iterations == 0 {
		return Hash{Kind: SHA512, Salt: dummySalt, Sum: make([]byte, sumLen)}
	}
	return Hash{Kind: PBKDF2SHA512, Iterations: iterations, Salt: dummySalt, Sum: make([]byte, sumLen)}
}

// Len is how many users the file names.
func (u *Users) Len() int { return len(u.users) }

// Has reports whether the file names user.
func (u *Users) Has(user string) bool {
	_, ok := u.users[user]
	return ok
}

// Check verifies a user's password. An unknown user is verified against the
// dummy hash so that it costs the same, and reported Unknown.
func (u *Users) Check(user string, password []byte) Outcome {
	h, ok := u.users[user]
	if !ok {
		u.dummy.Verify(password)
		return Unknown
	}
	if !h.Verify(password) {
		return Wrong
	}
	return OK
}
