package sqlite

import (
	"errors"
	"time"
)

// SweepBySize implements store.Provider: every channel with retention_bytes
// over its bound is trimmed. The check reads the kept byte counter, so a
// channel under its bound costs no storage read, and the store map is copied
// under the provider's lock and released before anything is removed.
func (p *Provider) SweepBySize() (int, error) {
	var total int
	var errs []error
	for _, s := range p.logList() {
		if b := s.opts.RetentionBytes; b > 0 && s.Bytes() > b {
			n, _, err := s.Trim(time.Time{}, b)
			total += n
			errs = append(errs, err)
		}
	}
	return total, errors.Join(errs...)
}

// SweepByAge implements store.Provider: append and dead-letter channels by
// retention_period, latest channels' values by retention_period and their
// tombstones by deletion_retention_period, the retained store by its period.
func (p *Provider) SweepByAge(now time.Time) (int, error) {
	var total int
	var errs []error
	add := func(n int, err error) {
		total += n
		errs = append(errs, err)
	}
	for _, s := range p.logList() {
		if d := s.opts.RetentionPeriod; d > 0 {
			n, _, err := s.Trim(now.Add(-d), 0)
			add(n, err)
		}
	}
	p.mu.Lock()
	latests := make([]*latestStore, 0, len(p.latests))
	for _, s := range p.latests {
		latests = append(latests, s)
	}
	retained := p.retained
	p.mu.Unlock()
	for _, s := range latests {
		var vb, db time.Time
		if d := s.opts.RetentionPeriod; d > 0 {
			vb = now.Add(-d)
		}
		if d := s.opts.DeletionRetentionPeriod; d > 0 {
			db = now.Add(-d)
		}
		if !vb.IsZero() || !db.IsZero() {
			n, _, err := s.Trim(vb, db)
			add(n, err)
		}
	}
	if retained != nil && retained.period > 0 {
		add(retained.Trim(now.Add(-retained.period)))
	}
	return total, errors.Join(errs...)
}

// ShortestAge implements store.Provider: the shortest age bound of any kind
// configured on the stores opened so far (notes-0004 leaves open whether
// deletion and dead-letter periods count; every age bound does here, the
// safe reading).
func (p *Provider) ShortestAge() time.Duration {
	var shortest time.Duration
	consider := func(d time.Duration) {
		if d > 0 && (shortest == 0 || d < shortest) {
			shortest = d
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.logs {
		consider(s.opts.RetentionPeriod)
	}
	for _, s := range p.latests {
		consider(s.opts.RetentionPeriod)
		consider(s.opts.DeletionRetentionPeriod)
	}
	if p.retained != nil {
		consider(p.retained.period)
	}
	return shortest
}

func (p *Provider) logList() []*logStore {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*logStore, 0, len(p.logs))
	for _, s := range p.logs {
		out = append(out, s)
	}
	return out
}
