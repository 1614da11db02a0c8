package latest

import (
	"errors"
	"strings"
	"testing"

	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/memory"
)

func owner(t string) (string, delivery.Kind) {
	switch {
	case topic.Match("state/#", t):
		return "state", delivery.KindLatest
	case topic.Match("events/#", t):
		return "events", delivery.KindAppend
	}
	return "", delivery.KindNone
}

// B10.1-2, B10.4: values a latest channel now claims move in with their
// receipt time; those under an append channel are discarded and counted;
// broadcast ones stay; none is left in both.
func TestRetainedValuesMoveIntoALatestChannelAtStart(t *testing.T) {
	p, _ := memory.Open(store.MemoryOptions{Name: "mem"})
	defer p.Close()
	ret, _ := p.Retained(0)
	st, _ := p.Latest("state", store.ChannelOptions{})
	for _, k := range []string{"state/a", "state/b", "events/x", "other/y"} {
		if err := ret.Set(store.Record{Topic: k, Payload: []byte("v"), Time: epoch}); err != nil {
			t.Fatal(err)
		}
	}
	m, err := MoveRetained(ret, owner, func(string) (store.Latest, string) { return st, "mem" })
	if err != nil {
		t.Fatal(err)
	}
	if m.Into["state"] != 2 || m.Discarded["events"] != 1 {
		t.Fatalf("moved %+v", m)
	}
	if ret.Count() != 1 {
		t.Fatalf("retained store holds %d, want only other/y", ret.Count())
	}
	if v, ok, _ := st.Get("state/a"); !ok || !v.Time.Equal(epoch) || string(v.Payload) != "v" {
		t.Fatalf("moved value = %+v %v", v, ok)
	}
	if line := m.Line(); line[1] != "state=2" || line[3] != "events=1" {
		t.Fatalf("startup line %v", line)
	}
}

// B10.3: a destination with no room is a startup error naming the channel,
// the provider and how many values.
func TestAMoveIntoAFullProviderIsAStartupError(t *testing.T) {
	src, _ := memory.Open(store.MemoryOptions{Name: "mem"})
	defer src.Close()
	full, _ := memory.Open(store.MemoryOptions{Name: "tiny", MaxBytes: 40})
	defer full.Close()
	ret, _ := src.Retained(0)
	st, _ := full.Latest("state", store.ChannelOptions{})
	for _, k := range []string{"state/a", "state/b", "state/c"} {
		ret.Set(store.Record{Topic: k, Payload: []byte("0123456789"), Time: epoch})
	}
	_, err := MoveRetained(ret, owner, func(string) (store.Latest, string) { return st, "tiny" })
	if !errors.Is(err, store.ErrProviderFull) || !strings.Contains(err.Error(), "latest channel state") || !strings.Contains(err.Error(), "provider tiny") {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "values left to move") {
		t.Fatalf("err = %v, want the count", err)
	}
}
