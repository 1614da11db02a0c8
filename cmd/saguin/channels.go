package main

import (
	"fmt"

	"github.com/saguin-edge/saguin/broker"
	"github.com/saguin-edge/saguin/broker/appendch"
	"github.com/saguin-edge/saguin/broker/channel"
	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/config"
	"github.com/saguin-edge/saguin/ops"
)

func init() {
	servedChannelTypes[config.TypeAppend] = true
}

// plugChannels builds an engine for every served channel and plugs it into
// the broker, before Restore (the routing table is fixed from then on).
func plugChannels(cfg *config.Config, st *storage, b *broker.Broker) error {
	reaches := channelReach(cfg)
	l := cfg.Broker.Limits
	for _, ch := range cfg.Channels {
		if ch.Type != config.TypeAppend {
			continue
		}
		al := st.appends[ch.Name]
		e := appendch.New(appendch.Options{
			Name: ch.Name, Filters: ch.Filters, Log: al.log, Host: b.Host(ch.Name),
			Tail: ch.Start == "tail", OnDisk: al.onDisk,
			AckCommitInterval: cfg.Broker.Session.AckCommitInterval,
			InFlightBytes:     l.SessionQueueBytes / 2,
			Limits:            channel.Limits{MaxHeaderCount: l.MaxHeaderCount, MaxHeaderBytes: l.MaxHeaderBytes},
			Reaches:           reaches,
			MaxBytes:          ch.MaxBytes,
			OnPositionLost:    lostOn(b, ch.Name),
		})
		if err := b.Plug(e); err != nil {
			return fmt.Errorf("channel %s: %w", ch.Name, err)
		}
		st.channels = append(st.channels, ops.Channel{
			Name: ch.Name, Type: ch.Type, Filter: ch.Filter, Provider: ch.Storage,
			Counts: al.log, Lowest: al.log.LowestPosition, Positions: al.log,
			Published:        func() uint64 { return uint64(max(e.Counters.Published.Load(), 0)) },
			PositionLost:     func() uint64 { return uint64(max(e.Counters.PositionLost.Load(), 0)) },
			SharedDropped:    func() uint64 { return uint64(max(e.Counters.SharedDropped.Load(), 0)) },
			RetentionRemoved: st.retention[ch.Name].Load,
			Partitioned:      e.PartitionedConsumers,
		})
	}
	return nil
}

// channelReach counts the channels other than queues a subscription filter
// reaches: where it is more than one, deliveries carry saguin-channel (RFC
// 0003 "Which channel a record came from"; a crossed queue serves the filter
// nothing, so it does not count - checklist E5).
func channelReach(cfg *config.Config) func(filter string) int {
	var t topic.Table[string]
	for _, ch := range append(append([]config.Channel(nil), cfg.Channels...), cfg.DeadLetters...) {
		if ch.Type == config.TypeQueue {
			continue
		}
		for _, f := range ch.Filters {
			_ = t.Add(f, ch.Name) // identical filters were refused at load
		}
	}
	return func(filter string) int {
		seen := map[string]bool{}
		t.Reach(filter, func(_ string, name string, _ bool) { seen[name] = true })
		return len(seen)
	}
}

// catalogue is every configured channel and derived dead-letter channel as
// $saguin/catalogue/<channel> describes it: the filter as written (or the
// one derived), and a queue's subscription form as its pin.
func catalogue(cfg *config.Config) []broker.CatalogueEntry {
	var out []broker.CatalogueEntry
	for _, ch := range append(append([]config.Channel(nil), cfg.Channels...), cfg.DeadLetters...) {
		e := broker.CatalogueEntry{Name: ch.Name, Type: ch.Type, Filter: ch.Filter}
		if e.Filter == "" && len(ch.Filters) > 0 {
			e.Filter = ch.Filters[0]
		}
		if ch.Type == config.TypeQueue {
			e.Pin = topic.QueuePrefix + ch.Name
		}
		out = append(out, e)
	}
	return out
}

// lostOn records an append engine's passings in the broker's position-lost
// record under channel.
func lostOn(b *broker.Broker, channel string) func(reader, kind string, reported bool, position, floor uint64) {
	return func(reader, kind string, reported bool, position, floor uint64) {
		b.PositionLost(reader, channel, kind, reported, position, floor)
	}
}
