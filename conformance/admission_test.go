package conformance

import (
	"sync"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// RFC 0002 "How long a socket may wait to send CONNECT", "The largest CONNECT
// before authentication" and "How fast connections are accepted".

func TestConnectBeyondMaxConnectionsIsAnsweredServerBusy(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		b := startBroker(t, brokerConfig{Limits: "max_connections: 2"})
		dialRaw(t, b.addr, v).mustConnect("a", nil)
		dialRaw(t, b.addr, v).mustConnect("b", nil)
		c := dialRaw(t, b.addr, v)
		ack := c.connect("c", nil)
		want := codec.ServerBusy
		if v == codec.Version311 {
			want = codec.ConnRefusedServerUnavailable
		}
		if ack.ReasonCode != want {
			t.Fatalf("CONNACK 0x%02x, want 0x%02x", byte(ack.ReasonCode), byte(want))
		}
		c.expectClosed()
	})
}

func TestSocketArrivingWithTheOverflowBudgetFullIsClosedWithNothingWritten(t *testing.T) {
	// max_connections 1 makes the budget min(1, 32) = 1 place.
	b := startBroker(t, brokerConfig{Limits: "max_connections: 1"})
	dialRaw(t, b.addr, codec.Version5).mustConnect("a", nil)
	inBudget := dialRaw(t, b.addr, codec.Version5)
	refused := dialRaw(t, b.addr, codec.Version5)
	refused.send(refused.connectPacket("refused", nil))
	inBudget.send(inBudget.connectPacket("waiting", nil))
	if ack := inBudget.connack(); ack.ReasonCode != codec.ServerBusy {
		t.Fatalf("the socket holding the budget's place: CONNACK 0x%02x, want 0x89", byte(ack.ReasonCode))
	}
	refused.expectClosedSilently()
}

func TestOverflowSocketSendingNothingIsClosedWithNothingWritten(t *testing.T) {
	// connect_timeout is far above the wait so that only the 100 ms overflow
	// bound can close the socket inside this test's wait.
	b := startBroker(t, brokerConfig{Limits: "max_connections: 1\nconnect_timeout: 60s"})
	dialRaw(t, b.addr, codec.Version5).mustConnect("a", nil)
	dialRaw(t, b.addr, codec.Version5).expectClosedSilently()
}

func TestSlotIsGivenBackAsTheClientsDisconnectIsRead(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		b := startBroker(t, brokerConfig{Limits: "max_connections: 1"})
		a := dialRaw(t, b.addr, v)
		a.mustConnect("a", nil)
		d := &codec.Disconnect{}
		a.send(d.Append(nil, v))
		// A client that hung up and connects again at once finds its slot.
		dialRaw(t, b.addr, v).mustConnect("a-again", nil)
	})
}

func TestSlotIsGivenBackWhenARefusalIsDecided(t *testing.T) {
	b := startBroker(t, brokerConfig{Limits: "max_connections: 1"})
	r := dialRaw(t, b.addr, codec.Version5)
	if ack := r.connect("", func(c *codec.Connect) { c.CleanStart = false }); ack.ReasonCode != codec.ClientIdentifierNotValid {
		t.Fatalf("CONNACK 0x%02x, want 0x85", byte(ack.ReasonCode))
	}
	dialRaw(t, b.addr, codec.Version5).mustConnect("next", nil)
}

func TestSocketSendingNoConnectIsClosedAfterConnectTimeout(t *testing.T) {
	b := startBroker(t, brokerConfig{Limits: "max_connections: 1\nconnect_timeout: 1s"})
	dialRaw(t, b.addr, codec.Version5).expectClosedSilently()
	// Its slot came back with it.
	dialRaw(t, b.addr, codec.Version5).mustConnect("after", nil)
}

func TestConnectLargerThanMaxConnectSizeIsRefusedOnItsDeclaredLength(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		b := startBroker(t, brokerConfig{Limits: "max_connect_size: 1KiB"})
		c := dialRaw(t, b.addr, v)
		pkt := c.connectPacket("big", func(p *codec.Connect) {
			p.UsernameFlag, p.Username = true, []byte("u")
			p.PasswordFlag, p.Password = true, make([]byte, 4096)
		})
		// Only the fixed header and the protocol level are sent: the refusal
		// comes from the declared length, before the body is read.
		c.send(pkt[:12])
		if v == codec.Version5 {
			if ack := c.connack(); ack.ReasonCode != codec.PacketTooLarge {
				t.Fatalf("CONNACK 0x%02x, want 0x95", byte(ack.ReasonCode))
			}
			c.expectClosed()
			return
		}
		c.expectClosedSilently()
	})
}

func TestConnectionsOverMaxConnectRateWaitRatherThanBeingRefused(t *testing.T) {
	// Rate 2 a second with bursts of 4: eight connections take about two
	// seconds to be accepted, and every one of them is.
	b := startBroker(t, brokerConfig{Limits: "max_connect_rate: 2"})
	start := time.Now()
	var wg sync.WaitGroup
	codes := make([]codec.ReasonCode, 8)
	for i := range codes {
		c := dialRaw(t, b.addr, codec.Version5)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.send(c.connectPacket("rate-"+string(rune('a'+i)), nil))
			h, body, err := c.next(waitLong)
			if err != nil || h.Type != codec.TypeConnack {
				codes[i] = 0xFF
				return
			}
			var ack codec.Connack
			ack.Decode(h, body, codec.Version5)
			codes[i] = ack.ReasonCode
		}()
	}
	wg.Wait()
	for i, code := range codes {
		if code != codec.Success {
			t.Fatalf("connection %d: CONNACK 0x%02x, want every connection admitted", i, byte(code))
		}
	}
	if el := time.Since(start); el < time.Second {
		t.Fatalf("eight connections admitted in %s: the rate did not pace them", el)
	}
}

// TestOversizedConnectSentWholeStillReadsItsRefusal: a client that writes its
// whole oversized CONNECT before reading is still able to read the 0x95.
func TestOversizedConnectSentWholeStillReadsItsRefusal(t *testing.T) {
	b := startBroker(t, brokerConfig{Limits: "max_connect_size: 1KiB"})
	c := dialRaw(t, b.addr, codec.Version5)
	c.send(c.connectPacket("big", func(p *codec.Connect) {
		p.UsernameFlag, p.Username = true, []byte("u")
		p.PasswordFlag, p.Password = true, make([]byte, 60000)
	}))
	if ack := c.connack(); ack.ReasonCode != codec.PacketTooLarge {
		t.Fatalf("CONNACK 0x%02x, want 0x95", byte(ack.ReasonCode))
	}
	c.expectClosed()
}
