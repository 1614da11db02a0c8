package memory

import (
	"testing"

	"github.com/saguin-edge/saguin/store/storetest"
)

// TestOffsetsPastFourBillion: a channel whose offsets are past 2^32 (seeded
// through a snapshot file, as a migration writes one) keeps them; run on the
// armhf build by make arm-test.
func TestOffsetsPastFourBillion(t *testing.T) {
	dir := t.TempDir()
	c := &Channel{Name: "events", Kind: "append", Floor: storetest.FarFloor, Next: storetest.FarFloor + 2, Records: storetest.FarRecords()}
	if err := WriteChannelFile(dir, c, "test"); err != nil {
		t.Fatal(err)
	}
	storetest.CheckFarOffsets(t, dir, openForScript)
}
