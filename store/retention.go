package store

import (
	"context"
	"log/slog"
	"time"
)

// RunRetention runs a provider's two retention sweeps until ctx ends: by size
// every SizeSweepPeriod, by age every AgeSweepPeriod(p.ShortestAge()) - the
// age period is re-read after each pass, so stores opened later count. Both
// run once at start, so a broker that was down while records aged does not
// wait a tick. A failed pass is reported to hooks.StorageError and logged;
// the next tick runs again (retention may be refused room and simply retries).
func RunRetention(ctx context.Context, p Provider, now func() time.Time, hooks Hooks, log *slog.Logger) {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	fail := func(kind string, err error) {
		if hooks.StorageError != nil {
			hooks.StorageError(err)
		}
		log.Error("retention sweep failed", "provider", p.Name(), "sweep", kind, "error", err)
	}
	if _, err := p.SweepBySize(); err != nil {
		fail("size", err)
	}
	if _, err := p.SweepByAge(now()); err != nil {
		fail("age", err)
	}
	sizeTick := time.NewTicker(SizeSweepPeriod)
	defer sizeTick.Stop()
	agePeriod := AgeSweepPeriod(p.ShortestAge())
	ageTimer := time.NewTimer(agePeriod)
	defer ageTimer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sizeTick.C:
			if _, err := p.SweepBySize(); err != nil {
				fail("size", err)
			}
		case <-ageTimer.C:
			if _, err := p.SweepByAge(now()); err != nil {
				fail("age", err)
			}
			agePeriod = AgeSweepPeriod(p.ShortestAge())
			ageTimer.Reset(agePeriod)
		}
	}
}
