package main

import (
	"fmt"

	"github.com/saguin-edge/saguin/broker"
	"github.com/saguin-edge/saguin/broker/appendch"
	"github.com/saguin-edge/saguin/broker/channel"
	"github.com/saguin-edge/saguin/broker/queue"
	"github.com/saguin-edge/saguin/config"
	"github.com/saguin-edge/saguin/ops"
	"github.com/saguin-edge/saguin/store"
)

func init() { servedChannelTypes[config.TypeQueue] = true }

// plugQueues plugs every configured queue's engine into b, and beside it an
// append engine over its derived dead-letter channel (<queue>__dlq, read,
// replayed and sought like any append channel), before Restore. The
// engines are b's from then on: b.Close closes them.
func plugQueues(cfg *config.Config, st *storage, b *broker.Broker) error {
	l := cfg.Broker.Limits
	for _, ch := range cfg.Channels {
		if ch.Type != config.TypeQueue {
			continue
		}
		qs := st.queues[ch.Name]
		var dlq *appendch.Engine // built below, before Restore starts the queue
		e, err := queue.New(queue.Options{
			Name: ch.Name, Filters: ch.Filters, Store: qs.q, Host: b.Host(ch.Name),
			Disk:              qs.onDisk,
			Limits:            channel.Limits{MaxHeaderCount: l.MaxHeaderCount, MaxHeaderBytes: l.MaxHeaderBytes},
			VisibilityTimeout: ch.VisibilityTimeout,
			MaxAttempts:       uint32(ch.Retry.MaxAttempts),
			Backoff:           ch.Retry.Backoff,
			BackoffBase:       ch.Retry.BackoffBase,
			JobExpiresAfter:   ch.JobExpiresAfter,
			DeadLettered: func(r *store.Record) {
				if dlq != nil {
					dlq.Appended(r)
				}
			},
		})
		if err != nil {
			return err
		}
		if err := b.Plug(e); err != nil {
			return fmt.Errorf("channel %s: %w", ch.Name, err)
		}
		st.queueOps = append(st.queueOps, ops.Queue{
			Name: ch.Name, Filter: ch.Filter, Provider: ch.Storage,
			Depth: qs.q.Depth, Bytes: qs.q.Bytes, Jobs: qs.q.Jobs, Counters: &e.C,
		})
		for _, d := range cfg.DeadLetters {
			if d.DerivedFrom != ch.Name {
				continue
			}
			dl := appendch.New(appendch.Options{
				Name: d.Name, Filters: d.Filters, Log: qs.q.DeadLetters(), Host: b.Host(d.Name),
				OnPositionLost:    lostOn(b, d.Name),
				OnDisk:            qs.onDisk,
				AckCommitInterval: cfg.Broker.Session.AckCommitInterval,
				InFlightBytes:     l.SessionQueueBytes / 2,
				Limits:            channel.Limits{MaxHeaderCount: l.MaxHeaderCount, MaxHeaderBytes: l.MaxHeaderBytes},
				// A dead letter always carries saguin-channel beside
				// saguin-dlq-channel (checklist C10.7, reading E5).
				Reaches: func(string) int { return 2 },
			})
			if err := b.Plug(dl); err != nil {
				return fmt.Errorf("channel %s: %w", d.Name, err)
			}
			dlq = dl
			// The dead-letter channel carries the append families under
			// its own name (RFC 0005's example scrape: jobs__dlq), its
			// published count 0 for good: a publish into it is refused.
			dlog := qs.q.DeadLetters()
			filter := d.Filter
			if filter == "" && len(d.Filters) > 0 {
				filter = d.Filters[0]
			}
			st.channels = append(st.channels, ops.Channel{
				Name: d.Name, Type: config.TypeAppend, Filter: filter, Provider: ch.Storage,
				Counts: dlog, Lowest: dlog.LowestPosition, Positions: dlog,
				Published:        func() uint64 { return uint64(max(dl.Counters.Published.Load(), 0)) },
				PositionLost:     func() uint64 { return uint64(max(dl.Counters.PositionLost.Load(), 0)) },
				SharedDropped:    func() uint64 { return uint64(max(dl.Counters.SharedDropped.Load(), 0)) },
				RetentionRemoved: st.retention[d.Name].Load,
				Partitioned:      dl.PartitionedConsumers,
			})
		}
	}
	return nil
}
