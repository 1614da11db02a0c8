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
	if n := unsafe.Sizeof(session{}); n > 208 {
		t.Fatalf("a session is %d bytes: past the 208-byte size class its rarely used parts were moved out of (sessionRare)", n)
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

// A connected client that has subscribed to nothing, holds nothing in
// flight and is not away makes no rare part: the timer, windows, groups and
// holds of sessionRare are made at their first need, or every idle device
// would pay the 144 bytes they take.
func TestAnIdleSessionMakesNoRarePart(t *testing.T) {
	st := newStores(t, 0)
	b := st.broker(t, Options{})
	for _, c := range []*ackClient{{id: "clean"}, {id: "kept"}} {
		expiry := uint32(0)
		if c.id == "kept" {
			expiry = 60
		}
		if _, code, _ := connectAs(t, b, c, true, expiry, nil); code != codec.Success {
			t.Fatalf("%s: CONNECT answered 0x%02x", c.id, byte(code))
		}
		sh := b.shard(c.id)
		sh.mu.Lock()
		s := sh.sessions[c.id]
		sh.mu.Unlock()
		if s == nil || s.rare != nil {
			t.Fatalf("%s: an idle connected session made its rare part (%v)", c.id, s)
		}
	}
}
