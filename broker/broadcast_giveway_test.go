package broker

import (
	"bytes"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/memory"
	"github.com/saguin-edge/saguin/store/sqlite"
)

// syncBuffer is a log destination tests read while the broker writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var fullWarningRE = regexp.MustCompile(`msg="the broadcast log's provider is full[^"]*".* messages=(\d+) .*\bdeliveries=(\d+)`)

// warnedTotals sums messages= and deliveries= over every full-provider
// warning in out.
func warnedTotals(t *testing.T, out string) (warnings int, messages, deliveries uint64) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		m := fullWarningRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		warnings++
		n, _ := strconv.ParseUint(m[1], 10, 64)
		d, _ := strconv.ParseUint(m[2], 10, 64)
		messages += n
		deliveries += d
	}
	return warnings, messages, deliveries
}

// The row of RFC 0002 "Every session's state" for a QoS 1/2 broadcast to
// sessions that are away, when another write on the provider (retained
// values) fills it: the log gives up the fewest oldest messages that make
// room, every delivery a session loses is counted storage_full, and the
// ten-second warning carries the true totals since the last one.
func TestGiveWayAtAFullProviderCountsWhatTheAwaySessionLoses(t *testing.T) {
	for _, kind := range []string{"memory", "sqlite"} {
		t.Run(kind, func(t *testing.T) {
			var o Options
			// free is the room left on the provider under its bound; a
			// sqlite provider's bound is pages of its file, so it has none.
			var free func() int64
			switch kind {
			case "memory":
				const maxBytes = 24_000
				p, err := memory.Open(store.MemoryOptions{Name: "test", MaxBytes: maxBytes})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { p.Close() })
				if o.Sessions, err = p.Sessions(); err != nil {
					t.Fatal(err)
				}
				if o.Retained, err = p.Retained(0); err != nil {
					t.Fatal(err)
				}
				free = func() int64 { return maxBytes - p.Bytes() }
			case "sqlite":
				o.Sessions, o.Retained = sqliteStores(t, 160<<10)
			}
			var logs syncBuffer
			clk := clock.NewFake(time.Unix(1_700_000_000, 0))
			o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			o.Clock = clk
			o.RetainedWithSessions = true
			b, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Restore(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(b.Close)

			away := &ackClient{id: "away"}
			connectAs(t, b, away, true, 3600, nil)
			b.Subscribe(away, []byte("t/#"), delivery.SubscribeOptions{QoS: 1})
			b.Disconnected(away, 3600, false)
			const owed = 100
			for i := range owed {
				if code := publish(b, "p", "t/x", fmt.Sprintf("m%03d", i)+strings.Repeat("o", 96), 1, false); code != 0 {
					t.Fatalf("publish %d: 0x%02x", i, byte(code))
				}
			}
			if got := b.Counters().DeliveriesDroppedStorageFull.Load(); got != 0 {
				t.Fatalf("%d deliveries dropped before the provider was full", got)
			}
			// Retained values fill the provider and take their room from
			// the log, ten seconds apart now and then so that several
			// warnings are written.
			value := strings.Repeat("r", 1000)
			refused := 0
			for i := 0; refused == 0 && i < 400; i++ {
				before := b.Counters().DeliveriesDroppedStorageFull.Load()
				if code := publish(b, "p", fmt.Sprintf("r/%d", i), value, 0, true); code != 0 {
					refused++
				}
				// The fewest that make room: had one fewer message gone
				// (each holds 103 bytes), the value would not have fitted.
				if free != nil && refused == 0 && b.Counters().DeliveriesDroppedStorageFull.Load() > before && free() >= 103 {
					t.Errorf("retained value %d: the log gave up %d messages, leaving %d bytes free; fewer would have made room",
						i, b.Counters().DeliveriesDroppedStorageFull.Load()-before, free())
				}
				if i%7 == 0 {
					clk.Advance(11 * time.Second)
				}
			}
			if refused == 0 {
				t.Fatal("the retained values never filled the provider")
			}
			// The warning of the last losses is owed until ten seconds pass.
			clk.Advance(11 * time.Second)
			publish(b, "p", "r/last", value, 0, true)

			c := &ackClient{id: "away"}
			if present, code, _ := connectAs(t, b, c, false, 3600, nil); !present || code != 0 {
				t.Fatalf("resume: present %v, 0x%02x", present, byte(code))
			}
			var received int
			deadline := time.Now().Add(5 * time.Second)
			for {
				received = 0
				for _, p := range c.payloads() {
					if strings.HasPrefix(p, "m") {
						received++
					}
				}
				if received == owed-int(b.Counters().DeliveriesDroppedStorageFull.Load()) || time.Now().After(deadline) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			lost := uint64(owed - received)
			dropped := b.Counters().DeliveriesDroppedStorageFull.Load()
			if dropped != lost {
				t.Errorf("storage_full counted %d dropped deliveries; the session received %d of %d, so it lost %d", dropped, received, owed, lost)
			}
			if lost == 0 {
				t.Error("the session lost nothing: the provider never made room from the log")
			}
			warnings, messages, deliveries := warnedTotals(t, logs.String())
			if warnings < 2 {
				t.Errorf("%d full-provider warnings; want several, ten seconds apart", warnings)
			}
			if deliveries != lost || messages != lost {
				t.Errorf("the warnings total messages=%d deliveries=%d; the session lost %d messages", messages, deliveries, lost)
			}
			if t.Failed() {
				t.Logf("warnings:\n%s", strings.Join(fullWarningRE.FindAllString(logs.String(), -1), "\n"))
			}
		})
	}
}

// sqliteStores opens a sqlite provider bounded at maxBytes in t.TempDir().
func sqliteStores(t *testing.T, maxBytes int64) (store.Sessions, store.Retained) {
	t.Helper()
	p, err := sqlite.Open(store.SQLiteOptions{Name: "test", FilePath: filepath.Join(t.TempDir(), "test.db"), ReadConnections: 1,
		MaxBytes: maxBytes, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	ss, err := p.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Retained(0)
	if err != nil {
		t.Fatal(err)
	}
	return ss, r
}
