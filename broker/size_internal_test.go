package broker

import (
	"testing"
	"unsafe"

	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
)

// Every connected client holds one session: a field that takes it past its
// size class costs 10,000 idle devices 320 KiB (docs/netloop.md, "Where an
// idle connection's bytes go").
func TestASessionKeepsItsSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(session{}); n > 352 {
		t.Fatalf("a session is %d bytes: past the 352-byte size class it was packed into", n)
	}
}

// With no password or acl file every client is the same nobody: its CONNECT
// allocates no identity of its own.
func TestAnUncheckedClientSharesOneIdentity(t *testing.T) {
	b := newTestBroker(t, Options{})
	var first *identity
	for _, id := range []string{"a", "b"} {
		who, code := b.authenticate(&netloop.ConnectRequest{ClientID: id, Door: "tcp"})
		if code != codec.Success || who == nil {
			t.Fatalf("%s: refused %v", id, code)
		}
		if first == nil {
			first = who
		} else if who != first {
			t.Fatal("two unchecked clients were given an identity each")
		}
	}
}
