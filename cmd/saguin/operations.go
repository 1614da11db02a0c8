package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/config"
	"github.com/saguin-edge/saguin/ops"
	"github.com/saguin-edge/saguin/ops/buildinfo"
	"github.com/saguin-edge/saguin/store/sqlite"
)

func init() {
	registerService("operations", startOperations)
}

// startOperations serves broker.operations; none when the block is absent.
func startOperations(env *serviceEnv) (*running, error) {
	cfg := env.cfg
	if cfg.Broker.Operations == nil {
		return nil, nil
	}
	src := &ops.Source{
		BrokerID:         cfg.Broker.ID,
		Version:          buildinfo.Read().Version,
		Started:          env.started,
		Broker:           env.broker,
		Net:              env.net,
		QoS2MaxInflight:  cfg.Broker.QoS2.MaxInflightPerClient,
		MaxSessionExpiry: cfg.Broker.Limits.MaxSessionExpiry,
	}
	src.Channels = slices.Clone(env.storage.channels)
	slices.SortFunc(src.Channels, func(a, b ops.Channel) int { return strings.Compare(a.Name, b.Name) })
	src.Queues = slices.Clone(env.storage.queueOps)
	slices.SortFunc(src.Queues, func(a, b ops.Queue) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range env.storage.providers {
		pc := providerConfig(cfg, p.Name())
		op := ops.Provider{Name: p.Name(), Type: p.Type(), MaxBytes: p.MaxBytes(), Bytes: p.Bytes,
			Errors:   env.storage.errors[p.Name()].Load,
			Sessions: p.Name() == env.storage.sessionsProvider, Retained: p.Name() == env.storage.retainedProvider}
		if sp, ok := p.(*sqlite.Provider); ok {
			op.Commits = sp.Commits()
			op.CommitMaxRecords = 256
			switch pc.PublishCommit {
			case config.CommitEach:
				op.CommitMaxRecords = 0
			case config.CommitInterval:
				if pc.PublishCommitMaxRecords > 0 {
					op.CommitMaxRecords = pc.PublishCommitMaxRecords
				}
			}
		}
		src.Providers = append(src.Providers, op)
	}
	s, err := ops.New(ops.Options{Config: cfg, Source: src, Clock: clock.Real, Logger: env.log})
	if err != nil {
		return nil, err
	}
	s.Start()
	return &running{
		stop:   func(ctx context.Context) error { return s.Shutdown(ctx) },
		reread: s.Reread,
	}, nil
}

func providerConfig(cfg *config.Config, name string) config.Provider {
	for _, p := range cfg.Broker.Storage.Providers {
		if p.Name == name {
			return p
		}
	}
	panic(fmt.Sprintf("provider %q is open and not configured", name))
}
