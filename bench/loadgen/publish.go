package loadgen

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// ErrClosed is returned by a publish on a connection whose reader has ended.
var ErrClosed = errors.New("loadgen: connection closed")

// StampSize is the room a timestamp takes at the front of a payload.
const StampSize = 8

// Stamp writes the generator's clock into the first StampSize bytes of
// payload, which must be at least that long.
func Stamp(payload []byte) { binary.BigEndian.PutUint64(payload, uint64(Now())) }

// Age is how long ago payload was stamped; -1 when it is too short to hold a
// stamp.
func Age(payload []byte) time.Duration {
	if len(payload) < StampSize {
		return -1
	}
	return durationSince(int64(binary.BigEndian.Uint64(payload)))
}

func durationSince(stamp int64) time.Duration { return time.Duration(Now() - stamp) }

// PublishQoS0 writes n PUBLISHes at QoS 0 to topic in one write, stamping
// payload afresh for each. Batching the writes is what a fast client does and
// keeps the generator's system calls out of the broker's way.
func (c *Conn) PublishQoS0(topic, payload []byte, n int) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf = c.wbuf[:0]
	p := codec.Publish{Topic: topic, Payload: payload}
	for range n {
		Stamp(payload)
		c.wbuf = p.Append(c.wbuf, codec.Version5)
	}
	if _, err := c.nc.Write(c.wbuf); err != nil {
		return fmt.Errorf("writing QoS 0 PUBLISH: %w", err)
	}
	return nil
}

// PublishQoS1 waits for room in the window, stamps payload and writes one
// PUBLISH at QoS 1. It returns once the packet is written; the PUBACK comes
// back on the reader. With a window of 1, every call waits for the previous
// publish's PUBACK first.
func (c *Conn) PublishQoS1(ctx context.Context, topic, payload []byte) error {
	var id uint16
	select {
	case id = <-c.free:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		if err := c.Err(); err != nil {
			return err
		}
		return ErrClosed
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	Stamp(payload)
	c.sentAt[id].Store(Now())
	c.order.push(id)
	p := codec.Publish{QoS: 1, Retain: c.opt.Retain, Topic: topic, PacketID: id, Payload: payload}
	c.wbuf = p.Append(c.wbuf[:0], codec.Version5)
	if _, err := c.nc.Write(c.wbuf); err != nil {
		return fmt.Errorf("writing QoS 1 PUBLISH: %w", err)
	}
	return nil
}

// InFlight is how many QoS 1 publishes await their PUBACK.
func (c *Conn) InFlight() int { return cap(c.free) - len(c.free) }
