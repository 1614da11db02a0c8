package codec

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// One test per rule MQTT or RFC 0002 makes a refusal at read time, each named
// after the rule and asserting the reason code RFC 0002 answers with.

// ---- framing ----

func TestDeclaredLengthAboveLimitIsTooLargeBeforeTheBodyArrives(t *testing.T) {
	// Only the fixed header of a 1,000-byte PUBLISH has arrived.
	head := appendVarint([]byte{0x30}, 1000)
	h, err := ReadHeader(head, 100)
	e := AsError(err)
	if e == nil || e.Code != PacketTooLarge {
		t.Fatalf("ReadHeader = %+v, %v; want 0x95", h, err)
	}
	if h.Type != TypePublish {
		t.Errorf("the refused header still names its type: got %s", h.Type)
	}
}

func TestLimitCountsTheWholePacketFixedHeaderIncluded(t *testing.T) {
	w := pkt(0x30, str("t"), []byte("123456")) // 2 + 9 bytes
	if _, err := ReadHeader(w, len(w)); err != nil {
		t.Fatalf("a packet exactly at the limit: %v", err)
	}
	if _, err := ReadHeader(w, len(w)-1); AsError(err) == nil || AsError(err).Code != PacketTooLarge {
		t.Fatalf("a packet one byte over the limit: %v, want 0x95", err)
	}
}

func TestRemainingLengthLongerThanFourBytesIsMalformed(t *testing.T) {
	_, err := ReadHeader(raw(0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01), 0)
	if e := AsError(err); e == nil || e.Code != MalformedPacket {
		t.Fatalf("got %v, want 0x81", err)
	}
}

func TestRemainingLengthNotInShortestFormIsMalformed(t *testing.T) {
	_, err := ReadHeader(raw(0x30, 0x80, 0x00), 0)
	if e := AsError(err); e == nil || e.Code != MalformedPacket {
		t.Fatalf("got %v, want 0x81", err)
	}
}

func TestRemainingLengthReadsMQTTsLargestValue(t *testing.T) {
	h, err := ReadHeader(raw(0x30, 0xFF, 0xFF, 0xFF, 0x7F), 0)
	if err != nil || h.Remaining != MaxRemaining || h.HeaderLen != 5 {
		t.Fatalf("ReadHeader = %+v, %v", h, err)
	}
}

func TestRemainingLengthCutShortNeedsMore(t *testing.T) {
	for _, w := range [][]byte{raw(0x30), raw(0x30, 0x80), raw(0x30, 0xFF, 0xFF, 0xFF)} {
		if _, err := ReadHeader(w, 0); !errors.Is(err, ErrNeedMore) {
			t.Errorf("ReadHeader(% x) = %v, want ErrNeedMore", w, err)
		}
	}
}

func TestBodyLengthDifferentFromRemainingLengthIsMalformed(t *testing.T) {
	var p Publish
	err := p.Decode(Header{Type: TypePublish, Remaining: 10, HeaderLen: 2}, str("a/b"), Version5)
	if e := AsError(err); e == nil || e.Code != MalformedPacket {
		t.Fatalf("got %v, want 0x81", err)
	}
}

// ---- fixed header ----

func TestReservedFixedHeaderFlagsAreMalformed(t *testing.T) {
	bodies := map[Type][]byte{
		TypeConnect: connectHead(4, 0x02), TypeConnack: raw(0, 0), TypePuback: u16(1), TypePubrec: u16(1),
		TypePubrel: u16(1), TypePubcomp: u16(1), TypeSubscribe: append(u16(1), append(str("a"), 0)...),
		TypeSuback: raw(0, 1, 0), TypeUnsubscribe: append(u16(1), str("a")...), TypeUnsuback: u16(1),
		TypePingreq: nil, TypePingresp: nil, TypeDisconnect: nil,
	}
	for typ, body := range bodies {
		for flags := byte(0); flags < 16; flags++ {
			w := pkt(byte(typ)<<4|flags, body)
			if flags == fixedFlags[typ] {
				if typ != TypeConnect { // connectHead lacks a client id
					accepts(t, w, Version311)
				}
				continue
			}
			refuses(t, w, Version311, MalformedPacket)
		}
	}
}

func TestPacketTypeZeroIsMalformed(t *testing.T) {
	refuses(t, raw(0x00, 0x00), Version5, MalformedPacket)
}

func TestAuthIsMalformedUnderMQTT311(t *testing.T) {
	refuses(t, raw(0xF0, 0x00), Version311, MalformedPacket)
}

// ---- CONNECT ----

func connect311(flags byte, rest ...[]byte) []byte {
	return pkt(0x10, append([][]byte{connectHead(4, flags), str("id")}, rest...)...)
}

func connect5(flags byte, properties []byte, rest ...[]byte) []byte {
	return pkt(0x10, append([][]byte{connectHead(5, flags), properties, str("id")}, rest...)...)
}

func TestConnectReservedFlagIsMalformed(t *testing.T) {
	refuses(t, connect5(0x03, props()), Version5, MalformedPacket)
	e := refuses(t, connect311(0x03), Version311, MalformedPacket)
	if ReturnCode311(e) != ConnRefusedNotAuthorized311 {
		t.Errorf("3.1.1 return code %s, want 0x05", ReturnCode311(e))
	}
}

func TestConnectWillQoS3IsMalformed(t *testing.T) {
	refuses(t, connect5(0x04|0x18, props(), props(), str("w"), str("p")), Version5, MalformedPacket)
}

func TestConnectWillQoSWithoutWillIsMalformed(t *testing.T) {
	refuses(t, connect5(0x08, props()), Version5, MalformedPacket)
	refuses(t, connect311(0x10), Version311, MalformedPacket)
}

func TestConnectWillRetainWithoutWillIsProtocolError(t *testing.T) {
	refuses(t, connect5(0x20, props()), Version5, ProtocolError)
}

func TestConnect311PasswordWithoutUserNameIsProtocolError(t *testing.T) {
	e := refuses(t, connect311(0x40, str("pw")), Version311, ProtocolError)
	if ReturnCode311(e) != ConnRefusedNotAuthorized311 {
		t.Errorf("3.1.1 return code %s, want 0x05", ReturnCode311(e))
	}
}

func TestConnect5PasswordWithoutUserNameIsAllowed(t *testing.T) {
	accepts(t, connect5(0x40, props(), str("pw")), Version5)
}

func TestConnectMQTT31IsRefusedAsUnsupportedVersion(t *testing.T) {
	w := pkt(0x10, str("MQIsdp"), raw(3, 0x02), u16(60), str("id"))
	e := refuses(t, w, 0, UnsupportedProtocolVersion)
	var c Connect
	h, _ := ReadHeader(w, 0)
	_ = c.Decode(h, w[h.HeaderLen:], 0)
	if c.Version != Version31 {
		t.Errorf("Version = %d, want 3 so the refusal is answered in 3.1's words", c.Version)
	}
	if ReturnCode311(e) != ConnRefusedProtocolVersion311 {
		t.Errorf("return code %s, want 0x01", ReturnCode311(e))
	}
	// What a test client builds to see it refused is the same packet.
	built := (&Connect{CleanStart: true, KeepAlive: 60, ClientID: b("id")}).Append(nil, Version31)
	if !bytes.Equal(built, w) {
		t.Errorf("Append(Version31) = % x, want % x", built, w)
	}
}

func TestConnectUnknownProtocolLevelIsUnsupportedVersion(t *testing.T) {
	w := pkt(0x10, connectHead(6, 0x02), str("id"))
	refuses(t, w, 0, UnsupportedProtocolVersion)
	var c Connect
	h, _ := ReadHeader(w, 0)
	_ = c.Decode(h, w[h.HeaderLen:], 0)
	if c.Version != 6 {
		t.Errorf("Version = %d, want the level the packet said, 6", c.Version)
	}
}

func TestConnectProtocolNameOtherThanMQTTIsMalformed(t *testing.T) {
	w := pkt(0x10, str("MQTX"), raw(4, 2), u16(60), str("id"))
	refuses(t, w, 0, MalformedPacket)
	var c Connect
	h, _ := ReadHeader(w, 0)
	_ = c.Decode(h, w[h.HeaderLen:], 0)
	if c.Version != 0 {
		t.Errorf("Version = %d, want 0: the packet never said which protocol it speaks", c.Version)
	}
}

func TestConnectVersionIsKnownWhenALaterFieldIsRefused(t *testing.T) {
	w := connect5(0x01, props())
	var c Connect
	h, _ := ReadHeader(w, 0)
	if err := c.Decode(h, w[h.HeaderLen:], 0); err == nil || c.Version != Version5 {
		t.Fatalf("Decode = %v with Version %d, want a refusal with Version 5", err, c.Version)
	}
}

func TestConnectUserNameNotWellFormedUTF8IsMalformedAndA311BadCredential(t *testing.T) {
	e := refuses(t, connect311(0x80, str("\xff\xfe")), Version311, MalformedPacket)
	if e.Rule != RuleUserNameUTF8 || ReturnCode311(e) != ConnRefusedBadUserNamePassword {
		t.Errorf("rule %q maps to %s, want RuleUserNameUTF8 and 0x04", e.Rule, ReturnCode311(e))
	}
}

func TestConnectUserNameHoldingNulIsLeftToTheBrokersBadUserName(t *testing.T) {
	w := connect311(0x80, str("a\x00b"))
	accepts(t, w, Version311)
	var c Connect
	h, _ := ReadHeader(w, 0)
	_ = c.Decode(h, w[h.HeaderLen:], 0)
	if e := AsError(CheckUserName(c.Username)); e == nil || e.Code != BadUserNameOrPassword {
		t.Fatalf("CheckUserName = %v, want 0x86", e)
	}
}

func TestConnectClientIDHoldingNulIsMalformed(t *testing.T) {
	refuses(t, pkt(0x10, connectHead(4, 2), str("a\x00")), 0, MalformedPacket)
}

func TestConnectAuthenticationDataWithoutMethodIsProtocolError(t *testing.T) {
	refuses(t, connect5(0x02, props(raw(0x16), str("data"))), 0, ProtocolError)
}

func TestConnectPropertyItMayNotCarryIsMalformed(t *testing.T) {
	refuses(t, connect5(0x02, props(raw(0x23, 0, 1))), 0, MalformedPacket) // Topic Alias
}

func TestWillPropertyItMayNotCarryIsMalformed(t *testing.T) {
	// Session Expiry Interval belongs to CONNECT, not to its Will.
	refuses(t, connect5(0x06, props(), props(raw(0x11, 0, 0, 0, 1)), str("w"), str("p")), 0, MalformedPacket)
}

func TestConnectBytesAfterLastFieldAreMalformed(t *testing.T) {
	refuses(t, connect311(0x02, raw(0)), 0, MalformedPacket)
}

func TestConnectFieldRunningPastThePacketIsMalformed(t *testing.T) {
	w := connect311(0xC2, str("user"), u16(10), []byte("pw"))
	refuses(t, w, 0, MalformedPacket)
}

// ---- properties ----

func publish5(properties []byte) []byte {
	return pkt(0x32, str("a/b"), u16(1), properties, []byte("payload"))
}

func TestPropertyCarriedTwiceIsProtocolError(t *testing.T) {
	refuses(t, publish5(props(raw(0x02, 0, 0, 0, 1), raw(0x02, 0, 0, 0, 2))), Version5, ProtocolError)
}

func TestSubscriptionIdentifierMayRepeatOnlyInPublish(t *testing.T) {
	accepts(t, publish5(props(raw(0x0B, 1), raw(0x0B, 2))), Version5)
	refuses(t, pkt(0x82, u16(1), props(raw(0x0B, 1), raw(0x0B, 2)), str("a"), raw(0)), Version5, ProtocolError)
}

func TestUserPropertiesKeepTheirOrderAndRepeatedNames(t *testing.T) {
	w := publish5(props(raw(0x26), str("k"), str("2"), raw(0x26), str("a"), str("1"), raw(0x26), str("k"), str("0")))
	var p Publish
	h, _ := ReadHeader(w, 0)
	if err := p.Decode(h, w[h.HeaderLen:], Version5); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range p.Properties.User {
		got = append(got, string(u.Key)+"="+string(u.Value))
	}
	if strings.Join(got, ",") != "k=2,a=1,k=0" {
		t.Fatalf("User Properties = %v", got)
	}
	if again := p.Append(nil, Version5); !bytes.Equal(again, w) {
		t.Fatalf("re-encoded % x, want % x", again, w)
	}
}

func TestForbiddenPropertyValuesAreProtocolErrors(t *testing.T) {
	connack := func(p []byte) []byte { return pkt(0x20, raw(0, 0), props(p)) }
	cases := map[string][]byte{
		"PayloadFormatIndicator2":           publish5(props(raw(0x01, 2))),
		"SubscriptionIdentifier0":           publish5(props(raw(0x0B, 0))),
		"ReceiveMaximum0":                   connect5(0x02, props(raw(0x21, 0, 0))),
		"MaximumPacketSize0":                connect5(0x02, props(raw(0x27, 0, 0, 0, 0))),
		"RequestProblemInformation2":        connect5(0x02, props(raw(0x17, 2))),
		"RequestResponseInformation2":       connect5(0x02, props(raw(0x19, 2))),
		"MaximumQoS2":                       connack(raw(0x24, 2)),
		"RetainAvailable2":                  connack(raw(0x25, 2)),
		"WildcardSubscriptionAvailable2":    connack(raw(0x28, 2)),
		"SubscriptionIdentifierAvailable2":  connack(raw(0x29, 2)),
		"SharedSubscriptionAvailable2":      connack(raw(0x2A, 2)),
		"ResponseTopicHoldingWildcard":      publish5(props(raw(0x08), str("reply/+"))),
		"WillPayloadFormatIndicator2":       connect5(0x06, props(), props(raw(0x01, 2)), str("w"), str("p")),
		"SubscribeSubscriptionIdentifier0":  pkt(0x82, u16(1), props(raw(0x0B, 0)), str("a"), raw(0)),
		"ReceiveMaximum0InConnack":          connack(raw(0x21, 0, 0)),
		"MaximumPacketSize0InConnack":       connack(raw(0x27, 0, 0, 0, 0)),
		"SubscriptionIdentifierOverMaximum": publish5(props(raw(0x0B, 0xFF, 0xFF, 0xFF, 0xFF, 0x01))),
	}
	for name, w := range cases {
		t.Run(name, func(t *testing.T) {
			want := ProtocolError
			if name == "SubscriptionIdentifierOverMaximum" {
				want = MalformedPacket // a five-byte variable byte integer
			}
			refuses(t, w, Version5, want)
		})
	}
}

func TestTopicAlias0IsTopicAliasInvalid(t *testing.T) {
	refuses(t, publish5(props(raw(0x23, 0, 0))), Version5, TopicAliasInvalid)
}

func TestUnknownPropertyIdentifierIsMalformed(t *testing.T) {
	refuses(t, publish5(props(raw(0x04, 0))), Version5, MalformedPacket)
}

func TestPropertyThePacketMayNotCarryIsMalformed(t *testing.T) {
	refuses(t, publish5(props(raw(0x11, 0, 0, 0, 1))), Version5, MalformedPacket) // Session Expiry
	refuses(t, pkt(0x40, u16(1), raw(0), props(raw(0x26), str("k"), str("v"), raw(0x23, 0, 1))), Version5, MalformedPacket)
}

func TestPropertyLengthRunningPastThePacketIsMalformed(t *testing.T) {
	refuses(t, pkt(0x32, str("a/b"), u16(1), raw(0x10, 0x01, 0x01)), Version5, MalformedPacket)
}

func TestPropertyValueRunningPastItsPropertyLengthIsMalformed(t *testing.T) {
	// The property block says 2 bytes; Message Expiry needs 5.
	refuses(t, pkt(0x32, str("a/b"), u16(1), raw(0x02, 0x02, 0, 0, 0, 1)), Version5, MalformedPacket)
}

func TestStringPropertyNotWellFormedUTF8IsMalformed(t *testing.T) {
	refuses(t, publish5(props(raw(0x03), str("\xc3\x28"))), Version5, MalformedPacket)
}

func TestMeaningfulZeroPropertyIsSentWhenPresent(t *testing.T) {
	c := Connack{}
	c.Properties.Present.Set(PropMaximumQoS)
	c.Properties.Present.Set(PropRetainAvailable)
	w := c.Append(nil, Version5)
	if !bytes.Equal(w, hx("20 07 00 00 04 24 00 25 00")) {
		t.Fatalf("encoded % x", w)
	}
	var back Connack
	h, _ := ReadHeader(w, 0)
	if err := back.Decode(h, w[h.HeaderLen:], Version5); err != nil {
		t.Fatal(err)
	}
	if !back.Properties.Present.Has(PropMaximumQoS) || back.Properties.MaximumQoS != 0 {
		t.Fatalf("Maximum QoS 0 was not read as present: %+v", back.Properties)
	}
}

func TestPropertiesThePacketMayNotCarryAreNotEncoded(t *testing.T) {
	p := Ack{Type: TypePuback, PacketID: 1}
	p.Properties.SessionExpiry = 10 // CONNECT's property, not PUBACK's
	if w := p.Append(nil, Version5); !bytes.Equal(w, hx("40 02 00 01")) {
		t.Fatalf("encoded % x", w)
	}
}

// ---- PUBLISH ----

func TestPublishWithBothQoSBitsIsMalformed(t *testing.T) {
	refuses(t, pkt(0x36, str("a"), u16(1)), Version311, MalformedPacket)
	refuses(t, pkt(0x36, str("a"), u16(1), props()), Version5, MalformedPacket)
}

func TestPublishAtQoS0WithDupIsMalformed(t *testing.T) {
	refuses(t, pkt(0x38, str("a")), Version311, MalformedPacket)
}

func TestPublishTopicHoldingWildcardIsProtocolError(t *testing.T) {
	refuses(t, pkt(0x30, str("a/+"), props()), Version5, ProtocolError)
	refuses(t, pkt(0x30, str("a/#")), Version311, ProtocolError)
}

func TestPublishTopicNotWellFormedUTF8IsMalformed(t *testing.T) {
	refuses(t, pkt(0x30, str("a/\xff")), Version311, MalformedPacket)
	refuses(t, pkt(0x30, str("a/\xed\xa0\x80")), Version311, MalformedPacket) // an encoded surrogate
	refuses(t, pkt(0x30, str("a/\xc0\xaf")), Version311, MalformedPacket)     // an overlong encoding
}

func TestPublishTopicHoldingNulIsMalformed(t *testing.T) {
	refuses(t, pkt(0x30, str("a\x00b")), Version311, MalformedPacket)
	refuses(t, pkt(0x30, str("é\x00b")), Version311, MalformedPacket)
}

func TestPublishEmptyTopicWithoutTopicAliasIsProtocolError(t *testing.T) {
	refuses(t, pkt(0x30, str(""), props()), Version5, ProtocolError)
	refuses(t, pkt(0x30, str("")), Version311, ProtocolError)
	accepts(t, pkt(0x30, str(""), props(raw(0x23, 0, 1)), []byte("x")), Version5)
}

func TestPublishPacketIdentifierZeroIsProtocolError(t *testing.T) {
	refuses(t, pkt(0x32, str("a"), u16(0)), Version311, ProtocolError)
	refuses(t, pkt(0x34, str("a"), u16(0), props()), Version5, ProtocolError)
}

func TestPublishTopicRunningPastThePacketIsMalformed(t *testing.T) {
	refuses(t, pkt(0x30, u16(5), []byte("ab")), Version311, MalformedPacket)
}

func TestPublishTopicAndPayloadAliasTheBody(t *testing.T) {
	w := pkt(0x30, str("a/b"), []byte("payload"))
	var p Publish
	h, _ := ReadHeader(w, 0)
	if err := p.Decode(h, w[h.HeaderLen:], Version311); err != nil {
		t.Fatal(err)
	}
	w[len(w)-1] = 'X'
	w[h.HeaderLen+2] = 'z'
	if string(p.Payload) != "payloaX" || string(p.Topic) != "z/b" {
		t.Fatalf("topic %q payload %q do not alias the body", p.Topic, p.Payload)
	}
}

func TestPublishPayloadMayBeEmpty(t *testing.T) {
	accepts(t, pkt(0x31, str("a")), Version311)
}

func TestPublishWildcardInTopicIsNotConfusedWithPayload(t *testing.T) {
	accepts(t, pkt(0x30, str("a"), []byte("+#")), Version311)
}

// ---- acknowledgements ----

func TestAcknowledgementPacketIdentifierZeroIsProtocolError(t *testing.T) {
	for _, first := range []byte{0x40, 0x50, 0x62, 0x70} {
		refuses(t, pkt(first, u16(0)), Version5, ProtocolError)
	}
}

func TestAcknowledgementShortFormsMeanSuccessAndNoProperties(t *testing.T) {
	var a Ack
	for _, w := range [][]byte{hx("40 02 00 07"), hx("40 03 00 07 00"), hx("40 04 00 07 00 00")} {
		h, _ := ReadHeader(w, 0)
		if err := a.Decode(h, w[h.HeaderLen:], Version5); err != nil || a.ReasonCode != Success || a.PacketID != 7 {
			t.Fatalf("% x: %+v, %v", w, a, err)
		}
	}
	w := hx("50 03 00 07 10")
	h, _ := ReadHeader(w, 0)
	if err := a.Decode(h, w[h.HeaderLen:], Version5); err != nil || a.ReasonCode != NoMatchingSubscribers {
		t.Fatalf("% x: %+v, %v", w, a, err)
	}
	if again := a.Append(nil, Version5); !bytes.Equal(again, w) {
		t.Fatalf("shortest form: % x, want % x", again, w)
	}
}

func TestAcknowledgementReasonCodeItMayNotCarryIsProtocolError(t *testing.T) {
	refuses(t, hx("62 03 00 01 10"), Version5, ProtocolError) // PUBREL: 0x00 and 0x92 only
	refuses(t, hx("40 03 00 01 92"), Version5, ProtocolError) // PUBACK has no 0x92
}

func TestAcknowledgement311BytesAfterPacketIdentifierAreMalformed(t *testing.T) {
	refuses(t, hx("40 03 00 01 00"), Version311, MalformedPacket)
}

// ---- SUBSCRIBE ----

func subscribe5(opts byte, filter string) []byte {
	return pkt(0x82, u16(1), props(), str(filter), raw(opts))
}

func TestSubscribeWithNoFiltersIsProtocolError(t *testing.T) {
	refuses(t, pkt(0x82, u16(1), props()), Version5, ProtocolError)
	refuses(t, pkt(0x82, u16(1)), Version311, ProtocolError)
}

func TestSubscribeZeroLengthFilterIsProtocolError(t *testing.T) {
	refuses(t, subscribe5(0, ""), Version5, ProtocolError)
}

func TestSubscribeRetainHandling3IsProtocolError(t *testing.T) {
	refuses(t, subscribe5(0x30, "a"), Version5, ProtocolError)
}

func TestSubscribeOptionReservedBitsAreMalformed(t *testing.T) {
	refuses(t, subscribe5(0x40, "a"), Version5, MalformedPacket)
	refuses(t, subscribe5(0x80, "a"), Version5, MalformedPacket)
	refuses(t, pkt(0x82, u16(1), str("a"), raw(0x04)), Version311, MalformedPacket)
}

func TestSubscribeQoS3IsRefused(t *testing.T) {
	refuses(t, subscribe5(0x03, "a"), Version5, ProtocolError)
	refuses(t, pkt(0x82, u16(1), str("a"), raw(0x03)), Version311, MalformedPacket)
}

func TestSubscribeNoLocalOnSharedSubscriptionIsProtocolError(t *testing.T) {
	refuses(t, subscribe5(0x04, "$share/g/a"), Version5, ProtocolError)
	accepts(t, subscribe5(0x04, "a/$share/g"), Version5)
}

func TestSubscribePacketIdentifierZeroIsProtocolError(t *testing.T) {
	refuses(t, pkt(0x82, u16(0), props(), str("a"), raw(0)), Version5, ProtocolError)
}

func TestSubscribeFilterWithoutOptionsIsMalformed(t *testing.T) {
	refuses(t, pkt(0x82, u16(1), props(), str("a")), Version5, MalformedPacket)
}

func TestSubscribeWildcardPlacementIsLeftToTheSuback(t *testing.T) {
	// a/b# is not a filter (MQTT-4.7.1-2), but RFC 0002 refuses it per
	// filter with 0x8F in the SUBACK, so the packet itself decodes.
	accepts(t, subscribe5(0x01, "a/b#"), Version5)
}

func TestSubscribeOptionsAreRead(t *testing.T) {
	w := subscribe5(0x2E, "a/+") // RH 2, RAP, NL, QoS 2
	var s Subscribe
	h, _ := ReadHeader(w, 0)
	if err := s.Decode(h, w[h.HeaderLen:], Version5); err != nil {
		t.Fatal(err)
	}
	got := s.Subscriptions[0]
	if got.QoS != 2 || !got.NoLocal || !got.RetainAsPublished || got.RetainHandling != 2 {
		t.Fatalf("options read as %+v", got)
	}
}

// ---- SUBACK, UNSUBSCRIBE, UNSUBACK ----

func TestSubackReasonCodeMQTT311DoesNotHaveIsProtocolError(t *testing.T) {
	refuses(t, hx("90 03 00 01 87"), Version311, ProtocolError)
	accepts(t, hx("90 04 00 01 00 87"), Version5)
}

func TestUnsubscribeWithNoFiltersIsProtocolError(t *testing.T) {
	refuses(t, pkt(0xA2, u16(1), props()), Version5, ProtocolError)
	refuses(t, pkt(0xA2, u16(1)), Version311, ProtocolError)
}

func TestUnsubscribeZeroLengthFilterIsProtocolError(t *testing.T) {
	refuses(t, pkt(0xA2, u16(1), str("")), Version311, ProtocolError)
}

func TestUnsuback311CarriesOnlyThePacketIdentifier(t *testing.T) {
	refuses(t, hx("b0 03 00 01 00"), Version311, MalformedPacket)
	refuses(t, hx("b0 03 00 01 00"), Version5, ProtocolError) // properties, then no reason code
}

// ---- PINGREQ, PINGRESP, DISCONNECT, AUTH ----

func TestPingWithABodyIsMalformed(t *testing.T) {
	refuses(t, hx("c0 01 00"), Version5, MalformedPacket)
	refuses(t, hx("d0 01 00"), Version5, MalformedPacket)
}

func TestDisconnectWithoutBodyIsNormalDisconnection(t *testing.T) {
	var d Disconnect
	if err := d.Decode(Header{Type: TypeDisconnect, HeaderLen: 2}, nil, Version5); err != nil || d.ReasonCode != NormalDisconnection {
		t.Fatalf("%+v, %v", d, err)
	}
}

func TestDisconnectReasonCodeItMayNotCarryIsProtocolError(t *testing.T) {
	refuses(t, hx("e0 01 01"), Version5, ProtocolError)
}

func TestDisconnect311WithABodyIsMalformed(t *testing.T) {
	refuses(t, hx("e0 01 00"), Version311, MalformedPacket)
}

func TestAuthReasonCodeItMayNotCarryIsProtocolError(t *testing.T) {
	refuses(t, pkt(0xF0, raw(0x87), props(raw(0x15), str("SCRAM"))), Version5, ProtocolError)
	accepts(t, pkt(0xF0, raw(0x18), props(raw(0x15), str("SCRAM"))), Version5)
	accepts(t, hx("f0 00"), Version5)
}

func TestAuthWithoutAuthenticationMethodIsProtocolError(t *testing.T) {
	refuses(t, hx("f0 01 18"), Version5, ProtocolError)
	refuses(t, pkt(0xF0, raw(0x18), props(raw(0x16), str("data"))), Version5, ProtocolError)
}

// ---- errors ----

func TestRefusalNamesItsRuleAndCode(t *testing.T) {
	err := decodeErr(pkt(0x36, str("a"), u16(1)), Version311)
	msg := err.Error()
	if !strings.Contains(msg, "both QoS bits") || !strings.Contains(msg, "0x81") || !strings.Contains(msg, "MQTT-3.3.1-4") {
		t.Fatalf("error %q does not name its rule and code", msg)
	}
	if !errors.Is(err, &Error{Code: MalformedPacket}) || errors.Is(err, &Error{Code: ProtocolError}) {
		t.Fatalf("errors.Is does not match on the code")
	}
	wrapped := errors.Join(errors.New("conn 7"), err)
	if AsError(wrapped) == nil {
		t.Fatalf("AsError does not see through wrapping")
	}
}
