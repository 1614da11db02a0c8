// Package defaults holds the default of every key RFC 0002 gives one that
// more than one package reads, written once: config fills a key left out
// with it, and broker.Options and netloop.Options give it to a zero field, so
// a key left out of the file and an option left zero mean the same thing.
//
// A leaf: it imports nothing of Sagüin's, so config, broker and netloop can
// all read it.
package defaults

import "time"

// limits.*. Where a figure appears only in RFC 0002's long example
// (max_message_size, max_topic_length, max_header_count, max_header_bytes,
// max_connections), that figure is the default: the document calls the
// reserve max_message_size plus max_header_bytes "around a megabyte at the
// defaults", which those give.
const (
	MaxMessageSize    = 1 << 20
	MaxTopicLength    = 1024
	MaxTopicLevels    = 200
	MaxClientIDLength = 256
	MaxHeaderCount    = 32
	MaxHeaderBytes    = 8 << 10
	MaxConnections    = 10000
	MaxSubscriptions  = 10000
	MaxSessionExpiry  = 30 * 24 * time.Hour
	WriteTimeout      = 5 * time.Second
	ConnectTimeout    = 10 * time.Second
	MaxConnectRate    = 500
	// MaxConnectSize is limits.max_connect_size's default, held to
	// max_message_size when that is smaller (ConnectSizeFor).
	MaxConnectSize = 100 << 10
	// SessionQueueBytes is limits.session_queue_bytes' default, raised to
	// max_message_size when that is larger (SessionQueueBytesFor).
	SessionQueueBytes = 1 << 20
)

// broker.qos2.*, broker.session.*.
const (
	QoS2MaxInflight   = 20
	QoS2ExpiresAfter  = 5 * time.Minute
	AckCommitInterval = 200 * time.Millisecond
)

// SessionQueueBytesFor is session_queue_bytes left out beside
// max_message_size: a session can always queue the largest message a client
// may publish.
func SessionQueueBytesFor[T int | int64](maxMessageSize T) T {
	return max(SessionQueueBytes, maxMessageSize)
}

// ConnectSizeFor is max_connect_size left out beside max_message_size: a
// CONNECT is a packet like any other.
func ConnectSizeFor[T int | int64](maxMessageSize T) T {
	return min(MaxConnectSize, maxMessageSize)
}
