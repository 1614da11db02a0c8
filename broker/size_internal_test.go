package broker

import (
	"testing"
	"unsafe"
)

// Every connected client holds one session: a field that takes it past its
// size class costs 10,000 idle devices 320 KiB (docs/netloop.md, "Where an
// idle connection's bytes go").
func TestASessionKeepsItsSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(session{}); n > 352 {
		t.Fatalf("a session is %d bytes: past the 352-byte size class it was packed into", n)
	}
}
