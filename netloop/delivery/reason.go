package delivery

import (
	"strings"
	"sync/atomic"

	"github.com/saguin-edge/saguin/codec"
)

// Reason is a label of RFC 0005's refusal counters
// (saguin_connections_refused_total, saguin_publish_refused_total,
// saguin_subscriptions_refused_total): an MQTT reason code, or one of the
// splits RFC 0005 makes of 0x97 so that "am I throttling my own devices" and
// "is something full" read apart. The set is closed - 256 codes and the
// splits - so no client-chosen string ever becomes a series.
type Reason uint16

// The splits of 0x97 Quota exceeded.
const (
	// ReasonPublishRateExceeded: a publish over limits.publish_rate or
	// limits.publish_bytes.
	ReasonPublishRateExceeded Reason = 256 + iota
	// ReasonInflightAllowanceExceeded: a QoS 2 publish from a client
	// already holding broker.qos2.max_inflight_per_client exchanges.
	ReasonInflightAllowanceExceeded
	// ReasonSessionStoreFull: a CONNECT refused 0x97, which at CONNECT is
	// always the session store having no room (a Will, a group's cursor).
	ReasonSessionStoreFull
	reasonCount
)

// ReasonOf is the label of a plain reason code.
func ReasonOf(code codec.ReasonCode) Reason { return Reason(code) }

// String is the label's text: the MQTT specification's name for the code, in
// lower case as RFC 0005 writes them ("not authorized"), or the split's name.
func (r Reason) String() string {
	switch r {
	case ReasonPublishRateExceeded:
		return "publish rate exceeded"
	case ReasonInflightAllowanceExceeded:
		return "inflight allowance exceeded"
	case ReasonSessionStoreFull:
		return "session store full"
	}
	return strings.ToLower(codec.ReasonCode(r).String())
}

// ReasonCounts counts by Reason: a fixed array, so counting is one atomic
// add at an index - no map, no lock on the path that counts.
type ReasonCounts [reasonCount]atomic.Uint64

// Add counts one refusal for r.
func (rc *ReasonCounts) Add(r Reason) { rc[r].Add(1) }

// Load is the count for r.
func (rc *ReasonCounts) Load(r Reason) uint64 { return rc[r].Load() }

// Each calls fn for every reason counted at least once, in code order: a
// refusal nobody has been answered with has no series (RFC 0005).
func (rc *ReasonCounts) Each(fn func(r Reason, n uint64)) {
	for i := range rc {
		if n := rc[i].Load(); n > 0 {
			fn(Reason(i), n)
		}
	}
}
