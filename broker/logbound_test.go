package broker

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker/brokertest"
	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestARefusalFloodIsOneLinePerCauseEveryTenSeconds: a client refused a
// thousand times for an over-long topic makes one log line, the topic cut to
// limits.max_topic_length, and the next line ten seconds on says how many
// went unwritten.
func TestARefusalFloodIsOneLinePerCauseEveryTenSeconds(t *testing.T) {
	var log lockedBuffer
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	ss, rs := brokertest.Stores(t, 0)
	b, err := New(Options{Sessions: ss, Retained: rs, MaxTopicLength: 64, Clock: fake,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c := &fakeClient{id: "flooder"}
	b.Connect(c, &netloop.ConnectRequest{Version: 5, ClientID: c.id, CleanStart: true})
	long := &codec.Publish{QoS: 1, Topic: []byte(strings.Repeat("x", 10_000)), Payload: []byte("p")}
	for range 1000 {
		if code, _ := b.Publish(c, long); code != codec.TopicNameInvalid {
			t.Fatalf("answered %v", code)
		}
	}
	if n := strings.Count(log.String(), "publish refused"); n != 1 {
		t.Fatalf("%d lines for 1000 refusals of one cause, want 1", n)
	}
	if strings.Contains(log.String(), strings.Repeat("x", 65)) {
		t.Fatal("the refused topic was logged longer than limits.max_topic_length")
	}
	fake.Advance(9 * time.Second)
	b.Publish(c, long)
	if n := strings.Count(log.String(), "publish refused"); n != 1 {
		t.Fatalf("%d lines nine seconds on, want still 1", n)
	}
	fake.Advance(time.Second)
	b.Publish(c, long)
	if !strings.Contains(log.String(), "also_refused_since_last_line=1000") {
		t.Fatalf("the line ten seconds on does not count what went unwritten:\n%s", log.String())
	}
}

// TestLogBoundIsBoundedWhateverTheClients: past maxBound recent clients a
// newcomer shares its cause's line, and quiet entries are swept out.
func TestLogBoundIsBoundedWhateverTheClients(t *testing.T) {
	var l logBound
	now := time.Unix(1_000_000, 0)
	for i := range maxBound {
		if ok, _ := l.allow("cause", strings.Repeat("c", i%7)+string(rune('a'+i%26))+time.Duration(i).String(), now); !ok {
			t.Fatalf("client %d's first refusal was not written", i)
		}
	}
	if ok, _ := l.allow("cause", "newcomer", now); !ok {
		t.Fatal("the cause's shared line was not written")
	}
	if ok, _ := l.allow("cause", "another", now); ok {
		t.Fatal("a second newcomer at the bound was written")
	}
	if len(l.causes) > maxBound+1 {
		t.Fatalf("%d entries held", len(l.causes))
	}
	if ok, _ := l.allow("cause", "later", now.Add(logEvery)); !ok || len(l.causes) > 2 {
		t.Fatalf("quiet entries were not swept: %d held", len(l.causes))
	}
}
