package store

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestRecordSizeCountsPayloadTopicMessageIDAndEachHeader(t *testing.T) {
	r := Record{
		MessageID: "id-1",                                                      // 4
		Topic:     "a/b",                                                       // 3
		Payload:   []byte("hello"),                                             // 5
		Headers:   []Header{{Key: "k", Value: "vv"}, {Key: "k", Value: "vvv"}}, // 3 + 4
		Props:     []byte("not counted"),
		ClientID:  "not counted",
	}
	if got := RecordSize(&r); got != 19 {
		t.Fatalf("RecordSize = %d, want 19", got)
	}
}

func TestSessionSizeChargesWhatRFC0002Lists(t *testing.T) {
	s := Session{
		ClientID: "dev", // 3500 + 3
		Subscriptions: []Subscription{
			{Filter: "a/b/c"},                         // 800 + 2*600 + 5
			{Filter: "$share/g/x/y", ShareGroup: "g"}, // 800 + 400 + 1*600 + 12
		},
		Will: &Will{Topic: "w", Payload: []byte("bye"), Props: []byte{1, 2}, Headers: []Header{{Key: "a", Value: "b"}}}, // 1+3+2+2
	}
	want := int64(3503 + 2005 + 1812 + 8)
	if got := SessionSize(&s); got != want {
		t.Fatalf("SessionSize = %d, want %d", got, want)
	}
}

func TestAgeSweepPeriodIsATenthOfTheShortestFlooredAtOneSecond(t *testing.T) {
	for _, c := range []struct{ shortest, want time.Duration }{
		{0, time.Second},
		{10 * time.Second, time.Second},
		{5 * time.Second, time.Second},
		{time.Hour, 6 * time.Minute},
		{30 * 24 * time.Hour, 3 * 24 * time.Hour},
	} {
		if got := AgeSweepPeriod(c.shortest); got != c.want {
			t.Errorf("AgeSweepPeriod(%v) = %v, want %v", c.shortest, got, c.want)
		}
	}
}

func TestIsFullTellsRoomFromFailure(t *testing.T) {
	if !IsFull(fmt.Errorf("x: %w", ErrProviderFull)) || !IsFull(fmt.Errorf("x: %w", ErrChannelFull)) {
		t.Fatal("a refusal for room is not IsFull")
	}
	if IsFull(errors.New("disk I/O error")) || IsFull(ErrBelowFloor) {
		t.Fatal("a failure reads as a refusal for room")
	}
}

func TestZeroTimeIsStoredAsZeroNanoseconds(t *testing.T) {
	if UnixNanos(time.Time{}) != 0 {
		t.Fatal("zero time not stored as 0")
	}
	if !FromUnixNanos(0).IsZero() {
		t.Fatal("0 does not read back as the zero time")
	}
	now := time.Unix(1_700_000_000, 42)
	if !FromUnixNanos(UnixNanos(now)).Equal(now) {
		t.Fatal("a time does not survive the round trip to the nanosecond")
	}
}

func TestBelowFloorErrorIsErrBelowFloor(t *testing.T) {
	var err error = &BelowFloorError{Channel: "c", Requested: 2, Floor: 5}
	if !errors.Is(fmt.Errorf("read: %w", err), ErrBelowFloor) {
		t.Fatal("BelowFloorError does not match ErrBelowFloor")
	}
}

func TestDeadLetterRecordKeepsIdentityAndAddsTheDLQHeaders(t *testing.T) {
	first := time.UnixMilli(1_700_000_000_000)
	j := Job{
		Record:        Record{Offset: 7, MessageID: "m", Topic: "jobs/x", Payload: []byte("p"), Headers: []Header{{Key: "h", Value: "1"}}},
		Attempts:      3,
		FirstDelivery: first,
		LastDelivery:  first.Add(time.Second),
	}
	at := first.Add(time.Minute)
	r := DeadLetterRecord("jobs", &j, "jobs/__dlq/x", ReasonAttemptsExhausted, at)
	want := []Header{
		{Key: "h", Value: "1"},
		{Key: HeaderDLQChannel, Value: "jobs"},
		{Key: HeaderDLQOffset, Value: "7"},
		{Key: HeaderDLQAttempts, Value: "3"},
		{Key: HeaderDLQFirst, Value: "1700000000000"},
		{Key: HeaderDLQLast, Value: "1700000001000"},
		{Key: HeaderDLQAt, Value: "1700000060000"},
		{Key: HeaderDLQReason, Value: ReasonAttemptsExhausted},
	}
	if r.Topic != "jobs/__dlq/x" || r.MessageID != "m" || r.Offset != 0 || string(r.Payload) != "p" {
		t.Fatalf("moved record %+v", r)
	}
	if fmt.Sprint(r.Headers) != fmt.Sprint(want) {
		t.Fatalf("headers\n got %v\nwant %v", r.Headers, want)
	}
	if len(j.Headers) != 1 {
		t.Fatal("the job's own headers were modified")
	}
}
