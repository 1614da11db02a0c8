package codec

import (
	"reflect"
	"testing"
)

// overwrite fills a buffer with junk, as the next read would.
func overwrite(b []byte) {
	for i := range b {
		b[i] = 'X'
	}
}

func TestClonedPublishOutlivesTheReadBuffer(t *testing.T) {
	for _, tc := range crossCheckPackets5() {
		if _, ok := tc.p.(*Publish); !ok {
			continue
		}
		wire := tc.p.Append(nil, Version5)
		var p Publish
		h, _ := ReadHeader(wire, 0)
		if err := p.Decode(h, wire[h.HeaderLen:], Version5); err != nil {
			t.Fatal(err)
		}
		kept := p.Clone()
		overwrite(wire)
		if !reflect.DeepEqual(normalise(kept), normalise(tc.p)) {
			t.Fatalf("%s: clone changed with the buffer:\n got %+v\nwant %+v", tc.name, kept, tc.p)
		}
	}
}

func TestClonedConnectOutlivesTheReadBuffer(t *testing.T) {
	want := crossCheckPackets5()[0].p.(*Connect)
	wire := want.Append(nil, Version5)
	var c Connect
	h, _ := ReadHeader(wire, 0)
	if err := c.Decode(h, wire[h.HeaderLen:], 0); err != nil {
		t.Fatal(err)
	}
	kept := c.Clone()
	overwrite(wire)
	if !reflect.DeepEqual(normalise(kept), normalise(want)) {
		t.Fatalf("clone changed with the buffer:\n got %+v\nwant %+v", kept, want)
	}
}

func TestCloneOfAPublishAllocatesAFixedNumberOfTimes(t *testing.T) {
	var p *Publish
	for _, tc := range crossCheckPackets5() {
		if tc.name == "PUBLISH QoS 1" { // every property a PUBLISH may carry
			p = tc.p.(*Publish)
		}
	}
	allocs := testing.AllocsPerRun(100, func() { _ = p.Clone() })
	// The struct, the byte arena, the Subscription Identifiers, the User Properties.
	if allocs > 4 {
		t.Fatalf("Clone allocated %v times, want at most 4", allocs)
	}
}
