package netloop

import (
	"bytes"
	"crypto/tls"
	"io"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/saguin-edge/saguin/netloop/certs/certstest"
)

// chunkConn is a socket that returns its bytes in the chunks given.
type chunkConn struct {
	net.Conn
	chunks [][]byte
}

func (c *chunkConn) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	if c.chunks[0] = c.chunks[0][n:]; len(c.chunks[0]) == 0 {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

// record is a TLS record of type 23 with a body of n bytes of b.
func record(n int, b byte) []byte {
	return append([]byte{23, 3, 3, byte(n >> 8), byte(n)}, bytes.Repeat([]byte{b}, n)...)
}

// The reader crypto/tls reads from hands out every byte the socket gave, in
// order, and never a byte past the end of the record it belongs to -
// whatever the socket's chunks and the reads' sizes - so crypto/tls holds
// nothing past the record it decrypts; it holds nothing itself once a
// record's last byte has gone, and gives its buffer back then.
func TestRecordReaderHandsOutNoBytePastTheRecordsEnd(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var stream []byte
		var ends []int // offsets at which a record ends
		for i := range 1 + rng.IntN(6) {
			stream = append(stream, record(rng.IntN(3000), byte('a'+i))...)
			ends = append(ends, len(stream))
		}
		var chunks [][]byte
		for rest := stream; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(5000))
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		rr := &recordReader{Conn: &chunkConn{chunks: chunks}}
		var got []byte
		for {
			p := make([]byte, 1+rng.IntN(6000))
			n, err := rr.Read(p)
			for _, end := range ends {
				if len(got) < end && len(got)+n > end {
					t.Fatalf("round %d: a read of %d at %d crossed the record end at %d", round, n, len(got), end)
				}
			}
			got = append(got, p[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got, stream) {
			t.Fatalf("round %d: %d bytes out of %d, or not in order", round, len(got), len(stream))
		}
		if rr.held() || rr.buf != nil {
			t.Fatalf("round %d: the reader holds its buffer after the last byte", round)
		}
	}
}

// Through a real crypto/tls server on a recordReader, once the plaintext of
// the client's last record has been read, with the buffer not filled,
// nothing is held: the state in which the reader parks.
func TestTLSOverARecordReaderHoldsNothingOnceEveryRecordIsRead(t *testing.T) {
	ca := certstest.NewCA(t, "ca")
	leaf := ca.Server(t)
	server, client := net.Pipe()
	rr := &recordReader{Conn: server}
	ts := tls.Server(rr, &tls.Config{Certificates: []tls.Certificate{leaf.TLS}})
	done := make(chan error, 1)
	go func() {
		tc := tls.Client(client, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"})
		if err := tc.Handshake(); err != nil {
			done <- err
			return
		}
		_, err := tc.Write([]byte("first"))
		if err == nil {
			_, err = tc.Write([]byte("second"))
		}
		done <- err
	}()
	if err := ts.Handshake(); err != nil {
		t.Fatal(err)
	}
	fill := &fillReader{r: ts}
	buf := make([]byte, 64)
	var got []byte
	for string(got) != "firstsecond" {
		n, err := fill.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if fill.full || rr.held() {
		t.Fatalf("after the last record: full %v, held %v; want nothing buffered", fill.full, rr.held())
	}
}
