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

// With no acl file every client nobody named is the same nobody: its
// CONNECT allocates no identity of its own - with no access configuration at
// all, and on a door that admits anonymous clients.
func TestAnUncheckedClientSharesOneIdentity(t *testing.T) {
	for name, access := range map[string]*Access{
		"no access configuration": nil,
		"an anonymous door":       {Doors: map[string]DoorAccess{"tcp": {AllowAnonymous: true}}},
	} {
		b := newTestBroker(t, Options{})
		if access != nil {
			b.SetAccess(access)
		}
		var first *identity
		for _, id := range []string{"a", "b"} {
			who, code := b.authenticate(&netloop.ConnectRequest{ClientID: id, Door: "tcp"})
			if code != codec.Success || who == nil {
				t.Fatalf("%s, %s: refused %v", name, id, code)
			}
			if first == nil {
				first = who
			} else if who != first {
				t.Fatalf("%s: two unchecked clients were given an identity each", name)
			}
		}
	}
}
