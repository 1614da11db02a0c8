// Package memory is the memory storage provider: every record in RAM, counted
// byte for byte against the provider's max_bytes, written to snapshot files
// only at a graceful stop and read back before any door opens (notes-0004
// "Memory, with a snapshot"). Its durability is exactly the last successful
// snapshot (invariant 14).
package memory

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/lockfile"
)

// LockName is the lock file a memory provider takes in its snapshot_dir.
const LockName = "saguin.lock"

// Provider is a memory storage provider.
type Provider struct {
	opts store.MemoryOptions
	now  func() time.Time
	log  *slog.Logger

	// used is the provider-wide byte counter every store charges: records,
	// values, jobs, held publishes, retained values and sessions.
	used atomic.Int64

	lock *lockfile.Lock
	snap *snapshotDir // nil with snapshot_dir: none

	mu     sync.Mutex // guards the maps below, never held across I/O
	closed bool
	// loadFailed: a snapshot file was refused. The broker does not start,
	// and its stop must not write over the directory: a new manifest would
	// make every file it never opened look older than the last shutdown.
	loadFailed bool
	logs       map[string]*logStore // append channels and dead-letter channels
	latests    map[string]*latestStore
	queues     map[string]*queueStore
	retained   *retainedStore
	sessions   *sessionStore
}

// Open opens a memory provider: it takes saguin.lock in the snapshot
// directory (refused while another broker holds it) and reads the manifest.
// Channel files are read when their store is first asked for, which the
// broker does before any door opens; a damaged file is then an error naming
// it, never an empty start.
func Open(opts store.MemoryOptions) (*Provider, error) {
	p := &Provider{
		opts:    opts,
		now:     opts.Now,
		log:     opts.Logger,
		logs:    map[string]*logStore{},
		latests: map[string]*latestStore{},
		queues:  map[string]*queueStore{},
	}
	if p.now == nil {
		p.now = time.Now
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	if opts.MaxBytes > 0 && opts.MaxBytes < 2*opts.Reserve {
		return nil, fmt.Errorf("storage %s: max_bytes %d is below twice the reserve %d", opts.Name, opts.MaxBytes, opts.Reserve)
	}
	if opts.SnapshotDir != "" {
		// A first start finds no directory: make it, private like the files.
		if err := os.MkdirAll(opts.SnapshotDir, 0o700); err != nil {
			return nil, fmt.Errorf("storage %s: snapshot_dir: %w", opts.Name, err)
		}
		l, err := lockfile.Acquire(filepath.Join(opts.SnapshotDir, LockName), opts.Name, 0)
		if err != nil {
			return nil, err
		}
		p.lock = l
		sd, err := openSnapshotDir(opts.SnapshotDir, writerName(opts.Writer), p.log)
		if err != nil {
			l.Release()
			return nil, fmt.Errorf("storage %s: %w", opts.Name, err)
		}
		p.snap = sd
	}
	return p, nil
}

// Name implements store.Provider.
func (p *Provider) Name() string { return p.opts.Name }

// Type implements store.Provider.
func (p *Provider) Type() string { return "memory" }

// Bytes implements store.Provider.
func (p *Provider) Bytes() int64 { return p.used.Load() }

// MaxBytes implements store.Provider.
func (p *Provider) MaxBytes() int64 { return p.opts.MaxBytes }

// charge reserves n bytes for an ordinary write, refusing when the provider
// would pass max_bytes less the reserve. Reserve-and-check is one atomic step,
// so two channels can never both take the last room.
func (p *Provider) charge(n int64) error {
	if p.opts.MaxBytes <= 0 {
		p.used.Add(n)
		return nil
	}
	limit := p.opts.MaxBytes - p.opts.Reserve
	for {
		cur := p.used.Load()
		if cur+n > limit {
			return &store.ShortError{Provider: p.opts.Name, Held: cur, Asked: n, Limit: limit}
		}
		if p.used.CompareAndSwap(cur, cur+n) {
			return nil
		}
	}
}

// chargeRelief charges a relieving write (a dead-letter move, a QoS 2
// release): it never asks, so it can never be refused, and the reserve keeps
// the overshoot inside max_bytes (notes-0004 "The reserve").
func (p *Provider) chargeRelief(n int64) { p.used.Add(n) }

// refund returns bytes a removal freed.
func (p *Provider) refund(n int64) { p.used.Add(-n) }

func (p *Provider) checkOpen() error {
	if p.closed {
		return fmt.Errorf("storage %s: %w", p.opts.Name, store.ErrClosed)
	}
	return nil
}

// Append implements store.Provider.
func (p *Provider) Append(name string, opts store.ChannelOptions) (store.AppendLog, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkOpen(); err != nil {
		return nil, err
	}
	if err := p.kindFree(name, kindAppend); err != nil {
		return nil, err
	}
	if l, ok := p.logs[name]; ok {
		l.setOptions(opts)
		return l, nil
	}
	l := newLogStore(p, name, opts)
	if err := p.loadChannel(name, kindAppend, func(f *channelFile) error { return l.restore(&f.log) }); err != nil {
		return nil, err
	}
	p.logs[name] = l
	return l, nil
}

// Latest implements store.Provider.
func (p *Provider) Latest(name string, opts store.ChannelOptions) (store.Latest, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkOpen(); err != nil {
		return nil, err
	}
	if err := p.kindFree(name, kindLatest); err != nil {
		return nil, err
	}
	if l, ok := p.latests[name]; ok {
		l.setOptions(opts)
		return l, nil
	}
	l := newLatestStore(p, name, opts)
	if err := p.loadChannel(name, kindLatest, func(f *channelFile) error { return l.restore(&f.log) }); err != nil {
		return nil, err
	}
	p.latests[name] = l
	return l, nil
}

// Queue implements store.Provider.
func (p *Provider) Queue(name string, opts store.QueueOptions) (store.Queue, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkOpen(); err != nil {
		return nil, err
	}
	if err := p.kindFree(name, kindQueue); err != nil {
		return nil, err
	}
	if q, ok := p.queues[name]; ok {
		q.SetMaxBytes(opts.MaxBytes)
		q.dlq.setOptions(opts.DLQ)
		return q, nil
	}
	dlqName := name + store.DLQSuffix
	if err := p.kindFree(dlqName, kindAppend); err != nil {
		return nil, err
	}
	if p.logs[dlqName] != nil {
		// Opened on its own it was read from a file of its own, not from its
		// queue's: two stores would then claim one channel.
		return nil, fmt.Errorf("storage %s: dead-letter channel %s was opened before its queue %s: %w", p.opts.Name, dlqName, name, store.ErrKindMismatch)
	}
	dlq := newLogStore(p, dlqName, opts.DLQ)
	q := newQueueStore(p, name, opts.MaxBytes, dlq)
	if err := p.loadChannel(name, kindQueue, func(f *channelFile) error {
		if err := q.restore(&f.log); err != nil {
			return err
		}
		return dlq.restore(f.dlq)
	}); err != nil {
		return nil, err
	}
	p.queues[name] = q
	p.logs[dlqName] = dlq
	return q, nil
}

// kindFree refuses a name already open as another kind.
func (p *Provider) kindFree(name string, k channelKind) error {
	open := map[channelKind]bool{
		kindAppend: p.logs[name] != nil,
		kindLatest: p.latests[name] != nil,
		kindQueue:  p.queues[name] != nil,
	}
	for kind, isOpen := range open {
		if isOpen && kind != k {
			return fmt.Errorf("storage %s: channel %s is open as %s, asked for as %s: %w", p.opts.Name, name, kind, k, store.ErrKindMismatch)
		}
	}
	return nil
}

// Retained implements store.Provider.
func (p *Provider) Retained(period time.Duration) (store.Retained, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkOpen(); err != nil {
		return nil, err
	}
	if p.retained != nil {
		p.retained.setPeriod(period)
		return p.retained, nil
	}
	r := newRetainedStore(p, period)
	if p.snap != nil {
		recs, err := p.snap.loadRetained()
		if err != nil {
			p.loadFailed = true
			return nil, fmt.Errorf("storage %s: %w", p.opts.Name, err)
		}
		r.restore(recs)
	}
	p.retained = r
	return r, nil
}

// Sessions implements store.Provider.
func (p *Provider) Sessions() (store.Sessions, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkOpen(); err != nil {
		return nil, err
	}
	if p.sessions != nil {
		return p.sessions, nil
	}
	s := newSessionStore(p)
	if p.snap != nil {
		st, err := p.snap.loadSessions()
		if err == nil && st != nil {
			if st.staleHolds > 0 && p.opts.Hooks.HoldAbandoned != nil {
				p.opts.Hooks.HoldAbandoned(store.BroadcastName, st.staleHolds)
			}
			err = s.restore(st)
		}
		if err != nil {
			p.loadFailed = true
			return nil, fmt.Errorf("storage %s: %w", p.opts.Name, err)
		}
	}
	p.sessions = s
	p.warnIfOverBound()
	return s, nil
}

// warnIfOverBound says once, at load, that a snapshot written under a larger
// max_bytes left the provider over its bound: it loads whole and refuses
// publishes, subscriptions and Wills until there is room (RFC 0002).
func (p *Provider) warnIfOverBound() {
	limit := p.opts.MaxBytes - p.opts.Reserve
	if p.opts.MaxBytes <= 0 || p.used.Load() <= limit {
		return
	}
	var sessions int64
	if p.sessions != nil {
		sessions = p.sessions.bytes()
	}
	p.log.Warn("storage provider loaded over its max_bytes: publishes, subscriptions and Wills are refused until there is room",
		"provider", p.opts.Name, "bytes", p.used.Load(), "max_bytes", p.opts.MaxBytes, "reserve", p.opts.Reserve, "session_bytes", sessions)
}

// loadChannel reads name's snapshot file, if there is one, into a store.
func (p *Provider) loadChannel(name string, k channelKind, restore func(*channelFile) error) (err error) {
	if p.snap == nil {
		return nil
	}
	defer func() {
		if err != nil {
			p.loadFailed = true
		}
	}()
	f, err := p.snap.loadChannel(name)
	if err != nil {
		return fmt.Errorf("storage %s: %w", p.opts.Name, err)
	}
	if f == nil {
		return nil
	}
	if f.kind != k {
		return fmt.Errorf("storage %s: %s holds a %s channel, configured as %s: %w", p.opts.Name, f.path, f.kind, k, store.ErrKindMismatch)
	}
	if f.stale {
		// Written before the last shutdown began: that shutdown did not
		// rewrite it, and has already answered its holds' releases without
		// them. Their records load; the holds are abandoned.
		if n := len(f.log.holds) + lenHolds(f.dlq); n > 0 {
			f.log.holds = nil
			if f.dlq != nil {
				f.dlq.holds = nil
			}
			if h := p.opts.Hooks.HoldAbandoned; h != nil {
				h(name, n)
			}
			p.log.Warn("exactly-once publishes abandoned: the channel file predates the last shutdown", "provider", p.opts.Name, "channel", name, "file", f.path, "holds", n)
		}
	}
	if err := restore(f); err != nil {
		return fmt.Errorf("storage %s: %s: %w", p.opts.Name, f.path, err)
	}
	return nil
}

func lenHolds(c *channelData) int {
	if c == nil {
		return 0
	}
	return len(c.holds)
}

// stores lists every open store, copied under the provider's lock so that
// sweeps and snapshots never hold it while they work.
func (p *Provider) stores() (logs []*logStore, latests []*latestStore, queues []*queueStore) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.logs {
		logs = append(logs, l)
	}
	for _, l := range p.latests {
		latests = append(latests, l)
	}
	for _, q := range p.queues {
		queues = append(queues, q)
	}
	return logs, latests, queues
}

// SweepBySize implements store.Provider: a channel under its retention_bytes
// is settled from its kept byte counter without touching its records.
func (p *Provider) SweepBySize() (int, error) {
	logs, _, _ := p.stores()
	total := 0
	for _, l := range logs {
		n, _ := l.sweepSize()
		total += n
	}
	return total, nil
}

// SweepByAge implements store.Provider.
func (p *Provider) SweepByAge(now time.Time) (int, error) {
	logs, latests, _ := p.stores()
	total := 0
	for _, l := range logs {
		total += l.sweepAge(now)
	}
	for _, l := range latests {
		total += l.sweepAge(now)
	}
	p.mu.Lock()
	r := p.retained
	p.mu.Unlock()
	if r != nil {
		total += r.sweepAge(now)
	}
	return total, nil
}

// ShortestAge implements store.Provider.
func (p *Provider) ShortestAge() time.Duration {
	logs, latests, _ := p.stores()
	var shortest time.Duration
	consider := func(d time.Duration) {
		if d > 0 && (shortest == 0 || d < shortest) {
			shortest = d
		}
	}
	for _, l := range logs {
		consider(l.options().RetentionPeriod)
	}
	for _, l := range latests {
		o := l.options()
		consider(o.RetentionPeriod)
		consider(o.DeletionRetentionPeriod)
	}
	p.mu.Lock()
	r := p.retained
	p.mu.Unlock()
	if r != nil {
		consider(r.getPeriod())
	}
	return shortest
}

// Close implements store.Provider: with a snapshot_dir it writes the snapshot
// (the graceful stop) and reports every file that failed, then lets the lock
// go. With snapshot_dir: none the state is discarded.
func (p *Provider) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	failed := p.loadFailed
	p.mu.Unlock()
	var errs []error
	if failed {
		p.log.Warn("snapshot not written: a snapshot file was refused at load, the directory is left as it was", "provider", p.opts.Name, "dir", p.opts.SnapshotDir)
	} else if p.snap != nil {
		if err := p.writeSnapshot(); err != nil {
			errs = append(errs, fmt.Errorf("storage %s: snapshot: %w", p.opts.Name, err))
		}
	}
	if p.lock != nil {
		if err := p.lock.Release(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// reportRemoved calls the retention hooks, outside every store lock.
func (p *Provider) reportRemoved(channel string, removed int, lost []string) {
	if removed > 0 && p.opts.Hooks.RetentionRemoved != nil {
		p.opts.Hooks.RetentionRemoved(channel, removed)
	}
	if p.opts.Hooks.PositionLost != nil {
		for _, r := range lost {
			p.opts.Hooks.PositionLost(channel, r)
		}
	}
}

// compile-time checks
var _ store.Provider = (*Provider)(nil)
