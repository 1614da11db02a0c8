package codec

import (
	"bytes"
	"reflect"
	"testing"
)

// Fuzz targets: the framer, the dispatcher and each decode entry point. No
// input may panic or loop; what decodes must encode and decode back to the
// same packet, and the encoding must be stable. Seeds are the round-trip,
// cross-check and golden packets above plus testdata/fuzz.

func FuzzReadHeader(f *testing.F) {
	f.Add([]byte{0x30, 0x00}, 0)
	f.Add([]byte{0x30, 0xFF, 0xFF, 0xFF, 0x7F}, 1000)
	f.Add([]byte{0x30, 0x80, 0x80, 0x80, 0x80, 0x01}, 0)
	f.Fuzz(func(t *testing.T, buf []byte, limit int) {
		h, err := ReadHeader(buf, limit)
		if err != nil {
			if err != ErrNeedMore && AsError(err) == nil {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if h.HeaderLen < 2 || h.HeaderLen > 5 || h.HeaderLen > len(buf) || h.Remaining < 0 || h.Remaining > MaxRemaining {
			t.Fatalf("impossible header %+v from % x", h, buf)
		}
		if limit > 0 && h.Total() > limit {
			t.Fatalf("header %+v accepted over limit %d", h, limit)
		}
		if !bytes.Equal(appendHeader(nil, h.Type, h.Flags, h.Remaining), buf[:h.HeaderLen]) {
			t.Fatalf("header %+v does not re-encode to % x", h, buf[:h.HeaderLen])
		}
	})
}

// seedWires is every packet the other tests build, encoded at each version.
func seedWires() [][]byte {
	var out [][]byte
	for _, tc := range crossCheckPackets5() {
		out = append(out, tc.p.Append(nil, Version5))
		if c, ok := tc.p.(*Connect); ok {
			c311 := *c
			c311.Version = Version311
			out = append(out, c311.Append(nil, Version311))
			continue
		}
		out = append(out, tc.p.Append(nil, Version311))
	}
	for _, s := range []string{"101000044d5154540402003c000463617031", "32090003612f6200016869",
		"102500044d51545404ee001e0004636170340003772f740004676f6e6500047573657200027077",
		"321e0003612f620001142600016b00017603000a746578742f706c61696e6869", "820f0001000003782f2b020003792f2302",
		"f0 00", "e0 00", "c0 00", "d0 00"} {
		out = append(out, hx(s))
	}
	return out
}

func FuzzPacketsDecode(f *testing.F) {
	for _, w := range seedWires() {
		f.Add(w, uint8(Version5))
		f.Add(w, uint8(Version311))
	}
	f.Fuzz(func(t *testing.T, wire []byte, version uint8) {
		h, err := ReadHeader(wire, 0)
		if err != nil || h.Total() > len(wire) {
			return
		}
		var ps Packets
		p, err := ps.Decode(h, wire[h.HeaderLen:h.Total()], version)
		if err != nil {
			if AsError(err) == nil {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		checkRoundTrip(t, p, version)
	})
}

// checkRoundTrip encodes a decoded packet, decodes that, and requires the
// same packet and the same bytes again.
func checkRoundTrip(t *testing.T, p Packet, version uint8) {
	t.Helper()
	if c, ok := p.(*Connect); ok {
		version = c.Version
	}
	enc := p.Append(nil, version)
	if len(enc) != p.Size(version) {
		t.Fatalf("Size %d, encoded %d bytes", p.Size(version), len(enc))
	}
	h, err := ReadHeader(enc, 0)
	if err != nil || h.Total() != len(enc) {
		t.Fatalf("our encoding % x frames as %+v, %v", enc, h, err)
	}
	var ps Packets
	again, err := ps.Decode(h, enc[h.HeaderLen:], version)
	if err != nil {
		t.Fatalf("our encoding % x of %+v does not decode: %v", enc, p, err)
	}
	if !reflect.DeepEqual(normalise(again), normalise(p)) {
		t.Fatalf("round trip differs:\n got %+v\nwant %+v", again, p)
	}
	if enc2 := again.Append(nil, version); !bytes.Equal(enc2, enc) {
		t.Fatalf("encoding is not stable:\n% x\n% x", enc, enc2)
	}
	var clone Packet
	switch p := p.(type) {
	case *Publish:
		clone = p.Clone()
	case *Connect:
		clone = p.Clone()
	}
	if clone != nil && !reflect.DeepEqual(normalise(clone), normalise(p)) {
		t.Fatalf("clone differs:\n got %+v\nwant %+v", clone, p)
	}
}

// fuzzDecoder runs one decode entry point on a body of any bytes, the fixed
// header's flag nibble taken from the input and the type fixed.
func fuzzDecoder(f *testing.F, typ Type, p Packet) {
	for _, w := range seedWires() {
		if Type(w[0]>>4) == typ {
			h, _ := ReadHeader(w, 0)
			f.Add(w[0]&0x0F, w[h.HeaderLen:], uint8(Version5))
			f.Add(w[0]&0x0F, w[h.HeaderLen:], uint8(Version311))
		}
	}
	f.Fuzz(func(t *testing.T, flags uint8, body []byte, version uint8) {
		h := Header{Type: typ, Flags: flags & 0x0F, Remaining: len(body), HeaderLen: headerLen(len(body))}
		if err := p.Decode(h, body, version); err != nil {
			if AsError(err) == nil {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		checkRoundTrip(t, p, version)
	})
}

func FuzzConnectDecode(f *testing.F)     { fuzzDecoder(f, TypeConnect, &Connect{}) }
func FuzzConnackDecode(f *testing.F)     { fuzzDecoder(f, TypeConnack, &Connack{}) }
func FuzzPublishDecode(f *testing.F)     { fuzzDecoder(f, TypePublish, &Publish{}) }
func FuzzPubackDecode(f *testing.F)      { fuzzDecoder(f, TypePuback, &Ack{}) }
func FuzzPubrelDecode(f *testing.F)      { fuzzDecoder(f, TypePubrel, &Ack{}) }
func FuzzSubscribeDecode(f *testing.F)   { fuzzDecoder(f, TypeSubscribe, &Subscribe{}) }
func FuzzSubackDecode(f *testing.F)      { fuzzDecoder(f, TypeSuback, &Suback{}) }
func FuzzUnsubscribeDecode(f *testing.F) { fuzzDecoder(f, TypeUnsubscribe, &Unsubscribe{}) }
func FuzzUnsubackDecode(f *testing.F)    { fuzzDecoder(f, TypeUnsuback, &Unsuback{}) }
func FuzzDisconnectDecode(f *testing.F)  { fuzzDecoder(f, TypeDisconnect, &Disconnect{}) }
func FuzzAuthDecode(f *testing.F)        { fuzzDecoder(f, TypeAuth, &Auth{}) }
