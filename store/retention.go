package store

import (
	"context"
	"log/slog"

	"github.com/saguin-edge/saguin/broker/clock"
)

// RunRetention runs a provider's two retention sweeps until ctx ends: by size
// every SizeSweepPeriod, by age every AgeSweepPeriod(p.ShortestAge()) - the
// age period is re-read after each pass, so stores opened later count. Both
// run once at start, so a broker that was down while records aged does not
// wait a tick, and both periods are logged then (notes-0003 "When retention
// removes"). Every period and every "now" is clk's, the broker's injected
// clock, so a test moves a fake one past a deadline instead of waiting for
// it. A failed pass is reported to hooks.StorageError and logged; the next
// tick runs again (retention may be refused room and simply retries).
func RunRetention(ctx context.Context, p Provider, clk clock.Clock, hooks Hooks, log *slog.Logger) {
	clk = clock.Or(clk)
	if log == nil {
		log = slog.Default()
	}
	fail := func(kind string, err error) {
		if hooks.StorageError != nil {
			hooks.StorageError(err)
		}
		log.Error("retention sweep failed", "provider", p.Name(), "sweep", kind, "error", err)
	}
	agePeriod := AgeSweepPeriod(p.ShortestAge())
	log.Info("retention sweeps", "provider", p.Name(), "size_every", SizeSweepPeriod.String(), "age_every", agePeriod.String())
	if _, err := p.SweepBySize(); err != nil {
		fail("size", err)
	}
	if _, err := p.SweepByAge(clk.Now()); err != nil {
		fail("age", err)
	}
	sizeTick := clk.NewTicker(SizeSweepPeriod)
	defer sizeTick.Stop()
	// The age pass is a one-shot timer re-armed after each pass with the
	// period read again; it hands its moment over a channel so that both
	// sweeps run on this one goroutine, never two passes at once.
	ageDue := make(chan struct{}, 1)
	arm := func() clock.Timer {
		return clk.AfterFunc(AgeSweepPeriod(p.ShortestAge()), func() {
			select {
			case ageDue <- struct{}{}:
			default:
			}
		})
	}
	ageTimer := arm()
	defer func() { ageTimer.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sizeTick.C():
			if _, err := p.SweepBySize(); err != nil {
				fail("size", err)
			}
		case <-ageDue:
			if _, err := p.SweepByAge(clk.Now()); err != nil {
				fail("age", err)
			}
			ageTimer = arm()
		}
	}
}
