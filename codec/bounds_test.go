package codec

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

// allocatedBy reports the bytes the Go heap handed out while f ran.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDecodingAllocatesInProportionToTheDeclaredLength checks invariant 13
// for the packets whose element count the sender chooses: the worst body of
// each kind (the smallest possible elements, 64KiB of them) allocates no more
// than a fixed multiple of its own length: each list is sized once, by
// counting, rather than grown by doubling.
func TestDecodingAllocatesInProportionToTheDeclaredLength(t *testing.T) {
	const size = 64 << 10
	many := func(head []byte, elem []byte) []byte {
		body := append([]byte(nil), head...)
		for len(body)+len(elem) <= size {
			body = append(body, elem...)
		}
		return body
	}
	cases := []struct {
		name string
		h    Header
		body []byte
		p    Packet
	}{
		{"SUBSCRIBE of one-byte filters", Header{Type: TypeSubscribe, Flags: 2},
			many(append(u16(1), 0), append(str("a"), 0)), &Subscribe{}},
		{"UNSUBSCRIBE of one-byte filters", Header{Type: TypeUnsubscribe, Flags: 2},
			many(append(u16(1), 0), str("a")), &Unsubscribe{}},
		{"SUBACK of reason codes", Header{Type: TypeSuback}, many(append(u16(1), 0), raw(0)), &Suback{}},
		{"SUBSCRIBE of zero-length filters", Header{Type: TypeSubscribe, Flags: 2},
			many(append(u16(1), 0), append(str(""), 0)), &Subscribe{}},
		{"PUBLISH of empty User Properties", Header{Type: TypePublish},
			nil, &Publish{}},
	}
	// The PUBLISH: a topic, then one property block of empty User Properties.
	var userProps []byte
	for len(userProps)+5 <= size-16 {
		userProps = append(userProps, 0x26, 0, 0, 0, 0)
	}
	cases[len(cases)-1].body = append(append(str("t"), appendVarint(nil, uint32(len(userProps)))...), userProps...)

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.h.Remaining, tc.h.HeaderLen = len(tc.body), headerLen(len(tc.body))
			var err error
			n := allocatedBy(func() { err = tc.p.Decode(tc.h, tc.body, Version5) })
			if refused := strings.Contains(tc.name, "zero-length"); (err != nil) != refused {
				t.Fatalf("Decode = %v, want refused %v", err, refused)
			}
			if limit := uint64(12 * len(tc.body)); n > limit {
				t.Fatalf("decoding %d bytes allocated %d, more than %d", len(tc.body), n, limit)
			}
			t.Logf("%d bytes decoded with %d bytes allocated (%.1fx)", len(tc.body), n, float64(n)/float64(len(tc.body)))
		})
	}
}

func TestReusedStructReleasesWhatAHugePacketGrew(t *testing.T) {
	var s Subscribe
	big := Subscribe{PacketID: 1}
	for i := 0; i < 1000; i++ {
		big.Subscriptions = append(big.Subscriptions, Subscription{Filter: b("a")})
	}
	for _, p := range []*Subscribe{&big, {PacketID: 2, Subscriptions: []Subscription{{Filter: b("x")}}}} {
		w := p.Append(nil, Version5)
		h, _ := ReadHeader(w, 0)
		if err := s.Decode(h, w[h.HeaderLen:], Version5); err != nil {
			t.Fatal(err)
		}
	}
	if cap(s.Subscriptions) > retainedCap || !bytes.Equal(s.Subscriptions[0].Filter, b("x")) {
		t.Fatalf("kept capacity %d after an ordinary packet", cap(s.Subscriptions))
	}
}
