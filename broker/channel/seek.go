package channel

import (
	"errors"
	"strconv"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// SeekKind is the shape a seek payload has (RFC 0003 "Moving a consumer's
// position: seek"): the shape decides, never a guess from the value.
type SeekKind uint8

const (
	SeekFloor  SeekKind = iota + 1 // "0": the retention floor
	SeekNext                       // "-1": the channel's next offset
	SeekOffset                     // a positive integer: that offset
	SeekTime                       // a duration ago, or an RFC 3339 moment
)

// Seek is a parsed seek payload.
type Seek struct {
	Kind   SeekKind
	Offset uint64    // SeekOffset
	Time   time.Time // SeekTime: the earliest receipt time asked for
}

// The reply words of a refused seek.
const (
	WordMalformed  = "malformed"
	WordBelowFloor = "below-floor"
	WordBeyondEnd  = "beyond-end"
	WordNoSession  = "no-session"
	WordStorage    = "storage"
)

// ErrSeekMalformed is a payload of none of the accepted shapes.
var ErrSeekMalformed = errors.New("the seek payload is not 0, -1, an offset, a duration such as 12h, 90m or 7d, or an RFC 3339 time")

// ParseSeek reads a seek payload at now: "0", "-1", a positive decimal
// offset, a duration always meaning "ago" with its sign optional (whole
// numbers of s, m, h or d - checklist E16), or an RFC 3339 timestamp. A
// date alone, another negative integer, or anything else is malformed.
func ParseSeek(payload []byte, now time.Time) (Seek, error) {
	s := string(payload)
	switch s {
	case "0":
		return Seek{Kind: SeekFloor}, nil
	case "-1":
		return Seek{Kind: SeekNext}, nil
	}
	if allDigits(s) {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || n == 0 {
			// Leading zeros spelling 0 ("00") are an offset of 0, which
			// no record has; an offset past 2^64 none will have.
			return Seek{}, ErrSeekMalformed
		}
		return Seek{Kind: SeekOffset, Offset: n}, nil
	}
	if d, ok := duration(s); ok {
		return Seek{Kind: SeekTime, Time: now.Add(-d)}, nil
	}
	if len(s) > len("2006-01-02") { // a date alone is not a moment
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return Seek{Kind: SeekTime, Time: t}, nil
		}
	}
	return Seek{}, ErrSeekMalformed
}

// duration reads [-]<digits><unit>, unit one of s m h d.
func duration(s string) (time.Duration, bool) {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if len(s) < 2 || !allDigits(s[:len(s)-1]) {
		return 0, false
	}
	var unit time.Duration
	switch s[len(s)-1] {
	case 's':
		unit = time.Second
	case 'm':
		unit = time.Minute
	case 'h':
		unit = time.Hour
	case 'd':
		unit = 24 * time.Hour
	default:
		return 0, false
	}
	n, err := strconv.ParseUint(s[:len(s)-1], 10, 64)
	if err != nil || n > uint64((1<<63-1)/unit) {
		return 0, false
	}
	return time.Duration(n) * unit, true
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Bounds are what a seek is resolved against: the channel's floor and next
// offset, and its time index (store.AppendLog.FirstAtOrAfter).
type Bounds struct {
	Floor, Next    uint64
	Now            time.Time // "past" and "future" for an emptied channel
	FirstAtOrAfter func(t time.Time) (offset uint64, ok bool, err error)
}

// Resolve is where seek s puts a position on a channel with bounds b: the
// offset, or the refusal word (WordBelowFloor with the floor, WordBeyondEnd
// with the next offset, WordStorage when the time index could not be read).
// Never clamped at either end; floor <= N <= next is accepted, N == next being
// the end (checklist E17). A moment older than every surviving record serves
// from the start while nothing was ever removed (floor 1), and is below the
// floor once something was; a moment after every record is the next offset.
func Resolve(s Seek, b Bounds) (offset uint64, word string, err error) {
	switch s.Kind {
	case SeekFloor:
		return b.Floor, "", nil
	case SeekNext:
		return b.Next, "", nil
	case SeekOffset:
		switch {
		case s.Offset < b.Floor:
			return 0, WordBelowFloor, nil
		case s.Offset > b.Next:
			return 0, WordBeyondEnd, nil
		}
		return s.Offset, "", nil
	}
	at, ok, err := b.FirstAtOrAfter(s.Time)
	if err != nil {
		return 0, WordStorage, err
	}
	switch {
	case !ok && b.Floor > 1 && b.Floor == b.Next && s.Time.Before(b.Now):
		// Retention emptied the channel: everything since a past moment
		// is gone. A future moment has lost nothing.
		return 0, WordBelowFloor, nil
	case !ok:
		return b.Next, "", nil
	case at == b.Floor && b.Floor > 1:
		// The oldest surviving record answers, so the moment may be
		// older than it, and what retention removed may have been at or
		// after the moment: an incomplete history is refused, never
		// served (invariant 1). With floor 1 nothing was removed.
		return 0, WordBelowFloor, nil
	}
	return at, "", nil
}

// SeekAnswer is a seek's outcome: the stored offset, or a refusal word with
// the channel's floor and next for below-floor and beyond-end.
type SeekAnswer struct {
	Offset      uint64
	Word        string
	Floor, Next uint64
}

// SeekReplyTopic is where a seek's reply goes when it set no Response Topic.
func SeekReplyTopic(channelName string) string {
	return "$saguin/consumer/" + channelName + "/seek/reply"
}

// Reply is the PUBLISH answering seek p (RFC 0003 "Reply routing"): to its
// Response Topic, or the channel's seek/reply topic; its Correlation Data
// echoed; the payload the stored offset in decimal or the refusal word, with
// saguin-floor or saguin-next beside below-floor and beyond-end. QoS 0, never
// RETAIN: it is written to the seeking connection only, never published.
func (a SeekAnswer) Reply(p *codec.Publish, channelName string) *codec.Publish {
	r := &codec.Publish{Topic: p.Properties.ResponseTopic}
	if len(r.Topic) == 0 {
		r.Topic = []byte(SeekReplyTopic(channelName))
	}
	if p.Properties.Present.Has(codec.PropCorrelationData) {
		r.Properties.CorrelationData = p.Properties.CorrelationData
		r.Properties.Present.Set(codec.PropCorrelationData)
	}
	switch a.Word {
	case "":
		r.Payload = strconv.AppendUint(nil, a.Offset, 10)
	case WordBelowFloor:
		r.Payload = []byte(a.Word)
		r.Properties.AddUser([]byte(FloorKey), strconv.AppendUint(nil, a.Floor, 10))
	case WordBeyondEnd:
		r.Payload = []byte(a.Word)
		r.Properties.AddUser([]byte(NextKey), strconv.AppendUint(nil, a.Next, 10))
	default:
		r.Payload = []byte(a.Word)
	}
	if len(r.Properties.User) > 0 {
		r.Properties.Present.Set(codec.PropUserProperty)
	}
	return r
}

// Code is the PUBACK a seek is answered with: 0x00 when stored, 0x83 with the
// refusal's reason otherwise.
func (a SeekAnswer) Code() (codec.ReasonCode, string) {
	switch a.Word {
	case "":
		return codec.Success, ""
	case WordMalformed:
		return codec.ImplementationSpecificError, "the seek payload is not 0, -1, an offset, a duration or an RFC 3339 time"
	case WordBelowFloor:
		return codec.ImplementationSpecificError, "the seek is below the channel's retention floor " + strconv.FormatUint(a.Floor, 10)
	case WordBeyondEnd:
		return codec.ImplementationSpecificError, "the seek is beyond the channel's next offset " + strconv.FormatUint(a.Next, 10)
	case WordNoSession:
		return codec.ImplementationSpecificError, "a seek needs a session that outlives its connection (Session Expiry above 0; 3.1.1 cleanSession 0)"
	}
	return codec.ImplementationSpecificError, "the position could not be stored"
}
