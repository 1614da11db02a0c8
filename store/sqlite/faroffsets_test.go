package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/saguin-edge/saguin/store/storetest"
)

// TestOffsetsPastFourBillion: a channel whose offsets are past 2^32 (seeded
// as the offline migration writes one) keeps them; run on the armhf build by
// make arm-test.
func TestOffsetsPastFourBillion(t *testing.T) {
	dir := t.TempDir()
	im, err := CreateImport(filepath.Join(dir, "saguin.db"), "test")
	if err != nil {
		t.Fatal(err)
	}
	c := &Channel{Name: "events", Kind: "append", Floor: storetest.FarFloor, Next: storetest.FarFloor + 2, Records: storetest.FarRecords()}
	if err := im.Write(c); err != nil {
		t.Fatal(err)
	}
	if err := im.Close(); err != nil {
		t.Fatal(err)
	}
	storetest.CheckFarOffsets(t, dir, openForScript)
}
