package latest

import (
	"errors"
	"fmt"
	"sort"

	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// Owner names the channel that now claims a topic and its kind
// (delivery.KindNone: broadcast, the retained store keeps it).
type Owner func(topic string) (channel string, kind delivery.Kind)

// Moved is what MoveRetained did, per channel: the startup line's counts.
type Moved struct {
	Into      map[string]int // latest channel -> values moved in
	Discarded map[string]int // append, queue or dead-letter channel -> values dropped
}

// MoveRetained settles, at a start, every retained broadcast value whose
// topic a channel now claims (RFC 0002 "Retained messages on a broadcast
// topic", checklist B10): into a latest channel the value moves (the same
// thing under another name: one current value per topic), keeping its
// receipt time; under an append, queue or dead-letter channel it is
// discarded and counted. Each move is the channel's write then the retained
// store's delete, so a value is never held in both once this returns; a
// destination with no room is an error naming the channel, its provider and
// how many values were left to move, and the broker does not start.
func MoveRetained(ret store.Retained, owner Owner, into func(channel string) (store.Latest, string)) (Moved, error) {
	m := Moved{Into: map[string]int{}, Discarded: map[string]int{}}
	var claimed []store.Record
	err := ret.Range(nil, func(r store.Record) bool {
		if _, k := owner(r.Topic); k != delivery.KindNone && k != delivery.KindBroadcast {
			claimed = append(claimed, r)
		}
		return true
	})
	if err != nil {
		return m, fmt.Errorf("reading the retained store: %w", err)
	}
	for i, r := range claimed {
		ch, k := owner(r.Topic)
		if k == delivery.KindLatest {
			st, provider := into(ch)
			if _, err := st.Set(r); err != nil {
				if errors.Is(err, store.ErrProviderFull) {
					return m, fmt.Errorf("moving retained values into latest channel %s: provider %s is at max_bytes with %d values left to move: %w",
						ch, provider, countFor(claimed[i:], owner, ch), err)
				}
				return m, fmt.Errorf("moving retained value %q into latest channel %s: %w", r.Topic, ch, err)
			}
			m.Into[ch]++
		} else {
			m.Discarded[ch]++
		}
		if _, err := ret.Delete(r.Topic); err != nil {
			return m, fmt.Errorf("removing retained value %q now in channel %s: %w", r.Topic, ch, err)
		}
	}
	return m, nil
}

func countFor(rs []store.Record, owner Owner, ch string) int {
	n := 0
	for _, r := range rs {
		if c, _ := owner(r.Topic); c == ch {
			n++
		}
	}
	return n
}

// Line is the startup line's attributes: "moved" and "discarded", each
// channel=count sorted by channel.
func (m Moved) Line() []any {
	return []any{"moved", pairs(m.Into), "discarded", pairs(m.Discarded)}
}

func pairs(c map[string]int) string {
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	sort.Strings(names)
	s := ""
	for i, n := range names {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%s=%d", n, c[n])
	}
	return s
}
