package topic

import (
	"fmt"
	"testing"
)

func BenchmarkMatch(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if !Match("iot/+/+/events/#", "iot/depot/device-17/events/door/open") {
			b.Fatal("no match")
		}
	}
}

// BenchmarkTableLookup resolves a topic against a hundred channels sharing one
// hierarchy, the shape RFC 0002's examples give a configuration.
func BenchmarkTableLookup(b *testing.B) {
	var tab Table[int]
	for i := 0; i < 25; i++ {
		for j, f := range []string{"iot/site-%d/+/events/#", "iot/site-%d/+/state", "iot/site-%d/+/+/#", "iot/site-%d/#"} {
			if err := tab.Add(fmt.Sprintf(f, i), i*4+j); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := tab.Lookup("iot/site-17/device-3/state"); !ok {
			b.Fatal("no channel")
		}
	}
}
