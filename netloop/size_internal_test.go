package netloop

import (
	"testing"
	"unsafe"
)

// Every connection holds a ring of queue entries and a window of in-flight
// slots, each embedding a whole delivery.Delivery: embedding it (its Ref in
// place of the offset and group it replaced) must not grow either, or 10,000
// connections pay for it.
func TestAQueueEntryAndAnInFlightSlotKeepTheirSize(t *testing.T) {
	if n := unsafe.Sizeof(outEntry{}); n > 80 {
		t.Fatalf("a queue entry is %d bytes, was 80", n)
	}
	if n := unsafe.Sizeof(inflight{}); n > 88 {
		t.Fatalf("an in-flight slot is %d bytes, was 88", n)
	}
}

// Every connection on the event loops is one gnetConn: a field that takes it
// past the allocator's 352-byte size class costs 10,000 idle devices 320 KiB
// (docs/netloop.md, "Where an idle connection's bytes go"). It was packed
// into 320 bytes; the refusal record's claimed id and user name (32 bytes,
// kept for the connection's life) took it to 352.
func TestAConnectionKeepsItsSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(gnetConn{}); n > 352 {
		t.Fatalf("a connection and its gnet transport are %d bytes: past the 352-byte size class", n)
	}
}
