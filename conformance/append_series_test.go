package conformance

import (
	"regexp"
	"strings"
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// What an operator is shown of append channels: the start's log, the scrape
// (checklist-channels.md A10, A7.3).

// startAppendOps starts the events channel on ev/# with channelKeys and an
// operations listener.
func startAppendOps(t *testing.T, channelKeys string) *opsBroker {
	t.Helper()
	return withOps(startAppend(t, t.TempDir(), memoryStorage, "operations:\n"+indentLines(opsTCP, "  "), channelKeys))
}

// A10.2, A10.3: the retention sweeps' intervals are logged at start - size
// every second, age every tenth of the shortest retention_period, never
// under a second.
func TestRetentionSweepIntervalsAreLoggedAtStart(t *testing.T) {
	b := startAppend(t, t.TempDir(), memoryStorage, "", "retention_period: 1h")
	line := b.log.wait(regexp.MustCompile(`retention sweeps`), waitLong)
	if !strings.Contains(line, "size_every=1s") || !strings.Contains(line, "age_every=6m0s") {
		t.Fatalf("start line %q, want size_every=1s and age_every=6m0s (a tenth of 1h)", line)
	}
}

// A7.3: a record too large for a consumer disconnects it (0x95) and is not
// counted as a dropped delivery: session_deliveries_dropped_total{cause=
// "too_large"} is broadcast's alone.
func TestAppendRecordTooLargeIsNotCountedAsADroppedDelivery(t *testing.T) {
	ob := startAppendOps(t, "")
	publishAll(t, ob.brokerProc, "ev/big", strings.Repeat("y", 600))
	sub := dialRaw(t, ob.addr, codec.Version5)
	sub.mustConnect("small", both(session(300), func(c *codec.Connect) {
		c.Properties.MaximumPacketSize = 300
		c.Properties.Present.Set(codec.PropMaximumPacketSize)
	}))
	sub.mustSubscribe(1, "ev/#", 1)
	sub.expectDisconnect(codec.PacketTooLarge)
	_, body := ob.get(t, "GET", "/metrics")
	if v, _ := value(parseScrape(t, body)["saguin_session_deliveries_dropped_total"], "cause", "too_large"); v != 0 {
		t.Fatalf("session_deliveries_dropped_total{cause=too_large} = %v after an append record too large, want 0", v)
	}
}
