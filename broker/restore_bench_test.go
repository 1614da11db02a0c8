package broker

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/memory"
)

// BenchmarkRestore is a start over a memory provider holding sessions kept
// while away, each with a filter of its own and a Will due at the start, and
// a broadcast log of QoS 1 messages spread over them: what Restore costs
// beyond reading the store. An op is one Restore of the whole state.
func BenchmarkRestore(b *testing.B) {
	for _, c := range []struct{ sessions, log int }{{200, 2000}, {2000, 20000}} {
		b.Run(fmt.Sprintf("sessions=%d/log=%d", c.sessions, c.log), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				ss := restoreState(b, c.sessions, c.log)
				br, err := New(Options{Sessions: ss, Retained: mustRetained(b), Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := br.Restore(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if n := br.Sessions(); n != c.sessions {
					b.Fatalf("%d sessions restored, want %d", n, c.sessions)
				}
				br.Close()
				b.StartTimer()
			}
		})
	}
}

// restoreState is a session store as a stop left it: n away sessions
// dev-<i>, each subscribed to dev/<i>/# at QoS 1 with a Will due an hour
// ago, and m log messages, message j to dev/<j mod n>/t.
func restoreState(b *testing.B, n, m int) store.Sessions {
	b.Helper()
	p, err := memory.Open(store.MemoryOptions{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	ss, err := p.Sessions()
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	for i := range n {
		id := fmt.Sprintf("dev-%d", i)
		err := ss.Put(store.Session{ClientID: id, Expiry: 24 * time.Hour, DisconnectedAt: now.Add(-time.Minute), ReceiveMaximum: 65535,
			Subscriptions: []store.Subscription{{Filter: fmt.Sprintf("dev/%d/#", i), QoS: 1}},
			Will:          &store.Will{Topic: "will/" + id, Payload: []byte("gone"), QoS: 1, DueAt: now.Add(-time.Hour)}})
		if err != nil {
			b.Fatal(err)
		}
	}
	for j := range m {
		r := store.Record{Topic: fmt.Sprintf("dev/%d/t", j%n), Payload: []byte("payload"), QoS: 1, ClientID: "pub", Time: now.Add(-2 * time.Minute)}
		if _, err := ss.Log().Append(store.BroadcastEntry{Record: r}); err != nil {
			b.Fatal(err)
		}
	}
	return ss
}

func mustRetained(b *testing.B) store.Retained {
	p, err := memory.Open(store.MemoryOptions{Name: "retained"})
	if err != nil {
		b.Fatal(err)
	}
	r, err := p.Retained(0)
	if err != nil {
		b.Fatal(err)
	}
	return r
}
