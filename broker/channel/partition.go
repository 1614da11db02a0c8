package channel

import (
	"encoding/binary"
	"errors"
	"slices"
	"strconv"

	"github.com/saguin-edge/saguin/codec"
)

// TopicHash is RFC 0003 "The hash, in full": FNV-1a 64 over the topic's
// bytes, then the splitmix64 finalizer. A protocol constant - clients compute
// their own slice with it - so never a seeded hash.
func TopicHash(topic string) uint64 {
	return Mix(FNV1a(topic))
}

// FNV1a is the 64-bit FNV-1a hash of s's bytes.
func FNV1a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// Mix is the splitmix64 finalizer: FNV-1a's low bits, which a modulus reads,
// are poorly mixed on their own.
func Mix(h uint64) uint64 {
	h ^= h >> 30
	h *= 13787848793156543929
	h ^= h >> 27
	h *= 10723151780598845931
	h ^= h >> 31
	return h
}

// MaxPartitions is the largest partition count a declaration may name, so
// 32-bit gateways and 64-bit servers accept the same SUBSCRIBEs.
const MaxPartitions = 2147483647

// Partition is a SUBSCRIBE's declared slice of its filters' topics (RFC 0003
// "Client-declared partitioning"): one partition count and the indices asked
// for, OR-ed. The zero Partition declares nothing and accepts everything.
type Partition struct {
	Count   uint32
	Indices []uint32 // sorted, no repeats
}

// Declared reports whether the SUBSCRIBE declared a slice at all.
func (p Partition) Declared() bool { return p.Count > 0 }

// Accepts reports whether topic lies in the declared slice.
func (p Partition) Accepts(topic string) bool {
	if p.Count <= 1 {
		return true
	}
	_, ok := slices.BinarySearch(p.Indices, uint32(TopicHash(topic)%uint64(p.Count)))
	return ok
}

// The sentences a refused declaration is answered with, on the SUBACK's
// Reason String. "Not a number" and "too large" are different sentences.
var (
	ErrPartitionEmpty     = errors.New("saguin-filter is empty; the form is topic_hash(<partitions>, <index>)")
	ErrPartitionNotCall   = errors.New("saguin-filter is not a call; the form is topic_hash(<partitions>, <index>)")
	ErrPartitionFunction  = errors.New("saguin-filter names a function Sagüin does not have; the only one is topic_hash(<partitions>, <index>)")
	ErrPartitionArgs      = errors.New("saguin-filter's topic_hash takes exactly two arguments: topic_hash(<partitions>, <index>)")
	ErrPartitionNotNumber = errors.New("saguin-filter's arguments are decimal digits only (no sign, 0x or exponent): topic_hash(<partitions>, <index>)")
	ErrPartitionTooLarge  = errors.New("saguin-filter's partition count or index is larger than 2147483647")
	ErrPartitionZero      = errors.New("saguin-filter's partition count is 0; it is 1 to 2147483647")
	ErrPartitionIndex     = errors.New("saguin-filter's index is not below its partition count")
	ErrPartitionCounts    = errors.New("saguin-filter calls on one SUBSCRIBE name different partition counts; one subscription has one partition space")
)

// ParseSlice reads one saguin-filter value, topic_hash(<partitions>, <index>):
// the function name exact and case-sensitive, each argument one or more ASCII
// digits (leading zeros meaning what they say), whitespace - space, tab, LF,
// CR and nothing else - only around the name, the parentheses and the comma.
func ParseSlice(v []byte) (count, index uint32, err error) {
	i := skipSpace(v, 0)
	if i == len(v) {
		return 0, 0, ErrPartitionEmpty
	}
	name := i
	for i < len(v) && isNameByte(v[i]) {
		i++
	}
	fn := v[name:i]
	i = skipSpace(v, i)
	if len(fn) == 0 || i == len(v) || v[i] != '(' || v[len(v)-1-trailing(v)] != ')' {
		return 0, 0, ErrPartitionNotCall
	}
	if string(fn) != "topic_hash" {
		return 0, 0, ErrPartitionFunction
	}
	body := v[i+1 : len(v)-1-trailing(v)]
	var args [][]byte
	for start, j := 0, 0; ; j++ {
		if j == len(body) || body[j] == ',' {
			args = append(args, body[start:j])
			if j == len(body) {
				break
			}
			start = j + 1
		}
	}
	if len(args) != 2 {
		return 0, 0, ErrPartitionArgs
	}
	var n [2]uint64
	for k, a := range args {
		a = a[skipSpace(a, 0):]
		a = a[:len(a)-trailing(a)]
		if len(a) == 0 {
			return 0, 0, ErrPartitionArgs
		}
		var big bool
		for _, c := range a {
			if c < '0' || c > '9' {
				return 0, 0, ErrPartitionNotNumber
			}
			if !big {
				n[k] = n[k]*10 + uint64(c-'0')
				big = n[k] > MaxPartitions
			}
		}
		if big {
			return 0, 0, ErrPartitionTooLarge
		}
	}
	switch {
	case n[0] == 0:
		return 0, 0, ErrPartitionZero
	case n[1] >= n[0]:
		return 0, 0, ErrPartitionIndex
	}
	return uint32(n[0]), uint32(n[1]), nil
}

// ParsePartition reads every saguin-filter value of one SUBSCRIBE into its
// declaration: slices OR-ed, a slice asked twice kept once, and every call
// naming the same partition count.
func ParsePartition(values [][]byte) (Partition, error) {
	var p Partition
	for _, v := range values {
		count, index, err := ParseSlice(v)
		if err != nil {
			return Partition{}, err
		}
		if p.Count != 0 && p.Count != count {
			return Partition{}, ErrPartitionCounts
		}
		p.Count = count
		if at, found := slices.BinarySearch(p.Indices, index); !found {
			p.Indices = slices.Insert(p.Indices, at, index)
		}
	}
	return p, nil
}

// Encode is the declaration as a session store keeps it with its filter
// (store.Subscription.Partition): the partition count, then each index,
// four bytes big-endian each; nil for none.
func (p Partition) Encode() []byte {
	if !p.Declared() {
		return nil
	}
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+4*len(p.Indices)), p.Count)
	for _, i := range p.Indices {
		b = binary.BigEndian.AppendUint32(b, i)
	}
	return b
}

// ErrPartitionStored is a stored declaration Encode did not write.
var ErrPartitionStored = errors.New("a stored saguin-filter declaration is not a partition count and its sorted indices below it")

// DecodePartition reads what Encode wrote; empty is none. Anything else is
// refused, never guessed at: a subscription served a slice it never declared
// would skip records silently.
func DecodePartition(b []byte) (Partition, error) {
	if len(b) == 0 {
		return Partition{}, nil
	}
	if len(b) < 8 || len(b)%4 != 0 {
		return Partition{}, ErrPartitionStored
	}
	p := Partition{Count: binary.BigEndian.Uint32(b), Indices: make([]uint32, 0, len(b)/4-1)}
	if p.Count == 0 || p.Count > MaxPartitions {
		return Partition{}, ErrPartitionStored
	}
	for off := 4; off < len(b); off += 4 {
		i := binary.BigEndian.Uint32(b[off:])
		if i >= p.Count || len(p.Indices) > 0 && i <= p.Indices[len(p.Indices)-1] {
			return Partition{}, ErrPartitionStored
		}
		p.Indices = append(p.Indices, i)
	}
	return p, nil
}

// Properties are the declaration as a SUBSCRIBE carries it - one
// saguin-filter User Property per index - so that a subscription restored
// at a broker start hands the engines the declaration they read from the
// packet (ReadSubscribe), as its SUBSCRIBE did.
func (p Partition) Properties() []codec.UserProperty {
	out := make([]codec.UserProperty, 0, len(p.Indices))
	for _, i := range p.Indices {
		v := "topic_hash(" + strconv.FormatUint(uint64(p.Count), 10) + ", " + strconv.FormatUint(uint64(i), 10) + ")"
		out = append(out, codec.UserProperty{Key: []byte(FilterKey), Value: []byte(v)})
	}
	return out
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func skipSpace(v []byte, i int) int {
	for i < len(v) && isSpace(v[i]) {
		i++
	}
	return i
}

// trailing is how many whitespace bytes end v.
func trailing(v []byte) int {
	n := 0
	for n < len(v) && isSpace(v[len(v)-1-n]) {
		n++
	}
	return n
}
