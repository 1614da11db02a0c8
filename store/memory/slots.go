package memory

// slot is an entry of a store kept as a slice in the order values were set,
// a replaced or removed value's slot marked gone and left in place until the
// slice is compacted (retainedStore, latestStore).
type slot interface {
	slotTopic() string
	slotGone() bool
}

func (e *retainedEntry) slotTopic() string { return e.r.Topic }
func (e *retainedEntry) slotGone() bool    { return e.gone }
func (e *latestEntry) slotTopic() string   { return e.v.Topic }
func (e *latestEntry) slotGone() bool      { return e.gone }

// compactSlots removes the gone slots once they are half the slice, in place:
// the survivors move down within the same array (each written at or before
// where it is read), so a store whose topics are replaced allocates nothing.
// topics is pointed at each survivor's new index and *gone reset. The
// store's lock is held.
func compactSlots[E any, P interface {
	*E
	slot
}](entries []E, topics map[string]int, gone *int) []E {
	if *gone == 0 || *gone < len(entries)/2 {
		return entries
	}
	live := entries[:0]
	for i := range entries {
		if e := P(&entries[i]); !e.slotGone() {
			topics[e.slotTopic()] = len(live)
			live = append(live, entries[i])
		}
	}
	clear(entries[len(live):])
	*gone = 0
	return live
}
