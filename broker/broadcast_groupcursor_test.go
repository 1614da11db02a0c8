package broker

import (
	"errors"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// cursorlessMember stores a kept session holding jobsGroup with no group
// cursor (Put writes none), as a store that lost it would hold it.
func cursorlessMember(t *testing.T, ss store.Sessions) {
	t.Helper()
	err := ss.Put(store.Session{ClientID: "m-a", Expiry: time.Hour, DisconnectedAt: time.Now(),
		Subscriptions: []store.Subscription{{Filter: jobsGroup, ShareGroup: "g", QoS: 1, LogOffset: 1}}})
	if err != nil {
		t.Fatal(err)
	}
}

// A resumed session holding a shared group with no cursor gets one created
// before its CONNACK (RFC 0003 "Broadcast").
func TestResumedSessionsGroupWithNoCursorGetsOneBeforeTheConnack(t *testing.T) {
	st := newStores(t, 0)
	cursorlessMember(t, st.sessions)
	b := st.broker(t, Options{})
	if present, code, _ := connectAs(t, b, &ackClient{id: "m-a"}, false, 3600, nil); !present || code != 0 {
		t.Fatalf("resume: present %v, code 0x%02x", present, byte(code))
	}
	if _, ok, _ := st.sessions.GroupCursor(jobsGroup); !ok {
		t.Fatal("the CONNACK went with the group still holding no cursor")
	}
}

// failingCursors is a session store whose group cursors cannot be written.
type failingCursors struct{ store.Sessions }

func (failingCursors) SaveGroupCursor(string, uint64) error { return errors.New("disk gone") }

// ... or, when the store cannot create it, the CONNECT is refused 0x83 and
// the session is left as it was (RFC 0002 CONNACK table).
func TestResumedSessionWhoseGroupCursorCannotBeStoredIsRefused0x83(t *testing.T) {
	st := newStores(t, 0)
	cursorlessMember(t, st.sessions)
	st.sessions = failingCursors{st.sessions}
	b := st.broker(t, Options{})
	if _, code, _ := connectAs(t, b, &ackClient{id: "m-a"}, false, 3600, nil); code != 0x83 {
		t.Fatalf("CONNACK 0x%02x, want 0x83", byte(code))
	}
	if got, _, _ := st.sessions.Get("m-a"); got.DisconnectedAt.IsZero() {
		t.Fatal("a refused CONNECT stored its session as connected")
	}
}
