package loadgen

import (
	"errors"
	"fmt"

	"github.com/saguin-edge/saguin/codec"
)

// readLoop is the connection's one reader: it frames what arrives with
// codec.ReadHeader, hands each PUBLISH to OnPublish, returns each PUBACK's
// packet identifier to the window, and writes the PUBACKs owed for one read's
// worth of QoS 1 deliveries in one write.
func (c *Conn) readLoop() {
	defer close(c.done)
	buf := make([]byte, c.opt.ReadBuffer)
	var pub codec.Publish
	var ack codec.Ack
	owed := make([]byte, 0, 512) // PUBACKs for the QoS 1 deliveries of this read
	start, end := 0, 0
	for {
		if c.paused.Load() {
			<-c.resume
			return
		}
		n, err := c.nc.Read(buf[end:])
		if err != nil {
			c.fail(fmt.Errorf("reading: %w", err))
			return
		}
		end += n
		for {
			h, err := codec.ReadHeader(buf[start:end], maxPacket)
			if errors.Is(err, codec.ErrNeedMore) {
				break
			}
			if err != nil {
				c.fail(fmt.Errorf("framing: %w", err))
				return
			}
			total := h.Total()
			if end-start < total {
				if total > len(buf) {
					grown := make([]byte, total)
					copy(grown, buf[start:end])
					buf, end, start = grown, end-start, 0
				}
				break
			}
			body := buf[start+h.HeaderLen : start+total]
			start += total
			switch h.Type {
			case codec.TypePublish:
				if err := pub.Decode(h, body, codec.Version5); err != nil {
					c.fail(fmt.Errorf("decoding PUBLISH: %w", err))
					return
				}
				c.delivered.Add(1)
				if c.opt.OnPublish != nil {
					c.opt.OnPublish(&pub)
				}
				if pub.QoS == 1 {
					puback := codec.Ack{Type: codec.TypePuback, PacketID: pub.PacketID}
					owed = puback.Append(owed, codec.Version5)
					if c.opt.Reply != nil {
						owed = c.opt.Reply(&pub, owed)
					}
				}
			case codec.TypePuback:
				if err := ack.Decode(h, body, codec.Version5); err != nil {
					c.fail(fmt.Errorf("decoding PUBACK: %w", err))
					return
				}
				if err := c.acknowledged(&ack); err != nil {
					c.fail(err)
					return
				}
			case codec.TypePingresp:
			case codec.TypeDisconnect:
				reason := "normal disconnection"
				if len(body) > 0 {
					reason = codec.ReasonCode(body[0]).String()
				}
				c.fail(fmt.Errorf("broker sent DISCONNECT: %s", reason))
				return
			default:
				c.fail(fmt.Errorf("broker sent an unexpected %s", h.Type))
				return
			}
		}
		if start == end {
			start, end = 0, 0
		} else if end == len(buf) {
			end = copy(buf, buf[start:end])
			start = 0
		}
		if len(owed) > 0 {
			if err := c.write(owed); err != nil {
				c.fail(fmt.Errorf("writing PUBACKs: %w", err))
				return
			}
			owed = owed[:0]
		}
	}
}

// acknowledged takes a PUBACK: the identifier goes back to the window, the
// round trip to AckLatency. A refusal still frees the identifier (MQTT 5
// 4.3.2) and is counted as acknowledged, but is an error for the run - a
// benchmark publish is never meant to be refused - unless the connection
// measures refusals (RefusedLatency), which take their round trip.
func (c *Conn) acknowledged(ack *codec.Ack) error {
	id := int(ack.PacketID)
	if id >= len(c.sentAt) {
		return fmt.Errorf("PUBACK for packet identifier %d, which was never sent", id)
	}
	sent := c.sentAt[id].Swap(0)
	if sent == 0 {
		return fmt.Errorf("PUBACK for packet identifier %d, which is not in flight", id)
	}
	if oldest, _ := c.order.pop(); int(oldest) != id {
		return fmt.Errorf("PUBACK for packet identifier %d before the one for %d, published earlier: QoS 1 is answered in the order received (MQTT-4.6.0-2)", id, oldest)
	}
	refused := ack.ReasonCode >= 0x80
	switch {
	case refused && c.opt.RefusedLatency != nil:
		c.opt.RefusedLatency.Record(durationSince(sent))
		c.refused.Add(1)
	case c.opt.AckLatency != nil && !refused:
		c.opt.AckLatency.Record(durationSince(sent))
	}
	c.acked.Add(1)
	c.free <- ack.PacketID
	if refused && c.opt.RefusedLatency == nil {
		return fmt.Errorf("PUBLISH %d refused: %s", id, ack.ReasonCode)
	}
	return nil
}

func (c *Conn) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.nc.Write(b)
	return err
}
