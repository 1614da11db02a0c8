package broker

import (
	"errors"
	"fmt"
	"time"

	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// heldPublish is one exactly-once publish of a session between its PUBREC and
// its PUBREL. The record is also held, with no offset, in the store of the
// engine its topic resolved to at the PUBLISH - the channel's for a channel,
// the broadcast log's for broadcast (RFC 0002 "Exactly-once publishes:
// broker.qos2") - and released there, never resolved again (RFC 0003).
type heldPublish struct {
	at  time.Time
	rec store.Record
	// eng is the engine holding it: a channel's, or broadcast.
	eng engine.Engine
	// releasing: its release is being written (Release), with no lock
	// held; nothing else drops it meanwhile.
	releasing bool
}

// hold takes ownership of a QoS 2 publish at its PUBREC without routing it:
// the message waits with no offset, until its PUBREL (RFC 0003 "Exactly
// once"), in the store of eng, the engine its topic resolved to (a
// channel's, or the broadcast log's). Refused 0x97 past
// broker.qos2.max_inflight_per_client or when the provider has no room, before
// ownership is taken; the connection is left alone.
func (b *Broker) hold(c delivery.Client, p *codec.Publish, eng engine.Engine) (codec.ReasonCode, string) {
	id := c.ClientID()
	sh := b.shard(id)
	sh.mu.Lock()
	s := sh.sessions[id]
	if !s.ownedBy(c) {
		sh.mu.Unlock()
		return codec.UnspecifiedError, "the session was taken over"
	}
	now := b.now()
	b.expireHolds(s, now)
	if len(s.rareOrNone().holds)+int(s.holding) >= b.opts.QoS2MaxInflight {
		sh.mu.Unlock()
		b.counters.PublishRefused.Add(delivery.ReasonInflightAllowanceExceeded)
		return b.logRefusal(id, p, codec.QuotaExceeded, "past broker.qos2.max_inflight_per_client unfinished exactly-once publishes")
	}
	// Its place in the allowance is taken while the write is made with the
	// lock let go (storeNow).
	s.holding++
	rec := recordOf(p, id, now)
	held := store.Held{ClientID: id, PacketID: p.PacketID, HeldAt: now, Record: rec}
	err := b.storeNow(sh, id, func(*shard) error { return eng.Holder().Hold(held) })
	defer sh.mu.Unlock()
	s.holding--
	if err != nil {
		if errors.Is(err, store.ErrChannelFull) {
			return b.refusePublish(id, p, codec.QuotaExceeded, holderName(eng)+" is at its max_bytes")
		}
		if store.IsFull(err) {
			return b.refusePublish(id, p, codec.QuotaExceeded, holderName(eng)+"'s provider is full")
		}
		b.storageFailed("holding an exactly-once publish", id, err)
		return b.refusePublish(id, p, codec.ImplementationSpecificError, "the store could not hold the message")
	}
	if s.ended {
		// Ended while the hold was written (a Clean Start, a takeover of a
		// session that ended with its connection): it goes as the session's
		// other holds went, after the ending in the id's order.
		b.counters.QoS2Held.Add(1)
		b.dropHold(s, p.PacketID)
		return codec.UnspecifiedError, "the session was taken over"
	}
	if r := s.rarely(); r.holds == nil {
		r.holds = make(map[uint16]heldPublish)
	}
	s.rare.holds[p.PacketID] = heldPublish{at: now, rec: rec, eng: eng}
	b.counters.QoS2Held.Add(1)
	return codec.Success, ""
}

// Holds implements netloop.Handler.
func (b *Broker) Holds(c delivery.Client, packetID uint16) bool {
	id := c.ClientID()
	sh := b.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s := sh.sessions[id]
	if !s.ownedBy(c) {
		return false
	}
	b.expireHolds(s, b.now())
	_, ok := s.rareOrNone().holds[packetID]
	return ok
}

// Release implements netloop.Handler: the held message takes its engine's
// next position and leaves the hold in one operation (engine.Release;
// broadcast stores a retained value just before), and the engine then
// delivers it (engine.Released; broadcast: from the log to the sessions that
// are away, directly to the rest). A hold past broker.qos2.expires_after is
// dropped and answered 0x92.
func (b *Broker) Release(c delivery.Client, packetID uint16) (codec.ReasonCode, string) {
	id := c.ClientID()
	sh := b.shard(id)
	sh.mu.Lock()
	s := sh.sessions[id]
	if !s.ownedBy(c) {
		sh.mu.Unlock()
		return codec.SessionTakenOver, "the session was taken over" // no PUBCOMP (RFC 0003)
	}
	b.expireHolds(s, b.now())
	h, ok := s.rareOrNone().holds[packetID]
	if !ok || h.releasing {
		// Being released by the connection this one took the session
		// from: it is routed once, by that release.
		sh.mu.Unlock()
		return codec.PacketIdentifierNotFound, ""
	}
	// The hold is marked so that nothing else drops it while its release is
	// written with the lock let go (storeNow).
	h.releasing = true
	s.rare.holds[packetID] = h
	return b.release(sh, s, packetID, h)
}

// expireHolds drops the session's holds older than broker.qos2.expires_after,
// counted as abandoned. Shard lock held.
func (b *Broker) expireHolds(s *session, now time.Time) {
	if b.opts.QoS2ExpiresAfter <= 0 {
		return
	}
	for pid, h := range s.rareOrNone().holds {
		if !h.releasing && now.Sub(h.at) >= b.opts.QoS2ExpiresAfter {
			b.dropHold(s, pid)
		}
	}
}

// dropHold forgets one hold, in the store too, counted as abandoned; no
// client waits for the store's part (storeLater). Shard lock held.
func (b *Broker) dropHold(s *session, pid uint16) {
	id := s.id
	holder := s.rareOrNone().holds[pid].eng.Holder()
	delete(s.rareOrNone().holds, pid)
	b.storeLater(nil, id, func(*shard) {
		if _, err := holder.DropHeld(id, pid); err != nil {
			b.storageFailed("dropping an abandoned exactly-once publish", id, err)
		}
	})
	b.counters.QoS2Held.Add(-1)
	b.counters.QoS2Abandoned.Add(1)
}

// holderName names where eng keeps its holds, for a refusal's reason.
func holderName(eng engine.Engine) string {
	if eng.Kind() == delivery.KindBroadcast {
		return "the broadcast log"
	}
	return "channel " + eng.Name()
}

// release completes h in its engine's store in one operation
// (engine.Release), with the shard lock let go across the write on a
// provider that waits on disk (storeNow), and has the engine deliver what it
// wrote once the lock is let go (engine.Released). h is marked releasing.
// Shard lock held; let go on return.
func (b *Broker) release(sh *shard, s *session, packetID uint16, h heldPublish) (codec.ReasonCode, string) {
	id := s.id
	var rel engine.Released
	code, why := codec.Success, ""
	err := b.storeNow(sh, id, func(*shard) error {
		var err error
		rel, code, why, err = h.eng.Release(store.Held{ClientID: id, PacketID: packetID, HeldAt: h.at, Record: h.rec})
		return err
	})
	if err != nil || code != codec.Success {
		// Kept for the re-sent PUBREL (a channel at max_bytes: 0x97).
		h.releasing = false
		if _, kept := s.rareOrNone().holds[packetID]; kept {
			s.rare.holds[packetID] = h
		}
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		if _, kept := s.rareOrNone().holds[packetID]; kept {
			delete(s.rare.holds, packetID)
			b.counters.QoS2Held.Add(-1)
		}
		sh.mu.Unlock()
		return codec.PacketIdentifierNotFound, ""
	case err != nil:
		sh.mu.Unlock()
		if store.IsFull(err) && h.eng.Kind() == delivery.KindBroadcast {
			return codec.QuotaExceeded, "the broadcast log's provider is full"
		} else if store.IsFull(err) {
			return codec.QuotaExceeded, holderName(h.eng) + " has no room"
		}
		b.storageFailed("releasing an exactly-once publish", id, err)
		return codec.ImplementationSpecificError, "the store could not write the release"
	case code != codec.Success:
		sh.mu.Unlock()
		return code, why
	}
	if _, kept := s.rareOrNone().holds[packetID]; kept {
		delete(s.rare.holds, packetID)
		b.counters.QoS2Held.Add(-1)
	}
	sh.mu.Unlock()
	h.eng.Released(rel)
	return codec.Success, ""
}

// restoreHolds gives every session that came back its exactly-once publishes
// held in each engine's store - the broadcast log's, then every channel's -
// each remembering the engine it is held for; one whose session did not come
// back is dropped there and counted.
func (b *Broker) restoreHolds() error {
	for _, eng := range b.routes.every() {
		holder := eng.Holder()
		held, err := holder.Held()
		if err != nil {
			return fmt.Errorf("reading the exactly-once publishes %s holds: %w", holderName(eng), err)
		}
		for _, h := range held {
			sh := b.shard(h.ClientID)
			sh.mu.Lock()
			if s := sh.sessions[h.ClientID]; s != nil {
				if r := s.rarely(); r.holds == nil {
					r.holds = make(map[uint16]heldPublish)
				}
				s.rare.holds[h.PacketID] = heldPublish{at: h.HeldAt, rec: h.Record, eng: eng}
				b.counters.QoS2Held.Add(1)
			} else if _, err := holder.DropHeld(h.ClientID, h.PacketID); err != nil {
				sh.mu.Unlock()
				return fmt.Errorf("dropping the held publishes of session %q, which did not come back: %w", h.ClientID, err)
			} else {
				b.counters.QoS2Abandoned.Add(1)
			}
			sh.mu.Unlock()
		}
	}
	return nil
}
