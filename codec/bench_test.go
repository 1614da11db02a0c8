package codec

import (
	"testing"
)

// Benchmarks of the hot path: go test -run '^$' -bench . -benchmem ./codec/
// Decoding and encoding a PUBLISH must report 0 allocs/op.

func benchPackets() []struct {
	name    string
	version uint8
	p       Packet
} {
	payload := make([]byte, 256)
	withProps := Properties{PayloadFormat: 1, MessageExpiry: 60, ContentType: b("application/json"),
		ResponseTopic: b("reply/dev-1"), CorrelationData: b("0123456789abcdef"),
		User: []UserProperty{{b("trace"), b("a1b2c3")}, {b("tenant"), b("acme")}}}
	return []struct {
		name    string
		version uint8
		p       Packet
	}{
		{"Connect/3.1.1", Version311, &Connect{Version: Version311, CleanStart: true, KeepAlive: 60, ClientID: b("sensor-0001"),
			UsernameFlag: true, Username: b("user"), PasswordFlag: true, Password: b("secret")}},
		{"Connect/5", Version5, &Connect{Version: Version5, CleanStart: true, KeepAlive: 60, ClientID: b("sensor-0001"),
			Properties: Properties{SessionExpiry: 3600, ReceiveMaximum: 100, User: []UserProperty{{b("site"), b("a")}}},
			WillFlag:   true, WillQoS: 1, WillTopic: b("status/sensor-0001"), WillPayload: b("offline"),
			UsernameFlag: true, Username: b("user"), PasswordFlag: true, Password: b("secret")}},
		{"Publish/QoS0/3.1.1", Version311, &Publish{Topic: b("plant/line-3/temp"), Payload: payload}},
		{"Publish/QoS0/5", Version5, &Publish{Topic: b("plant/line-3/temp"), Payload: payload}},
		{"Publish/QoS0/5+props", Version5, &Publish{Topic: b("plant/line-3/temp"), Payload: payload, Properties: withProps}},
		{"Publish/QoS1/3.1.1", Version311, &Publish{QoS: 1, PacketID: 42, Topic: b("plant/line-3/temp"), Payload: payload}},
		{"Publish/QoS1/5", Version5, &Publish{QoS: 1, PacketID: 42, Topic: b("plant/line-3/temp"), Payload: payload}},
		{"Publish/QoS1/5+props", Version5, &Publish{QoS: 1, PacketID: 42, Topic: b("plant/line-3/temp"), Payload: payload, Properties: withProps}},
		{"Puback/3.1.1", Version311, &Ack{Type: TypePuback, PacketID: 42}},
		{"Puback/5", Version5, &Ack{Type: TypePuback, PacketID: 42, ReasonCode: NoMatchingSubscribers}},
		{"Subscribe/3.1.1", Version311, &Subscribe{PacketID: 7, Subscriptions: []Subscription{
			{Filter: b("plant/+/temp"), QoS: 1}, {Filter: b("alarms/#"), QoS: 2}}}},
		{"Subscribe/5", Version5, &Subscribe{PacketID: 7, Properties: Properties{SubscriptionIDs: []uint32{12}},
			Subscriptions: []Subscription{{Filter: b("plant/+/temp"), QoS: 1, NoLocal: true}, {Filter: b("alarms/#"), QoS: 2, RetainHandling: 1}}}},
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, bc := range benchPackets() {
		wire := bc.p.Append(nil, bc.version)
		h, err := ReadHeader(wire, 0)
		if err != nil {
			b.Fatal(err)
		}
		var ps Packets
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for b.Loop() {
				h, _ = ReadHeader(wire, 0)
				if _, err := ps.Decode(h, wire[h.HeaderLen:], bc.version); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, bc := range benchPackets() {
		dst := make([]byte, 0, 4096)
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(bc.p.Size(bc.version)))
			b.ReportAllocs()
			for b.Loop() {
				dst = bc.p.Append(dst[:0], bc.version)
			}
		})
	}
}

// TestPublishDecodeAndEncodeAllocateNothing holds the hot path to zero
// allocations outside the benchmarks, so `make test` catches a regression.
func TestPublishDecodeAndEncodeAllocateNothing(t *testing.T) {
	for _, bc := range benchPackets() {
		if _, ok := bc.p.(*Publish); !ok {
			continue
		}
		wire := bc.p.Append(nil, bc.version)
		var p Publish
		dst := make([]byte, 0, 4096)
		h, _ := ReadHeader(wire, 0)
		_ = p.Decode(h, wire[h.HeaderLen:], bc.version) // first use grows the reusable slices
		allocs := testing.AllocsPerRun(100, func() {
			h, _ := ReadHeader(wire, 0)
			if err := p.Decode(h, wire[h.HeaderLen:], bc.version); err != nil {
				t.Fatal(err)
			}
			dst = p.Append(dst[:0], bc.version)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per decode+encode, want 0", bc.name, allocs)
		}
	}
}
