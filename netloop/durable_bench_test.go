package netloop_test

import (
	"bufio"
	"fmt"
	"net"
	"testing"

	"github.com/saguin-edge/saguin/broker"
	"github.com/saguin-edge/saguin/codec"
)

// BenchmarkDurableQoS1RoundTripSQLite is N publishers each publishing QoS 1
// and waiting for the PUBACK before the next, to a topic a persistent
// session (Clean Start 0, Session Expiry 1 h) holds at QoS 1 and
// acknowledges: every publish is appended to the broadcast log of a sqlite
// provider before it is answered. store=loop writes on the event loop that
// read the PUBLISH (the tree before the asynchronous answer path);
// store=off-loop is the broker as cmd/saguin wires it on sqlite, where the
// publishes waiting together share a group commit. An op is one publish
// answered; records/commit is what the sqlite writer's group commits held.
func BenchmarkDurableQoS1RoundTripSQLite(b *testing.B) {
	for _, offLoop := range []bool{false, true} {
		for _, pubs := range []int{1, 8, 32} {
			where := "loop"
			if offLoop {
				where = "off-loop"
			}
			b.Run(fmt.Sprintf("store=%s/publishers=%d", where, pubs), func(b *testing.B) {
				benchDurableRoundTrip(b, offLoop, pubs)
			})
		}
	}
}

func benchDurableRoundTrip(b *testing.B, offLoop bool, pubs int) {
	p, addr := serveSQLite(b, broker.Options{SessionsWaitOnDisk: offLoop, RetainedWaitOnDisk: offLoop})

	sub := benchConnectWith(b, addr, &codec.Connect{Version: codec.Version5, ClientID: []byte("durable-sub"),
		Properties: codec.Properties{SessionExpiry: 3600, Present: 1 << codec.PropSessionExpiry}})
	sub.subscribe(b, "durable/#", 1)
	go func() {
		var buf []byte
		for {
			t, body, err := sub.readPacket(buf)
			buf = body
			if err != nil {
				return
			}
			if t == codec.TypePublish && len(body) >= 2 {
				tl := int(body[0])<<8 | int(body[1])
				id := body[2+tl : 4+tl]
				sub.nc.Write([]byte{0x40, 2, id[0], id[1]})
			}
		}
	}()
	publishers := make([]*benchConn, pubs)
	for i := range publishers {
		publishers[i] = benchConnect(b, addr, fmt.Sprintf("durable-pub-%d", i))
	}
	commits := p.Commits()
	commits0, records0 := commits.Commit.Load(), commits.CommittedRecords.Load()
	b.ResetTimer()
	b.ReportMetric(publishQoS1Round(b, publishers, "durable/x"), "msgs/s")
	if n := commits.Commit.Load() - commits0; n > 0 {
		b.ReportMetric(float64(commits.CommittedRecords.Load()-records0)/float64(n), "records/commit")
	}
}

// benchConnectWith is benchConnect sending the CONNECT p.
func benchConnectWith(b *testing.B, addr string, p *codec.Connect) *benchConn {
	b.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { nc.Close() })
	c := &benchConn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10)}
	if _, err := c.nc.Write(p.Append(nil, p.Version)); err != nil {
		b.Fatal(err)
	}
	if t, _, err := c.readPacket(nil); err != nil || t != codec.TypeConnack {
		b.Fatalf("CONNACK: %v %v", t, err)
	}
	return c
}
