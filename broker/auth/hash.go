// Package auth verifies MQTT credentials against a password file in
// Mosquitto's format, hash for hash (RFC 0002 "Who may connect"): $6$ is one
// SHA-512 of the password followed by the salt, $7$ is PBKDF2-HMAC-SHA512 with
// the iteration count written in the hash, both as mosquitto_passwd writes
// them - base64 with padding, a 12-byte salt and a 64-byte digest.
//
// It knows nothing about files on disk or connections: the configuration reads
// the file, the broker asks Check, off the event loop since a $7$ verify at
// 1,000 iterations costs a third of a millisecond.
package auth

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Iterations is what a $7$ hash saguin --passwd writes uses (RFC 0002
// "Validation"): 0.3 ms per verify on a current core, linear in the count.
const Iterations = 1000

// saltLen and sumLen are Mosquitto's: a 12-byte salt, a SHA-512 digest.
const (
	saltLen = 12
	sumLen  = sha512.Size
)

// maxIterations bounds the count a $7$ hash may ask for: a hash is a CONNECT's
// worth of work, and a line asking for a billion iterations would let one
// file edit stall every connection that names that user.
const maxIterations = 10_000_000

// Kind is the hash family.
type Kind byte

const (
	SHA512       Kind = 6 // $6$: sha512(password || salt)
	PBKDF2SHA512 Kind = 7 // $7$: PBKDF2-HMAC-SHA512
)

// Hash is one decoded password hash.
type Hash struct {
	Kind       Kind
	Iterations int // $7$ only
	Salt       []byte
	Sum        []byte
}

// ErrArgon2 is the refusal of an argon2id hash, which Mosquitto 2.1 can write
// and Sagüin does not read.
var ErrArgon2 = errors.New("its hash is argon2id, which Sagüin does not read; a migration from a file it cannot read must not look like a fleet that has forgotten its passwords - set the password again with saguin --passwd add, which writes $7$")

// ParseHash decodes a hash as Mosquitto writes it: $6$<salt>$<sum> or
// $7$<iterations>$<salt>$<sum>, salt and sum in padded standard base64.
// Anything else is refused with the reason, never read as a password that
// will not match.
func ParseHash(s string) (Hash, error) {
	parts := strings.Split(s, "$")
	switch {
	case strings.HasPrefix(s, "$argon2"):
		return Hash{}, ErrArgon2
	case strings.HasPrefix(s, "$6$") && len(parts) == 4:
		salt, sum, err := saltAndSum(parts[2], parts[3])
		if err != nil {
			return Hash{}, err
		}
		return Hash{Kind: SHA512, Salt: salt, Sum: sum}, nil
	case strings.HasPrefix(s, "$7$") && len(parts) == 5:
		n, err := strconv.Atoi(parts[2])
		if err != nil || n < 1 || n > maxIterations || parts[2][0] == '0' {
			return Hash{}, fmt.Errorf("its $7$ hash names no iteration count from 1 to %d", maxIterations)
		}
		salt, sum, err := saltAndSum(parts[3], parts[4])
		if err != nil {
			return Hash{}, err
		}
		return Hash{Kind: PBKDF2SHA512, Iterations: n, Salt: salt, Sum: sum}, nil
	}
	return Hash{}, errors.New("its hash is not one Sagüin reads: Mosquitto's $6$ (SHA512) and $7$ (PBKDF2-SHA512) are")
}

func saltAndSum(salt64, sum64 string) (salt, sum []byte, err error) {
	salt, err = base64.StdEncoding.Strict().DecodeString(salt64)
	if err != nil || len(salt) == 0 {
		return nil, nil, errors.New("its salt is not base64")
	}
	sum, err = base64.StdEncoding.Strict().DecodeString(sum64)
	if err != nil || len(sum) != sumLen {
		return nil, nil, fmt.Errorf("its digest is not %d bytes of base64", sumLen)
	}
	return salt, sum, nil
}

// digest computes what the hash's Sum would be for password.
func (h Hash) digest(password []byte) []byte {
	if h.Kind == SHA512 {
		d := sha512.New()
		d.Write(password)
		d.Write(h.Salt)
		return d.Sum(nil)
	}
	sum, err := pbkdf2.Key(sha512.New, string(password), h.Salt, h.Iterations, sumLen)
	if err != nil {
		// Only a FIPS-mode refusal of these parameters gets here; a digest
		// of nothing matches no stored sum.
		return nil
	}
	return sum
}

// Verify reports whether password is the one hashed, comparing in constant
// time so the comparison says nothing about how much of the digest matched.
func (h Hash) Verify(password []byte) bool {
	return subtle.ConstantTimeCompare(h.digest(password), h.Sum) == 1
}

// String writes the hash back in Mosquitto's form.
func (h Hash) String() string {
	enc := base64.StdEncoding
	if h.Kind == SHA512 {
		return "$6$" + enc.EncodeToString(h.Salt) + "$" + enc.EncodeToString(h.Sum)
	}
	return "$7$" + strconv.Itoa(h.Iterations) + "$" + enc.EncodeToString(h.Salt) + "$" + enc.EncodeToString(h.Sum)
}

// New hashes password as $7$ with iterations and a fresh random salt, the
// form saguin --passwd writes.
func New(password []byte, iterations int) (Hash, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return Hash{}, fmt.Errorf("reading a random salt: %w", err)
	}
	h := Hash{Kind: PBKDF2SHA512, Iterations: iterations, Salt: salt}
	h.Sum = h.digest(password)
	if h.Sum == nil {
		return Hash{}, errors.New("PBKDF2 refused these parameters")
	}
	return h, nil
}
