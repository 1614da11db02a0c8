package main

import (
	"fmt"
	"log/slog"

	"github.com/saguin-edge/saguin/broker"
	"github.com/saguin-edge/saguin/broker/latest"
	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/config"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/ops"
	"github.com/saguin-edge/saguin/store"
)

func init() {
	servedChannelTypes[config.TypeLatest] = true
}

// latestStore is one latest channel's store, its provider's name and
// whether that provider commits to disk.
type latestStore struct {
	st       store.Latest
	provider string
	onDisk   bool
}

// openLatests opens every latest channel's store on the provider it names.
func (st *storage) openLatests(cfg *config.Config, open func(string) (store.Provider, error)) error {
	for _, ch := range cfg.Channels {
		if ch.Type != config.TypeLatest {
			continue
		}
		p, err := open(ch.Storage)
		if err != nil {
			return fmt.Errorf("channels.%s.storage: %w", ch.Name, err)
		}
		l, err := p.Latest(ch.Name, store.ChannelOptions{RetentionPeriod: ch.RetentionPeriod, DeletionRetentionPeriod: ch.DeletionRetentionPeriod})
		if err != nil {
			return fmt.Errorf("channels.%s: opening its values on %s: %w", ch.Name, p.Name(), err)
		}
		if st.latests == nil {
			st.latests = map[string]latestStore{}
		}
		st.latests[ch.Name] = latestStore{st: l, provider: p.Name(), onDisk: p.Type() == config.ProviderSQLite}
	}
	return nil
}

// plugLatest builds and plugs an engine for every latest channel, then moves
// into them the retained broadcast values their filters now claim, and drops
// those now under another channel (RFC 0002 "Retained messages on a broadcast
// topic"): before Restore, so no subscriber is ever served a value from both.
func plugLatest(cfg *config.Config, st *storage, b *broker.Broker, log *slog.Logger) error {
	reach := channelReach(cfg)
	for _, ch := range cfg.Channels {
		if ch.Type != config.TypeLatest {
			continue
		}
		ls := st.latests[ch.Name]
		e, err := latest.New(latest.Config{
			Name: ch.Name, Filters: ch.Filters, Store: ls.st,
			RetentionPeriod: ch.RetentionPeriod, DeletionRetentionPeriod: ch.DeletionRetentionPeriod,
			SessionQueueBytes: cfg.Broker.Limits.SessionQueueBytes, Disk: ls.onDisk, Reaches: reach,
			ShareExpiresAfter: cfg.Broker.Share.ExpiresAfter,
		}, b.Host(ch.Name))
		if err != nil {
			return err
		}
		if err := b.Plug(e); err != nil {
			return fmt.Errorf("channel %s: %w", ch.Name, err)
		}
		st.channels = append(st.channels, ops.Channel{
			Name: ch.Name, Type: ch.Type, Filter: ch.Filter, Provider: ls.provider,
			Counts: ls.st, Published: e.Counters().Published.Load, Superseded: e.Counters().Superseded.Load,
			RetentionRemoved: st.retention[ch.Name].Load, Partitioned: e.PartitionedConsumers,
			SharedDropped: e.Counters().SharedDropped.Load,
		})
	}
	if st.retained == nil {
		return nil
	}
	owner := channelOwner(cfg)
	moved, err := latest.MoveRetained(st.retained, owner, func(ch string) (store.Latest, string) {
		return st.latests[ch].st, st.latests[ch].provider
	})
	if err != nil {
		return err
	}
	if len(moved.Into)+len(moved.Discarded) > 0 {
		log.Info("retained values settled into the channels now claiming their topics", moved.Line()...)
	}
	return nil
}

// channelOwner is the channel holding a topic most exactly, and its kind
// (RFC 0002 "Which channel a topic belongs to"), KindNone for broadcast.
func channelOwner(cfg *config.Config) latest.Owner {
	type owned struct {
		name string
		kind delivery.Kind
	}
	var t topic.Table[owned]
	for _, ch := range append(append([]config.Channel(nil), cfg.Channels...), cfg.DeadLetters...) {
		k := delivery.KindAppend
		switch ch.Type {
		case config.TypeLatest:
			k = delivery.KindLatest
		case config.TypeQueue:
			k = delivery.KindQueue
		}
		for _, f := range ch.Filters {
			_ = t.Add(f, owned{ch.Name, k}) // identical filters were refused at load
		}
	}
	return func(tp string) (string, delivery.Kind) {
		_, o, ok := t.Lookup(tp)
		if !ok {
			return "", delivery.KindNone
		}
		return o.name, o.kind
	}
}
