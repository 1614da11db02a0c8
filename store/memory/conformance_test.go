package memory

import (
	"testing"

	"github.com/saguin-edge/saguin/store"
	"github.com/saguin-edge/saguin/store/storetest"
)

func openForScript(t *testing.T, cfg storetest.Config) (store.Provider, error) {
	return Open(store.MemoryOptions{
		Name:             "mem",
		MaxBytes:         cfg.MaxBytes,
		Reserve:          cfg.Reserve,
		SnapshotDir:      cfg.Dir,
		MaxSessionExpiry: cfg.MaxSessionExpiry,
		Hooks:            cfg.Hooks,
		Now:              cfg.Now,
		Writer:           "test",
	})
}

func TestMemoryProviderPassesTheConformanceScript(t *testing.T) {
	storetest.Run(t, openForScript)
}
