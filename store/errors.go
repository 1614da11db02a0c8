package store

import (
	"errors"
	"fmt"
)

// Errors a store returns. The broker answers a write refused for room
// (IsFull) with 0x97 Quota exceeded and any other write failure with 0x83
// Implementation specific error (notes-0004 Appendix C); wrap these with
// fmt.Errorf("...: %w") and test them with errors.Is.
var (
	// ErrProviderFull: the provider is at its max_bytes (less the reserve,
	// for writes that may not use it). Answered 0x97.
	ErrProviderFull = errors.New("storage provider is full")
	// ErrChannelFull: the record would take its channel (or queue) past the
	// channel's own max_bytes. Answered 0x97; refused before any transaction
	// opens, so a batch's other records still commit.
	ErrChannelFull = errors.New("channel is at its max_bytes")
	// ErrBelowFloor: a read or a position asked for an offset the channel no
	// longer holds. Never served (invariant 1); see BelowFloorError.
	ErrBelowFloor = errors.New("offset is below the channel's floor")
	// ErrStaleDelivery: a queue operation named a delivery that is no longer
	// the job's current one (fencing), or a job that is not held that way.
	ErrStaleDelivery = errors.New("delivery is not the job's current one")
	// ErrNotFound: the job, session or held publish named is not held.
	ErrNotFound = errors.New("not held by the store")
	// ErrKindMismatch: a channel was asked for as one kind and is stored as another.
	ErrKindMismatch = errors.New("channel is stored as another kind")
	// ErrLocked: another broker holds the provider's lock.
	ErrLocked = errors.New("storage provider is held by another broker")
	// ErrCorrupt: a stored file fails its version, checksum or semantic
	// checks. Always a startup error naming the file, never an empty start.
	ErrCorrupt = errors.New("stored state is damaged or of another format")
	// ErrClosed: the provider was closed.
	ErrClosed = errors.New("storage provider is closed")
)

// IsFull reports whether err is a refusal for room (0x97) rather than a
// failure (0x83).
func IsFull(err error) bool {
	return errors.Is(err, ErrProviderFull) || errors.Is(err, ErrChannelFull)
}

// ShortError is ErrProviderFull saying by how many bytes the refused write
// missed, so that what gives way for it (the broadcast log, RFC 0002 "Every
// session's state") gives up the fewest messages that cover the shortfall. A
// memory provider returns it; a sqlite provider, bounded by pages of its
// file, cannot say and returns ErrProviderFull alone.
type ShortError struct {
	Provider string
	Held     int64 // bytes the provider held at the refusal
	Asked    int64 // bytes the write asked for
	Limit    int64 // what ordinary writes may fill: max_bytes less the reserve
}

func (e *ShortError) Error() string {
	return fmt.Sprintf("storage %s: %d bytes held, %d more would pass %d (max_bytes less the reserve): %v",
		e.Provider, e.Held, e.Asked, e.Limit, ErrProviderFull)
}

// Unwrap makes errors.Is(err, ErrProviderFull) hold.
func (e *ShortError) Unwrap() error { return ErrProviderFull }

// Shortfall is how many bytes a write refused for room missed, 0 when err
// does not say (a sqlite provider, or not a refusal for room).
func Shortfall(err error) int64 {
	var e *ShortError
	if errors.As(err, &e) {
		return max(e.Held+e.Asked-e.Limit, 0)
	}
	return 0
}

// BelowFloorError carries the floor a below-floor request met, so a caller
// can move the reader there and report the gap.
type BelowFloorError struct {
	Channel   string
	Requested uint64
	Floor     uint64
}

func (e *BelowFloorError) Error() string {
	return fmt.Sprintf("channel %s: offset %d is below the floor %d", e.Channel, e.Requested, e.Floor)
}

// Unwrap makes errors.Is(err, ErrBelowFloor) hold.
func (e *BelowFloorError) Unwrap() error { return ErrBelowFloor }
