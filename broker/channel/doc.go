// Package channel is what every channel engine (append, latest, queue) shares
// and nothing else: how a publish becomes a store.Record (RFC 0003 "From
// publish to record"), which labels a channel delivery carries (saguin-id,
// saguin-offset, saguin-timestamp, saguin-expires, saguin-channel), the
// reserved $saguin/ front (which of its topics a PUBLISH or a SUBSCRIBE
// names, and with which reason code the topic alone is refused), the
// saguin- User Properties a CONNECT or SUBSCRIBE may carry, the
// client-declared partition (saguin-filter, topic_hash), and the seek
// payload.
//
// It is pure: no locks, no goroutines, no store writes, no clock of its own
// (every time is passed in). The engines own state; this package owns the
// rules that are the same for all of them, written once.
package channel
