package broker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/saguin-edge/saguin/broker/acl"
	"github.com/saguin-edge/saguin/broker/auth"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// fiftyRules is a 50-rule acl_file: 48 roles nobody here holds, and the two
// the benchmark's clients are given; pubLimits, when not "", is the limits:
// of the publisher's entry.
func fiftyRules(b *testing.B, pubLimits string) *acl.ACL {
	var src strings.Builder
	src.WriteString("roles:\n")
	for i := range 48 {
		fmt.Fprintf(&src, "  r%d:\n    - topic: site/%d/#\n      allow: [read, write]\n", i, i)
	}
	src.WriteString("  fleet:\n    - topic: fleet/+/temp\n      allow: [read]\n    - topic: fleet/%u/#\n      allow: [write]\n")
	src.WriteString("users:\n  \"sub-*\": [r1, r2, r3, fleet]\n")
	if pubLimits == "" {
		src.WriteString("  \"pub\": [fleet]\n")
	} else {
		src.WriteString("  \"pub\":\n    roles: [fleet]\n    limits: " + pubLimits + "\n")
	}
	a, err := acl.Parse("/bench/acl.yaml", []byte(src.String()), acl.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// benchBroadcastACL is benchBroadcast with an acl_file in force: every
// delivery of the fan-out, and the publish, asked of it.
func benchBroadcastACL(b *testing.B, subs int, pubLimits string) {
	br := newTestBroker(b, Options{})
	defer br.Close()
	br.SetAccess(&Access{ACL: fiftyRules(b, pubLimits)})
	// Nothing checks a password on this door, so the names are set as a
	// certificate door would prove them: the identity is what counts.
	connect := func(c delivery.Client) {
		br.Connect(c, &netloop.ConnectRequest{Version: 5, ClientID: c.ClientID(), CleanStart: true})
		sh := br.shard(c.ClientID())
		sh.mu.Lock()
		sh.sessions[c.ClientID()].who.Store(&identity{user: c.ClientID()})
		sh.mu.Unlock()
	}
	for i := range subs {
		c := &sink{id: fmt.Sprintf("sub-%d", i)}
		connect(c)
		if code, _ := br.Subscribe(c, []byte("fleet/+/temp"), delivery.SubscribeOptions{QoS: 1}); code.IsError() {
			b.Fatal(code)
		}
	}
	pub := &sink{id: "pub"}
	connect(pub)
	p := &codec.Publish{QoS: 1, Topic: []byte("fleet/pub/temp"), Payload: []byte("21.5")}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if code, _ := br.Publish(pub, p); code != codec.Success {
			b.Fatal(code)
		}
	}
}

// BenchmarkBroadcastPublishQoS1To100 beside this is the cost of the
// per-delivery check on the fan-out (docs/performance.md).
func BenchmarkBroadcastPublishQoS1To100WithACL(b *testing.B) { benchBroadcastACL(b, 100, "") }

// BenchmarkPublishQoS1WithEntryLimits beside BenchmarkPublishQoS1UnderACL is
// what charging a publish to the budget of its acl_file entry's limits:
// costs (the entry looked up, the clock read, the budget's shard lock): a
// publish reaching no subscriber, under a rate it never reaches.
func BenchmarkPublishQoS1WithEntryLimits(b *testing.B) {
	benchBroadcastACL(b, 0, "{publish_rate: 100000000}")
}
func BenchmarkPublishQoS1UnderACL(b *testing.B) { benchBroadcastACL(b, 0, "") }

// BenchmarkConnectVerify is a CONNECT's credential check as the broker makes
// it, known user and unknown side by side: the two cost the same.
func BenchmarkConnectVerify(b *testing.B) {
	h, _ := auth.New([]byte("pw"), auth.Iterations)
	u, _ := auth.NewUsers("/p", []auth.Entry{{User: "device-7", Hash: h.String(), Line: 1}})
	br := newTestBroker(b, Options{})
	defer br.Close()
	br.SetAccess(&Access{Doors: map[string]DoorAccess{"tcp": {Users: u}}})
	for _, user := range []string{"device-7", "nobody"} {
		b.Run(user, func(b *testing.B) {
			req := &netloop.ConnectRequest{Door: "tcp", Username: []byte(user), Password: []byte("pw")}
			for b.Loop() {
				br.authenticate(req)
			}
		})
	}
}
