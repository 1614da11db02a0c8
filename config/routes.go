package config

import (
	"sort"

	"github.com/saguin-edge/saguin/codec/topic"
)

// Routes is the configuration's routing table: every channel's expanded
// filters, the derived dead-letter channels' included, in the table the broker
// resolves publishes with (codec/topic), so that --route and the broker cannot
// disagree (RFC 0002 "Where a topic lands").
type Routes struct {
	table topic.Table[*Channel]
	// order ranks channels for listing: append, latest, queue, each by name,
	// and a queue's dead-letter channel right after its queue.
	order map[string]int
}

// Routes builds the routing table of a loaded configuration.
func (c *Config) Routes() *Routes {
	r := &Routes{order: map[string]int{}}
	all := make([]*Channel, 0, len(c.Channels)+len(c.DeadLetters))
	for i := range c.Channels {
		all = append(all, &c.Channels[i])
	}
	for i := range c.DeadLetters {
		all = append(all, &c.DeadLetters[i])
	}
	rank := map[string]int{TypeAppend: 0, TypeLatest: 1, TypeQueue: 2}
	sorted := append([]*Channel(nil), all...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if a.DerivedFrom != "" || b.DerivedFrom != "" {
			return false
		}
		if rank[a.Type] != rank[b.Type] {
			return rank[a.Type] < rank[b.Type]
		}
		return a.Name < b.Name
	})
	n := 0
	for _, ch := range sorted {
		if ch.DerivedFrom != "" {
			continue
		}
		r.order[ch.Name] = n
		n += 2
		if ch.Type == TypeQueue {
			r.order[topic.DeadLetterName(ch.Name)] = n - 1
		}
	}
	for _, ch := range all {
		for _, f := range ch.Filters {
			// Duplicates were refused by validation; a table built from a
			// configuration that failed it simply keeps the first.
			_ = r.table.Add(f, ch)
		}
	}
	return r
}

// Topic answers which channel holds a topic and the filter that claimed it;
// ok is false for a topic no filter matches, which is broadcast.
func (r *Routes) Topic(name string) (ch *Channel, filter string, ok bool) {
	filter, ch, ok = r.table.Lookup(name)
	return ch, filter, ok
}

// What a subscription is served from a channel it reaches.
const (
	SendsReplayed = "replayed" // an append channel: from the subscriber's own position
	SendsCurrent  = "current"  // a latest channel: current state, then changes
	SendsExcluded = "excluded" // a queue the filter crosses: served everything else
	SendsRefused  = "refused"  // a queue the filter lies inside: SUBACK 0x8F
)

// Reach is one channel a subscription filter is served from.
type Reach struct {
	Channel *Channel
	// Filter is the channel's filter (one expansion) the subscription meets.
	Filter string
	// Inside is true when every topic the subscription matches is this
	// channel's.
	Inside bool
	Sends  string
}

// Filter answers what a subscription with this filter would be served: one
// entry per channel it reaches, in listing order.
func (r *Routes) Filter(f string) []Reach {
	var out []Reach
	index := map[string]int{}
	r.table.Reach(f, func(entry string, ch *Channel, inside bool) {
		if i, seen := index[ch.Name]; seen {
			out[i].Inside = out[i].Inside || inside
			return
		}
		index[ch.Name] = len(out)
		out = append(out, Reach{Channel: ch, Filter: entry, Inside: inside})
	})
	for i := range out {
		switch {
		case out[i].Channel.Type == TypeLatest:
			out[i].Sends = SendsCurrent
		case out[i].Channel.Type == TypeQueue && out[i].Inside:
			out[i].Sends = SendsRefused
		case out[i].Channel.Type == TypeQueue:
			out[i].Sends = SendsExcluded
		default:
			out[i].Sends = SendsReplayed
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return r.order[out[i].Channel.Name] < r.order[out[j].Channel.Name] })
	return out
}

// Expanded lists every plain filter in the table and the channel holding it,
// in listing order and then the order each channel expands to: the routing
// table --route prints.
func (r *Routes) Expanded() []Reach {
	var out []Reach
	r.table.Each(func(f string, ch *Channel) bool {
		out = append(out, Reach{Channel: ch, Filter: f})
		return true
	})
	sort.SliceStable(out, func(i, j int) bool { return r.order[out[i].Channel.Name] < r.order[out[j].Channel.Name] })
	return out
}
