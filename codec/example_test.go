package codec_test

import (
	"errors"
	"fmt"

	"github.com/saguin-edge/saguin/codec"
)

// A connection's read loop: frame, refuse what is over the limit before the
// body is buffered, decode into reusable structs, answer.
func Example() {
	// Two packets as they might arrive: a QoS 1 PUBLISH and a PINGREQ.
	in := (&codec.Publish{QoS: 1, PacketID: 7, Topic: []byte("a/b"), Payload: []byte("hi")}).Append(nil, codec.Version311)
	in = (&codec.Pingreq{}).Append(in, codec.Version311)

	var ps codec.Packets
	var out []byte
	for len(in) > 0 {
		h, err := codec.ReadHeader(in, 1024)
		if errors.Is(err, codec.ErrNeedMore) {
			break // read more bytes
		}
		if err != nil {
			fmt.Println("close:", err)
			return
		}
		if h.Total() > len(in) {
			break // the body has not all arrived
		}
		p, err := ps.Decode(h, in[h.HeaderLen:h.Total()], codec.Version311)
		if err != nil {
			fmt.Println("close:", codec.AsError(err).Code)
			return
		}
		switch p := p.(type) {
		case *codec.Publish:
			fmt.Printf("PUBLISH %s %q\n", p.Topic, p.Payload)
			out = (&codec.Ack{Type: codec.TypePuback, PacketID: p.PacketID}).Append(out, codec.Version311)
		case *codec.Pingreq:
			fmt.Println("PINGREQ")
			out = (&codec.Pingresp{}).Append(out, codec.Version311)
		}
		in = in[h.Total():]
	}
	fmt.Printf("answer % x\n", out)
	// Output:
	// PUBLISH a/b "hi"
	// PINGREQ
	// answer 40 02 00 07 d0 00
}

// A refusal carries the reason code to answer with and the rule broken.
func ExampleError() {
	bad := []byte{0x36, 0x05, 0x00, 0x01, 'a', 0x00, 0x01} // both QoS bits set
	h, _ := codec.ReadHeader(bad, 0)
	var p codec.Publish
	err := p.Decode(h, bad[h.HeaderLen:], codec.Version5)
	e := codec.AsError(err)
	fmt.Printf("0x%02X %s\n", uint8(e.Code), e.Rule)
	// Output:
	// 0x81 PUBLISH has both QoS bits set (MQTT-3.3.1-4)
}
