package channel

import (
	"errors"
	"slices"
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// The worked examples of RFC 0003 "The hash, in full".
func TestTopicHashVectors(t *testing.T) {
	for _, v := range []struct {
		topic      string
		fnv, mixed uint64
		mod3, mod8 uint64
	}{
		{"iot/depot/events/dev-1", 9321193355118713112, 16961261177379703000, 1, 0},
		{"iot/water/w-7/inspect", 14147658934179859562, 16406880391913018636, 2, 4},
		{"orders/resize/thumbnails/42", 15020795679369718730, 10596179872049748585, 0, 1},
		{"a", 12638187200555641996, 198367012849983736, 1, 0},
	} {
		if got := FNV1a(v.topic); got != v.fnv {
			t.Errorf("FNV1a(%q) = %d, want %d", v.topic, got, v.fnv)
		}
		h := TopicHash(v.topic)
		if h != v.mixed {
			t.Errorf("TopicHash(%q) = %d, want %d", v.topic, h, v.mixed)
		}
		if h%3 != v.mod3 || h%8 != v.mod8 {
			t.Errorf("%q: mod 3 = %d, mod 8 = %d, want %d, %d", v.topic, h%3, h%8, v.mod3, v.mod8)
		}
		p3 := Partition{Count: 3, Indices: []uint32{uint32(v.mod3)}}
		if !p3.Accepts(v.topic) {
			t.Errorf("%q not in its own slice of 3", v.topic)
		}
		other := Partition{Count: 3, Indices: []uint32{uint32((v.mod3 + 1) % 3)}}
		if other.Accepts(v.topic) {
			t.Errorf("%q in a slice of 3 it does not hash to", v.topic)
		}
	}
}

func TestSaguinFilterGrammar(t *testing.T) {
	for _, c := range []struct {
		in           string
		count, index uint32
		err          error
	}{
		{"topic_hash(3, 0)", 3, 0, nil},
		{"topic_hash(3,2)", 3, 2, nil},
		{" \t topic_hash \r\n( 008 ,\t007 ) \n", 8, 7, nil},
		{"topic_hash(1, 0)", 1, 0, nil},
		{"topic_hash(2147483647, 2147483646)", 2147483647, 2147483646, nil},
		{"", 0, 0, ErrPartitionEmpty},
		{"  ", 0, 0, ErrPartitionEmpty},
		{"topic_hash", 0, 0, ErrPartitionNotCall},
		{"topic_hash(3, 0", 0, 0, ErrPartitionNotCall},
		{"$topic_hash % 3 == 0", 0, 0, ErrPartitionNotCall},
		{"TOPIC_HASH(3, 0)", 0, 0, ErrPartitionFunction},
		{"hash(3, 0)", 0, 0, ErrPartitionFunction},
		{"topic_hash(3)", 0, 0, ErrPartitionArgs},
		{"topic_hash(3, 0, 1)", 0, 0, ErrPartitionArgs},
		{"topic_hash()", 0, 0, ErrPartitionArgs},
		{"topic_hash(3, )", 0, 0, ErrPartitionArgs},
		{"topic_hash(+3, 0)", 0, 0, ErrPartitionNotNumber},
		{"topic_hash(0x3, 0)", 0, 0, ErrPartitionNotNumber},
		{"topic_hash(3e0, 0)", 0, 0, ErrPartitionNotNumber},
		{"topic_hash(3, -0)", 0, 0, ErrPartitionNotNumber},
		{"topic_hash(3\u00a0, 0)", 0, 0, ErrPartitionNotNumber},
		{"topic_hash(1 0, 0)", 0, 0, ErrPartitionNotNumber},
		{"topic_hash(2147483648, 0)", 0, 0, ErrPartitionTooLarge},
		{"topic_hash(100000000000000000000000, 0)", 0, 0, ErrPartitionTooLarge},
		{"topic_hash(0, 0)", 0, 0, ErrPartitionZero},
		{"topic_hash(8, 8)", 0, 0, ErrPartitionIndex},
		{"topic_hash(1, 8)", 0, 0, ErrPartitionIndex},
	} {
		count, index, err := ParseSlice([]byte(c.in))
		if !errors.Is(err, c.err) || count != c.count || index != c.index {
			t.Errorf("ParseSlice(%q) = %d, %d, %v; want %d, %d, %v", c.in, count, index, err, c.count, c.index, c.err)
		}
	}
	if ErrPartitionNotNumber.Error() == ErrPartitionTooLarge.Error() {
		t.Error("not a number and too large share a sentence")
	}
}

func TestSaguinFilterSlicesOred(t *testing.T) {
	p, err := ParsePartition([][]byte{[]byte("topic_hash(8, 5)"), []byte("topic_hash(8, 1)"), []byte("topic_hash(8,5)")})
	if err != nil || p.Count != 8 || len(p.Indices) != 2 || p.Indices[0] != 1 || p.Indices[1] != 5 {
		t.Fatalf("got %+v, %v", p, err)
	}
	if _, err := ParsePartition([][]byte{[]byte("topic_hash(4, 0)"), []byte("topic_hash(6, 1)")}); !errors.Is(err, ErrPartitionCounts) {
		t.Fatalf("differing counts: %v", err)
	}
	var none Partition
	if none.Declared() || !none.Accepts("anything") {
		t.Fatal("no declaration must accept everything")
	}
	// Over many topics the slices of 4 cover each topic exactly once.
	for i := 0; i < 1000; i++ {
		topic := "devices/d" + string(rune('a'+i%26)) + "/x/" + string(rune('a'+i/26))
		n := 0
		for j := uint32(0); j < 4; j++ {
			if (Partition{Count: 4, Indices: []uint32{j}}).Accepts(topic) {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%q in %d slices of 4", topic, n)
		}
	}
}

func FuzzSaguinFilter(f *testing.F) {
	for _, s := range []string{"topic_hash(3, 0)", "topic_hash(8,7)", " topic_hash ( 1 , 0 ) ", "topic_hash(0,0)", "x(1,2)", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		count, index, err := ParseSlice(v)
		if err != nil {
			if count != 0 || index != 0 {
				t.Fatalf("refused %q but answered %d, %d", v, count, index)
			}
			return
		}
		if count == 0 || count > MaxPartitions || index >= count {
			t.Fatalf("accepted %q as out-of-bound %d, %d", v, count, index)
		}
	})
}

// A declaration kept with its subscription comes back from the store as it
// was declared, and hands the engines the same slice through the User
// Properties a SUBSCRIBE carries (RFC 0003 "Sessions": subscriptions are
// restored with their partition declarations); a stored value Encode did not
// write is refused, never read as some other slice.
func TestPartitionStoredAndRestored(t *testing.T) {
	p, err := ParsePartition([][]byte{[]byte("topic_hash(8, 5)"), []byte("topic_hash(8, 1)")})
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodePartition(p.Encode())
	if err != nil || back.Count != 8 || !slices.Equal(back.Indices, []uint32{1, 5}) {
		t.Fatalf("decoded %+v, %v; want 8 partitions, indices 1 and 5", back, err)
	}
	d, code, why := ReadSubscribe(back.Properties())
	if code != codec.Success || d.Partition.Count != 8 || !slices.Equal(d.Partition.Indices, []uint32{1, 5}) {
		t.Fatalf("as User Properties: %+v 0x%02x %s", d.Partition, byte(code), why)
	}
	if none, err := DecodePartition(nil); err != nil || none.Declared() {
		t.Fatalf("nothing stored: %+v %v", none, err)
	}
	if (Partition{}).Encode() != nil {
		t.Fatal("no declaration encoded as something")
	}
	for _, bad := range [][]byte{
		{0, 0, 0, 8},                         // a count and no index
		{0, 0, 0, 8, 0, 0},                   // not whole numbers
		{0, 0, 0, 0, 0, 0, 0, 0},             // count 0
		{0, 0, 0, 8, 0, 0, 0, 8},             // index not below the count
		{0, 0, 0, 8, 0, 0, 0, 5, 0, 0, 0, 1}, // indices out of order
		{0, 0, 0, 8, 0, 0, 0, 5, 0, 0, 0, 5}, // an index twice
		{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1}, // a count past MaxPartitions
	} {
		if _, err := DecodePartition(bad); err == nil {
			t.Errorf("stored % x accepted", bad)
		}
	}
}
