package memory

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/saguin-edge/saguin/store"
)

// chanCore is what every memory channel - append, latest, queue and the
// broadcast log - keeps the same way: the provider it charges, the lock that
// guards it, its offsets and bytes, and its held exactly-once publishes. The
// counters and Holder methods that do not differ between channels live here
// once; Name, Len and the way a released hold is written are each channel's
// own.
type chanCore struct {
	p    *Provider
	name string
	// label is how errors name the channel: "channel <name>", "latest
	// channel <name>", "queue <name>" or "broadcast log".
	label string

	mu    sync.Mutex
	next  uint64
	floor uint64
	bytes int64
	holds holdSet
}

func newChanCore(p *Provider, name, label string) chanCore {
	return chanCore{p: p, name: name, label: label, next: 1, floor: 1}
}

// Next implements store.Counters.
func (c *chanCore) Next() uint64 { c.mu.Lock(); defer c.mu.Unlock(); return c.next }

// Floor implements store.Counters: for an append channel the offset of its
// oldest record (next when it holds none); for a latest channel one past the
// highest offset retention removed (a reader whose position is below it may
// have missed a deletion); for a queue the lowest unresolved offset, or next;
// for the broadcast log the lowest offset still held.
func (c *chanCore) Floor() uint64 { c.mu.Lock(); defer c.mu.Unlock(); return c.floor }

// Bytes implements store.Counters.
func (c *chanCore) Bytes() int64 { c.mu.Lock(); defer c.mu.Unlock(); return c.bytes }

// restoreHolds loads the holds a snapshot kept and charges them; the caller
// holds c.mu.
func (c *chanCore) restoreHolds(list []store.Held) {
	for _, h := range list {
		c.holds.put(h)
	}
	c.p.chargeRelief(c.holds.bytes())
}

// Hold implements store.Holder.
func (c *chanCore) Hold(h store.Held) error {
	h.Record.Offset = 0
	if err := c.p.charge(store.RecordSize(&h.Record)); err != nil {
		return fmt.Errorf("%s: holding %s/%d: %w", c.label, h.ClientID, h.PacketID, err)
	}
	c.mu.Lock()
	old, had := c.holds.put(h)
	c.mu.Unlock()
	if had {
		c.p.refund(store.RecordSize(&old.Record))
	}
	return nil
}

// takeHeld is the common half of ReleaseHeld, with c.mu held: the hold is
// found, checked against the channel bound maxBytes (0 for none) and
// forgotten, and its record and size handed back for the channel to write.
// A refused release leaves the hold where it was.
func (c *chanCore) takeHeld(clientID string, packetID uint16, maxBytes int64) (store.Record, int64, error) {
	h, ok := c.holds.m[holdKey{clientID, packetID}]
	if !ok {
		return store.Record{}, 0, fmt.Errorf("%s: no held publish %s/%d: %w", c.label, clientID, packetID, store.ErrNotFound)
	}
	size := store.RecordSize(&h.Record)
	if maxBytes > 0 && c.bytes+size > maxBytes {
		return store.Record{}, 0, fmt.Errorf("%s: releasing %s/%d: %w", c.label, clientID, packetID, store.ErrChannelFull)
	}
	c.holds.take(clientID, packetID)
	return h.Record, size, nil
}

// DropHeld implements store.Holder.
func (c *chanCore) DropHeld(clientID string, packetID uint16) (bool, error) {
	c.mu.Lock()
	h, ok := c.holds.take(clientID, packetID)
	c.mu.Unlock()
	if ok {
		c.p.refund(store.RecordSize(&h.Record))
	}
	return ok, nil
}

// Held implements store.Holder.
func (c *chanCore) Held() ([]store.Held, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.holds.list(), nil
}

// readChannel is what append and latest channels add to chanCore and keep
// the same way: their options and their readers' positions.
type readChannel struct {
	chanCore
	opts store.ChannelOptions
	pos  positionSet
}

func newReadChannel(p *Provider, name, label string, opts store.ChannelOptions) readChannel {
	return readChannel{chanCore: newChanCore(p, name, label), opts: opts}
}

func (c *readChannel) setOptions(o store.ChannelOptions) {
	c.mu.Lock()
	c.opts = o
	c.mu.Unlock()
}

func (c *readChannel) options() store.ChannelOptions {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opts
}

// Position implements store.Positions.
func (c *readChannel) Position(reader string) (store.Position, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pos.get(reader)
	return p, ok, nil
}

// SavePosition implements store.Positions. A position beyond next names a
// record that does not exist and is refused.
func (c *readChannel) SavePosition(p store.Position) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p.Offset > c.next {
		return fmt.Errorf("%s: position %d of %s is beyond next %d", c.label, p.Offset, p.Reader, c.next)
	}
	c.pos.save(p)
	return nil
}

// DropPosition implements store.Positions.
func (c *readChannel) DropPosition(reader string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pos.drop(reader), nil
}

// LowestPosition implements store.Positions.
func (c *readChannel) LowestPosition() (uint64, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pos.lowest(c.next)
}

// FurthestBehind implements store.Positions: a copy taken under the lock,
// sorted outside it.
func (c *readChannel) FurthestBehind(max int) ([]store.Position, error) {
	if max <= 0 {
		return nil, nil
	}
	c.mu.Lock()
	all := append([]store.Position(nil), c.pos.list...)
	c.mu.Unlock()
	slices.SortFunc(all, func(a, b store.Position) int {
		return cmp.Or(cmp.Compare(a.Offset, b.Offset), strings.Compare(a.Reader, b.Reader))
	})
	return all[:min(max, len(all))], nil
}
