package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/config"
	"github.com/saguin-edge/saguin/ops"
	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/memory"
	"github.com/saguin-edge/saguin/store/sqlite"
)

// storage is what the broker keeps its state in: the providers the
// configuration names for sessions (broker.session.storage) and retained
// values (broker.retained.storage), each opened once, with their retention
// sweeps running. A provider nothing names is not opened (notes-0003).
type storage struct {
	providers []store.Provider
	sessions  store.Sessions
	retained  store.Retained
	// sessionsOnDisk and retainedOnDisk: the provider behind each commits
	// to disk, so a write a client waits on leaves the event loop.
	sessionsOnDisk bool
	retainedOnDisk bool
	// awaitClient puts a client id's queued session writes first while its
	// CONNECT waits on them (a sqlite provider's AwaitClient); nil otherwise.
	awaitClient func(clientID string) (release func())
	// retainedWithSessions: one provider keeps both, so a retained value
	// may take its room from the broadcast log.
	retainedWithSessions bool
	// appends are the append channels' logs, by channel name.
	appends map[string]appendLog
	// latests are the latest channels' stores, by channel name.
	latests map[string]latestStore
	// errors count, per provider, the failures it met on its own (its
	// StorageError hook); sessionsProvider and retainedProvider name the
	// providers whose stores the broker's own failures are put on
	// (saguin_storage_errors_total{provider}).
	errors map[string]*atomic.Uint64
	// retention counts what retention removed, per channel; channels are
	// the served channels' numbers for the operations listener, added as
	// each engine is plugged; queueOps the same for the queues.
	retention                          map[string]*atomic.Uint64
	channels                           []ops.Channel
	queueOps                           []ops.Queue
	sessionsProvider, retainedProvider string
	// queues are the queues' stores (each with its dead-letter log), by
	// channel name.
	queues map[string]queueStore
	cancel context.CancelFunc
	sweeps sync.WaitGroup
}

// queueStore is one queue's store and whether its provider commits to disk.
type queueStore struct {
	q      store.Queue
	onDisk bool
}

// appendLog is one append channel's store and whether its provider commits
// to disk.
type appendLog struct {
	log    store.AppendLog
	onDisk bool
}

// openStorage opens the providers the broker's state lives in. On failure
// every provider already opened is closed again, releasing its lock. The
// cleanup closes its own copy of the storage: a `return nil, err` has already
// set the named result to nil by the time a deferred function runs.
func openStorage(cfg *config.Config, hooks store.Hooks, log *slog.Logger) (_ *storage, err error) {
	st := &storage{errors: map[string]*atomic.Uint64{}, retention: map[string]*atomic.Uint64{}}
	// Retention's removals, per channel (saguin_channel_retention_removed_total):
	// the map is filled here and only read after, so the hook needs no lock.
	for _, list := range [][]config.Channel{cfg.Channels, cfg.DeadLetters} {
		for _, ch := range list {
			st.retention[ch.Name] = new(atomic.Uint64)
		}
	}
	removed := hooks.RetentionRemoved
	hooks.RetentionRemoved = func(channel string, n int) {
		if c := st.retention[channel]; c != nil && n > 0 {
			c.Add(uint64(n))
		}
		if removed != nil {
			removed(channel, n)
		}
	}
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	byName := map[string]store.Provider{}
	open := func(name string) (store.Provider, error) {
		if name == "" {
			name = cfg.Broker.Storage.Default
		}
		if p, ok := byName[name]; ok {
			return p, nil
		}
		var pc *config.Provider
		for i := range cfg.Broker.Storage.Providers {
			if cfg.Broker.Storage.Providers[i].Name == name {
				pc = &cfg.Broker.Storage.Providers[i]
			}
		}
		if pc == nil {
			return nil, fmt.Errorf("storage provider %q is not defined", name)
		}
		n := new(atomic.Uint64)
		ph := hooks
		if all := hooks.StorageError; all != nil {
			ph.StorageError = func(err error) { n.Add(1); all(err) }
		}
		p, err := openProvider(cfg, pc, ph, log)
		if err != nil {
			return nil, err
		}
		st.errors[name] = n
		byName[name] = p
		st.providers = append(st.providers, p)
		return p, nil
	}
	sp, err := open(cfg.Broker.Session.Storage)
	if err != nil {
		return nil, fmt.Errorf("broker.session.storage: %w", err)
	}
	st.sessionsProvider = sp.Name()
	st.sessionsOnDisk = sp.Type() == config.ProviderSQLite
	if p, ok := sp.(*sqlite.Provider); ok {
		st.awaitClient = p.AwaitClient
	}
	if st.sessions, err = sp.Sessions(); err != nil {
		return nil, fmt.Errorf("broker.session.storage: opening the session store on %s: %w", sp.Name(), err)
	}
	rp, err := open(cfg.Broker.Retained.Storage)
	if err != nil {
		return nil, fmt.Errorf("broker.retained.storage: %w", err)
	}
	st.retainedProvider = rp.Name()
	st.retainedOnDisk = rp.Type() == config.ProviderSQLite
	if st.retained, err = rp.Retained(cfg.Broker.Retained.RetentionPeriod); err != nil {
		return nil, fmt.Errorf("broker.retained.storage: opening the retained store on %s: %w", rp.Name(), err)
	}
	st.retainedWithSessions = rp == sp
	// Every append channel's log is opened here, before the retention
	// sweeps start, so that they sweep it from the first pass.
	for _, ch := range cfg.Channels {
		if ch.Type != config.TypeAppend {
			continue
		}
		p, err := open(ch.Storage)
		if err != nil {
			return nil, fmt.Errorf("channels.%s.storage: %w", ch.Name, err)
		}
		log, err := p.Append(ch.Name, store.ChannelOptions{RetentionPeriod: ch.RetentionPeriod, RetentionBytes: ch.RetentionBytes, MaxBytes: ch.MaxBytes})
		if err != nil {
			return nil, fmt.Errorf("channels.%s: opening its log on %s: %w", ch.Name, p.Name(), err)
		}
		if st.appends == nil {
			st.appends = map[string]appendLog{}
		}
		st.appends[ch.Name] = appendLog{log: log, onDisk: p.Type() == config.ProviderSQLite}
	}
	// Every latest channel's store is opened before the retention sweeps
	// start, so that they sweep it (values and tombstones) from the first pass.
	if err := st.openLatests(cfg, open); err != nil {
		return nil, err
	}
	// And every queue with its dead-letter channel, on the queue's
	// provider, whose retention the sweeps apply to the dead letters.
	for _, ch := range cfg.Channels {
		if ch.Type != config.TypeQueue {
			continue
		}
		p, err := open(ch.Storage)
		if err != nil {
			return nil, fmt.Errorf("channels.%s.storage: %w", ch.Name, err)
		}
		qo := store.QueueOptions{MaxBytes: ch.MaxBytes}
		for _, d := range cfg.DeadLetters {
			if d.DerivedFrom == ch.Name {
				qo.DLQ = store.ChannelOptions{RetentionPeriod: d.RetentionPeriod, RetentionBytes: d.RetentionBytes}
			}
		}
		q, err := p.Queue(ch.Name, qo)
		if err != nil {
			return nil, fmt.Errorf("channels.%s: opening its queue on %s: %w", ch.Name, p.Name(), err)
		}
		if st.queues == nil {
			st.queues = map[string]queueStore{}
		}
		st.queues[ch.Name] = queueStore{q: q, onDisk: p.Type() == config.ProviderSQLite}
	}
	ctx, cancel := context.WithCancel(context.Background())
	st.cancel = cancel
	for _, p := range st.providers {
		st.sweeps.Add(1)
		go func() {
			defer st.sweeps.Done()
			store.RunRetention(ctx, p, clock.Real, hooks, log)
		}()
	}
	return st, nil
}

// openProvider opens one provider as its configuration block says. The
// reserve kept for relieving writes is one largest message with its headers
// (RFC 0004 "The reserve").
func openProvider(cfg *config.Config, pc *config.Provider, hooks store.Hooks, log *slog.Logger) (store.Provider, error) {
	l := cfg.Broker.Limits
	reserve := l.MaxMessageSize + l.MaxHeaderBytes
	plog := log.With("provider", pc.Name)
	switch pc.Type {
	case config.ProviderMemory:
		p, err := memory.Open(store.MemoryOptions{Name: pc.Name, MaxBytes: pc.MaxBytes, Reserve: reserve,
			SnapshotDir: pc.SnapshotDir, MaxSessionExpiry: l.MaxSessionExpiry, Hooks: hooks, Logger: plog})
		if err != nil {
			return nil, fmt.Errorf("opening memory provider %s: %w", pc.Name, err)
		}
		return p, nil
	case config.ProviderSQLite:
		mode := store.CommitCollect
		switch pc.PublishCommit {
		case config.CommitEach:
			mode = store.CommitEach
		case config.CommitInterval:
			mode = store.CommitInterval
		}
		p, err := sqlite.Open(store.SQLiteOptions{Name: pc.Name, FilePath: pc.FilePath, MaxBytes: pc.MaxBytes, Reserve: reserve,
			ReadConnections: pc.ReadConnections, FlushInterval: pc.FlushInterval, CommitMode: mode,
			PublishCommitInterval: pc.PublishCommitInterval, PublishCommitMaxRecords: pc.PublishCommitMaxRecords,
			MaxSessionExpiry: l.MaxSessionExpiry, Hooks: hooks, Logger: plog})
		if err != nil {
			return nil, fmt.Errorf("opening sqlite provider %s: %w", pc.Name, err)
		}
		return p, nil
	}
	return nil, fmt.Errorf("provider %s: type %q is neither memory nor sqlite", pc.Name, pc.Type)
}

// close stops the sweeps and closes every provider: a memory provider with a
// snapshot_dir writes its snapshot, a sqlite one checkpoints its log.
func (st *storage) close() error {
	if st.cancel != nil {
		st.cancel()
	}
	st.sweeps.Wait()
	var errs []error
	for _, p := range st.providers {
		if err := p.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing provider %s: %w", p.Name(), err))
		}
	}
	return errors.Join(errs...)
}
