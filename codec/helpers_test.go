package codec

import (
	"strings"
	"testing"
)

func TestClientIDLongerThanTheLimitIsNotValid(t *testing.T) {
	id := []byte(strings.Repeat("a", 257))
	if e := AsError(CheckClientID(id, 256)); e == nil || e.Code != ClientIdentifierNotValid {
		t.Fatalf("CheckClientID = %v, want 0x85", e)
	}
	if err := CheckClientID(id[:256], 256); err != nil {
		t.Fatalf("an id at the limit: %v", err)
	}
}

func TestClientIDHoldingControlCharacterIsNotValid(t *testing.T) {
	for _, id := range []string{"a\x01", "a\x1f", "a\x7f", "a\u0080", "a\u009f"} {
		if e := AsError(CheckClientID([]byte(id), 0)); e == nil || e.Code != ClientIdentifierNotValid {
			t.Errorf("CheckClientID(%q) = %v, want 0x85", id, e)
		}
	}
	for _, id := range []string{"dev-1", "ñandú", "a\u00a0", "日本", "a b"} {
		if err := CheckClientID([]byte(id), 0); err != nil {
			t.Errorf("CheckClientID(%q) = %v, want accepted", id, err)
		}
	}
}

func TestEmptyClientIDAskingForAKeptSessionIsNotValid(t *testing.T) {
	if e := AsError(CheckEmptyClientID(&Connect{CleanStart: false})); e == nil || e.Code != ClientIdentifierNotValid {
		t.Fatalf("got %v, want 0x85", e)
	}
	if err := CheckEmptyClientID(&Connect{CleanStart: true}); err != nil {
		t.Fatalf("an empty id with Clean Start 1: %v", err)
	}
}

func TestUserNameHoldingNulOrControlCharacterIsBadUserName(t *testing.T) {
	for _, name := range []string{"a\x00", "a\n", "a\u0085", "\x7f"} {
		if e := AsError(CheckUserName([]byte(name))); e == nil || e.Code != BadUserNameOrPassword {
			t.Errorf("CheckUserName(%q) = %v, want 0x86", name, e)
		}
	}
	if err := CheckUserName([]byte("operator-ñ")); err != nil {
		t.Fatal(err)
	}
}

func TestPayloadMarkedUTF8ThatIsNotIsPayloadFormatInvalid(t *testing.T) {
	p := &Publish{Payload: []byte("\xff")}
	if err := CheckPayloadFormat(p); err != nil {
		t.Fatalf("unspecified bytes are not checked: %v", err)
	}
	p.Properties.PayloadFormat = 1
	if e := AsError(CheckPayloadFormat(p)); e == nil || e.Code != PayloadFormatInvalid {
		t.Fatalf("got %v, want 0x99", e)
	}
}

func TestReturnCode311FollowsRFC0002(t *testing.T) {
	cases := map[*Error]ReasonCode{
		{Code: UnsupportedProtocolVersion}:              0x01,
		{Code: ClientIdentifierNotValid}:                0x02,
		{Code: ImplementationSpecificError}:             0x03,
		{Code: ServerBusy}:                              0x03,
		{Code: BadUserNameOrPassword}:                   0x04,
		{Code: MalformedPacket, Rule: RuleUserNameUTF8}: 0x04,
		{Code: MalformedPacket}:                         0x05,
		{Code: ProtocolError}:                           0x05,
		{Code: NotAuthorized}:                           0x05,
		{Code: TopicNameInvalid}:                        0x05,
		{Code: QuotaExceeded}:                           0x05,
	}
	for e, want := range cases {
		if got := ReturnCode311(e); got != want {
			t.Errorf("ReturnCode311(%s %q) = %#x, want %#x", e.Code, e.Rule, got, want)
		}
	}
}
