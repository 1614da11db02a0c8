package codec

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// decodeWire frames a whole encoded packet and decodes it through Packets.
func decodeWire(t testing.TB, wire []byte, version uint8) Packet {
	t.Helper()
	h, err := ReadHeader(wire, 0)
	if err != nil {
		t.Fatalf("ReadHeader(% x): %v", wire, err)
	}
	if h.Total() != len(wire) {
		t.Fatalf("framed %d bytes, encoded %d", h.Total(), len(wire))
	}
	var ps Packets
	p, err := ps.Decode(h, wire[h.HeaderLen:], version)
	if err != nil {
		t.Fatalf("Decode(% x): %v", wire, err)
	}
	return p
}

func b(s string) []byte { return []byte(s) }

// fullProps sets every property ctx may carry to a non-zero value.
func fullProps(ctx propContext) Properties {
	all := Properties{
		PayloadFormat: 1, MessageExpiry: 3600, ContentType: b("text/plain"), ResponseTopic: b("reply/to"),
		CorrelationData: b("\x00\x01corr"), SubscriptionIDs: []uint32{7, 268435455}, SessionExpiry: 120,
		AssignedClientID: b("auto-1"), ServerKeepAlive: 30, AuthMethod: b("SCRAM"), AuthData: b("\xffdata"),
		RequestProblemInfo: 1, WillDelay: 9, RequestResponseInfo: 1, ResponseInfo: b("resp"),
		ServerReference: b("other:1883"), ReasonString: b("why"), ReceiveMaximum: 10, TopicAliasMaximum: 16,
		TopicAlias: 3, MaximumQoS: 1, RetainAvailable: 1,
		User:              []UserProperty{{b("k"), b("v1")}, {b("k"), b("v2")}, {b("a"), b("")}},
		MaximumPacketSize: 1 << 20, WildcardSubAvailable: 1, SubIDAvailable: 1, SharedSubAvailable: 1,
	}
	if ctx == ctxSubscribe {
		all.SubscriptionIDs = all.SubscriptionIDs[:1]
	}
	// Keep only what ctx may carry, with the Present bits a decode reports.
	var out Properties
	wire := all.appendTo(nil, ctx, all.size(ctx))
	r := reader{b: wire}
	if err := out.decode(&r, ctx); err != nil {
		panic(err)
	}
	return out
}

func TestEveryPacketRoundTripsWithEveryProperty(t *testing.T) {
	cases := []struct {
		name string
		p    Packet
	}{
		{"CONNECT", &Connect{Version: Version5, CleanStart: true, KeepAlive: 60, Properties: fullProps(ctxConnect),
			ClientID: b("dev-1"), WillFlag: true, WillQoS: 2, WillRetain: true, WillProperties: fullProps(ctxWill),
			WillTopic: b("will/t"), WillPayload: b("bye"), UsernameFlag: true, Username: b("u"),
			PasswordFlag: true, Password: b("p\x00w")}},
		{"CONNACK", &Connack{SessionPresent: true, Properties: fullProps(ctxConnack)}},
		{"PUBLISH", &Publish{Dup: true, QoS: 1, Retain: true, Topic: b("a/b"), PacketID: 9,
			Properties: fullProps(ctxPublish), Payload: b("hello")}},
		{"PUBACK", &Ack{Type: TypePuback, PacketID: 1, ReasonCode: QuotaExceeded, Properties: fullProps(ctxPuback)}},
		{"PUBREC", &Ack{Type: TypePubrec, PacketID: 2, ReasonCode: NoMatchingSubscribers, Properties: fullProps(ctxPuback)}},
		{"PUBREL", &Ack{Type: TypePubrel, PacketID: 3, ReasonCode: PacketIdentifierNotFound, Properties: fullProps(ctxPuback)}},
		{"PUBCOMP", &Ack{Type: TypePubcomp, PacketID: 4, Properties: fullProps(ctxPuback)}},
		{"SUBSCRIBE", &Subscribe{PacketID: 5, Properties: fullProps(ctxSubscribe), Subscriptions: []Subscription{
			{Filter: b("a/+"), QoS: 2, NoLocal: true, RetainAsPublished: true, RetainHandling: 2},
			{Filter: b("$share/g/x/#"), QoS: 1, RetainHandling: 1}}}},
		{"SUBACK", &Suback{PacketID: 6, Properties: fullProps(ctxSuback), ReasonCodes: []ReasonCode{GrantedQoS2, TopicFilterInvalid}}},
		{"UNSUBSCRIBE", &Unsubscribe{PacketID: 7, Properties: fullProps(ctxUnsubscribe), Filters: [][]byte{b("a/+"), b("#")}}},
		{"UNSUBACK", &Unsuback{PacketID: 8, Properties: fullProps(ctxUnsuback), ReasonCodes: []ReasonCode{Success, NoSubscriptionExisted}}},
		{"PINGREQ", &Pingreq{}},
		{"PINGRESP", &Pingresp{}},
		{"DISCONNECT", &Disconnect{ReasonCode: DisconnectWithWillMessage, Properties: fullProps(ctxDisconnect)}},
		{"AUTH", &Auth{ReasonCode: ContinueAuthentication, Properties: fullProps(ctxAuth)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wire := tc.p.Append(nil, Version5)
			if got := tc.p.Size(Version5); got != len(wire) {
				t.Errorf("Size = %d, encoded %d bytes", got, len(wire))
			}
			got := decodeWire(t, wire, Version5)
			if !reflect.DeepEqual(normalise(got), normalise(tc.p)) {
				t.Errorf("round trip differs:\n got %+v\nwant %+v", got, tc.p)
			}
			if again := got.Append(nil, Version5); !bytes.Equal(again, wire) {
				t.Errorf("re-encoding differs:\n got % x\nwant % x", again, wire)
			}
		})
	}
}

// normalise clears the difference between a nil and an empty slice, which
// the wire cannot express.
func normalise(p Packet) Packet {
	v := reflect.ValueOf(p).Elem()
	c := reflect.New(v.Type())
	c.Elem().Set(v)
	normaliseValue(c.Elem())
	return c.Interface().(Packet)
}

func normaliseValue(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			normaliseValue(v.Field(i))
		}
	case reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		n := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(n, v)
		for i := 0; i < n.Len(); i++ {
			normaliseValue(n.Index(i))
		}
		v.Set(n)
	}
}

func TestEveryPacketRoundTrips311(t *testing.T) {
	cases := []struct {
		name string
		p    Packet
	}{
		{"CONNECT", &Connect{Version: Version311, CleanStart: true, KeepAlive: 60, ClientID: b("dev-1"),
			WillFlag: true, WillQoS: 1, WillTopic: b("will/t"), WillPayload: b("bye"),
			UsernameFlag: true, Username: b("u"), PasswordFlag: true, Password: b("pw")}},
		{"CONNACK", &Connack{ReasonCode: ConnRefusedNotAuthorized311}},
		{"PUBLISH", &Publish{QoS: 2, Topic: b("a/b"), PacketID: 9, Payload: b("hello")}},
		{"PUBLISH QoS 0", &Publish{Topic: b("a/b"), Payload: b("")}},
		{"PUBACK", &Ack{Type: TypePuback, PacketID: 1}},
		{"PUBREL", &Ack{Type: TypePubrel, PacketID: 3}},
		{"SUBSCRIBE", &Subscribe{PacketID: 5, Subscriptions: []Subscription{{Filter: b("a/+"), QoS: 2}}}},
		{"SUBACK", &Suback{PacketID: 6, ReasonCodes: []ReasonCode{GrantedQoS1, SubackFailure311}}},
		{"UNSUBSCRIBE", &Unsubscribe{PacketID: 7, Filters: [][]byte{b("a/+")}}},
		{"UNSUBACK", &Unsuback{PacketID: 8}},
		{"PINGREQ", &Pingreq{}},
		{"PINGRESP", &Pingresp{}},
		{"DISCONNECT", &Disconnect{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wire := tc.p.Append(nil, Version311)
			got := decodeWire(t, wire, Version311)
			if !reflect.DeepEqual(normalise(got), normalise(tc.p)) {
				t.Errorf("round trip differs:\n got %+v\nwant %+v", got, tc.p)
			}
		})
	}
}

func TestReadHeaderNeedsMoreUntilTheLengthIsWhole(t *testing.T) {
	wire := (&Publish{Topic: b("t"), Payload: make([]byte, 200)}).Append(nil, Version311)
	for n := 0; n < 3; n++ { // 0x30, then a two-byte Remaining Length
		if _, err := ReadHeader(wire[:n], 0); !errors.Is(err, ErrNeedMore) {
			t.Fatalf("ReadHeader(%d bytes) = %v, want ErrNeedMore", n, err)
		}
	}
	h, err := ReadHeader(wire[:3], 0)
	if err != nil || h.Total() != len(wire) || h.HeaderLen != 3 {
		t.Fatalf("ReadHeader = %+v, %v; want total %d", h, err, len(wire))
	}
}
