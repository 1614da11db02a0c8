package conformance

import (
	"encoding/binary"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// deafen shrinks a client's receive buffer so that the broker meets a full
// socket quickly, and then the test never reads from it.
func deafen(t *testing.T, c *raw) {
	t.Helper()
	if tc, ok := c.nc.(*net.TCPConn); ok {
		if err := tc.SetReadBuffer(4096); err != nil {
			t.Fatal(err)
		}
	}
}

func TestClientTakingNoBytesIsDisconnectedAfterWriteTimeout(t *testing.T) {
	b := startBroker(t, brokerConfig{Limits: "write_timeout: 500ms"})
	deaf := dialRaw(t, b.addr, codec.Version5)
	deaf.mustConnect("deaf", nil)
	deaf.subscribe(1, "flood/#", 0)
	deafen(t, deaf)

	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("flooder", nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		payload := make([]byte, 32<<10)
		p := (&codec.Publish{Topic: []byte("flood/x"), Payload: payload}).Append(nil, codec.Version5)
		for {
			select {
			case <-stop:
				return
			default:
			}
			pub.nc.SetWriteDeadline(time.Now().Add(waitLong))
			if _, err := pub.nc.Write(p); err != nil {
				return
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	if b.log.wait(regexp.MustCompile(`client_id=deaf .*write_timeout|write_timeout.*client_id=deaf`), waitLong) == "" {
		t.Fatal("the deaf client was not disconnected for limits.write_timeout")
	}
	// Its socket ends once what the kernel held is read.
	deaf.expectClosed()
}

// TestDeafSubscriberDoesNotDelayAnotherPublishersPuback is invariant 16: a
// subscriber that stops reading, and is never hung up on (write_timeout
// none), does not hold a publisher's acknowledgement. Every PUBACK arrives
// while the deaf subscriber's socket stays full.
func TestDeafSubscriberDoesNotDelayAnotherPublishersPuback(t *testing.T) {
	b := startBroker(t, brokerConfig{Limits: "write_timeout: none"})
	deaf := dialRaw(t, b.addr, codec.Version5)
	deaf.mustConnect("deaf", nil)
	deaf.subscribe(1, "inv16/#", 1)
	deafen(t, deaf)
	listener := dialRaw(t, b.addr, codec.Version5)
	listener.mustConnect("listener", nil)
	listener.subscribe(1, "inv16/#", 0)

	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("publisher", nil)
	payload := make([]byte, 4<<10)
	const n = 2000 // 8 MiB towards a socket that takes a few KiB
	var worst time.Duration
	received := make(chan struct{})
	go func() {
		defer close(received)
		for i := 0; i < n; i++ {
			if _, _, err := listener.next(waitLong); err != nil {
				return
			}
		}
	}()
	for i := 1; i <= n; i++ {
		start := time.Now()
		pub.publish("inv16/x", payload, 1, uint16(i))
		if code := pub.expectPuback(uint16(i)); code != codec.Success {
			t.Fatalf("PUBACK %d: 0x%02x", i, byte(code))
		}
		worst = max(worst, time.Since(start))
	}
	<-received
	t.Logf("%d QoS 1 publishes beside a deaf subscriber: slowest PUBACK %s", n, worst)
}

func TestDeliveriesKeepThePublishersOrder(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := target(t)
		sub := dialRaw(t, addr, v)
		sub.mustConnect("ordered-sub", nil)
		sub.subscribe(1, "order/#", 1)
		pub := dialRaw(t, addr, v)
		pub.mustConnect("ordered-pub", nil)
		const n = 500
		for i := 0; i < n; i++ {
			var seq [4]byte
			binary.BigEndian.PutUint32(seq[:], uint32(i))
			pub.publish("order/x", seq[:], byte(i%2), uint16(i+1))
		}
		for i := 0; i < n; i++ {
			p := sub.expectPublish()
			if got := binary.BigEndian.Uint32(p.Payload); got != uint32(i) {
				t.Fatalf("delivery %d carries %d", i, got)
			}
			if p.QoS == 1 {
				a := &codec.Ack{Type: codec.TypePuback, PacketID: p.PacketID}
				sub.send(a.Append(nil, v))
			}
		}
	})
}

func TestPacketAboveMaximumPacketSizeIsRefused(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		b := startBroker(t, brokerConfig{Limits: "max_message_size: 1KiB\nmax_connect_size: 1KiB\nsession_queue_bytes: 1MiB"})
		c := dialRaw(t, b.addr, v)
		c.mustConnect("big", nil)
		c.publish("big/x", make([]byte, 2048), 1, 1)
		c.expectEnd(codec.PacketTooLarge)
	})
}

func TestPublishWithBothQoSBitsIsMalformed(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		c := dialRaw(t, target(t), v)
		c.mustConnect("qos3", nil)
		c.send([]byte{0x36, 5, 0, 1, 'a', 0, 1})
		c.expectEnd(codec.MalformedPacket)
	})
}

func TestPublishWithAWildcardInItsTopicIsAProtocolError(t *testing.T) {
	c := dialRaw(t, target(t), codec.Version5)
	c.mustConnect("wild", nil)
	c.send([]byte{0x30, 6, 0, 3, 'a', '/', '+', 0})
	c.expectDisconnect(codec.ProtocolError)
}

func TestTopicAliasAboveTheMaximumIsRefused(t *testing.T) {
	c := dialRaw(t, target(t), codec.Version5)
	c.mustConnect("alias", nil)
	p := &codec.Publish{Topic: []byte("a/b"), Payload: []byte("x")}
	p.Properties.TopicAlias = 17
	p.Properties.Present.Set(codec.PropTopicAlias)
	c.send(p.Append(nil, codec.Version5))
	c.expectDisconnect(codec.TopicAliasInvalid)
}

func TestTopicAliasNeverRegisteredIsAProtocolError(t *testing.T) {
	c := dialRaw(t, target(t), codec.Version5)
	c.mustConnect("alias2", nil)
	p := &codec.Publish{Payload: []byte("x")}
	p.Properties.TopicAlias = 3
	p.Properties.Present.Set(codec.PropTopicAlias)
	c.send(p.Append(nil, codec.Version5))
	c.expectDisconnect(codec.ProtocolError)
}

func TestTopicAliasRegisteredThenUsedReachesTheSubscriber(t *testing.T) {
	addr := target(t)
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect("alias-sub", nil)
	sub.subscribe(1, "aliased/#", 0)
	c := dialRaw(t, addr, codec.Version5)
	c.mustConnect("alias3", nil)
	first := &codec.Publish{Topic: []byte("aliased/topic"), Payload: []byte("1")}
	first.Properties.TopicAlias = 16
	first.Properties.Present.Set(codec.PropTopicAlias)
	c.send(first.Append(nil, codec.Version5))
	second := &codec.Publish{Payload: []byte("2")}
	second.Properties.TopicAlias = 16
	second.Properties.Present.Set(codec.PropTopicAlias)
	c.send(second.Append(nil, codec.Version5))
	for _, want := range []string{"1", "2"} {
		p := sub.expectPublish()
		if string(p.Topic) != "aliased/topic" || string(p.Payload) != want || p.Properties.Present.Has(codec.PropTopicAlias) {
			t.Fatalf("got %q %q alias present %v, want the full topic and no alias", p.Topic, p.Payload, p.Properties.Present.Has(codec.PropTopicAlias))
		}
	}
}

func TestMoreUnfinishedQoS2ExchangesThanReceiveMaximumIsRefused(t *testing.T) {
	// Sagüin refuses an exchange past broker.qos2.max_inflight_per_client
	// (default 20) on its PUBREC before Receive Maximum is reached, so the
	// broker under test holds as many unfinished exchanges as MQTT allows.
	addr := *brokerFlag
	if addr == "" {
		addr = startBroker(t, brokerConfig{Broker: "qos2:\n  max_inflight_per_client: 65535"}).addr
	}
	c := dialRaw(t, addr, codec.Version5)
	ack := c.mustConnect("qos2", nil)
	limit := int(ack.Properties.ReceiveMaximum)
	if !ack.Properties.Present.Has(codec.PropReceiveMaximum) {
		limit = 65535
	}
	for i := 1; i <= limit; i++ {
		c.publish("q2/x", []byte("x"), 2, uint16(i))
		if h, _ := c.read(); h.Type != codec.TypePubrec {
			t.Fatalf("publish %d: want PUBREC, got %s", i, h.Type)
		}
	}
	c.publish("q2/x", []byte("x"), 2, uint16(limit+1))
	c.expectDisconnect(codec.ReceiveMaximumExceeded)
}

func TestQoS2PublishIsReleasedWithPubcomp(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := target(t)
		sub := dialRaw(t, addr, v)
		sub.mustConnect("q2-sub", nil)
		sub.subscribe(1, "q2e/#", 2)
		c := dialRaw(t, addr, v)
		c.mustConnect("q2-pub", nil)
		c.publish("q2e/x", []byte("once"), 2, 9)
		if h, _ := c.read(); h.Type != codec.TypePubrec {
			t.Fatalf("want PUBREC, got %s", h.Type)
		}
		rel := &codec.Ack{Type: codec.TypePubrel, PacketID: 9}
		c.send(rel.Append(nil, v))
		if h, _ := c.read(); h.Type != codec.TypePubcomp {
			t.Fatalf("want PUBCOMP, got %s", h.Type)
		}
		if p := sub.expectPublish(); string(p.Payload) != "once" || p.QoS != 2 {
			t.Fatalf("got %q at QoS %d", p.Payload, p.QoS)
		}
	})
}

func TestPublishPropertiesReachTheSubscriberUnaltered(t *testing.T) {
	addr := target(t)
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect("props-sub", nil)
	sub.subscribe(1, "props/#", 1)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect("props-pub", nil)
	p := &codec.Publish{QoS: 1, PacketID: 1, Topic: []byte("props/x"), Payload: []byte("{}")}
	p.Properties.ContentType = []byte("application/json")
	p.Properties.Present.Set(codec.PropContentType)
	p.Properties.CorrelationData = []byte{1, 2, 3}
	p.Properties.Present.Set(codec.PropCorrelationData)
	p.Properties.AddUser([]byte("k"), []byte("1"))
	p.Properties.AddUser([]byte("k"), []byte("2"))
	p.Properties.AddUser([]byte("a"), []byte("3"))
	pub.send(p.Append(nil, codec.Version5))
	pub.expectPuback(1)
	got := sub.expectPublish()
	pr := &got.Properties
	if string(pr.ContentType) != "application/json" || string(pr.CorrelationData) != "\x01\x02\x03" {
		t.Fatalf("content type %q correlation % x", pr.ContentType, pr.CorrelationData)
	}
	var users []string
	for _, u := range pr.User {
		users = append(users, string(u.Key)+"="+string(u.Value))
	}
	if strings.Join(users, ",") != "k=1,k=2,a=3" {
		t.Fatalf("user properties %v, want k=1,k=2,a=3 in order", users)
	}
}

// TestQoS0FloodAtADeafSubscriberCostsBoundedMemory is invariant 13 at a
// subscriber that stops reading and is never hung up on: 128 MiB of QoS 0
// published at it is shed past its queue bound, not buffered.
func TestQoS0FloodAtADeafSubscriberCostsBoundedMemory(t *testing.T) {
	b := startBroker(t, brokerConfig{Limits: "write_timeout: none"})
	deaf := dialRaw(t, b.addr, codec.Version5)
	deaf.mustConnect("deaf", nil)
	deaf.subscribe(1, "flood/#", 0)
	deafen(t, deaf)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("flooder", nil)
	p := (&codec.Publish{Topic: []byte("flood/x"), Payload: make([]byte, 32<<10)}).Append(nil, codec.Version5)
	for i := 0; i < 4096; i++ {
		pub.send(p)
	}
	// A PINGREQ answered means every publish before it was handled.
	pub.send([]byte{0xC0, 0})
	if h, _ := pub.read(); h.Type != codec.TypePingresp {
		t.Fatalf("want PINGRESP, got %s", h.Type)
	}
	rss := procRSS(t, b.cmd.Process.Pid)
	t.Logf("broker RSS after 128 MiB at a deaf subscriber: %.1f MiB", float64(rss)/(1<<20))
	if rss > 96<<20 {
		t.Fatalf("broker RSS %.1f MiB: the flood was buffered, not shed", float64(rss)/(1<<20))
	}
}

func TestQoS2DeliveryIsReleasedByTheBroker(t *testing.T) {
	addr := target(t)
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect("q2-out-sub", nil)
	sub.subscribe(1, "q2o/#", 2)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect("q2-out-pub", nil)
	pub.publish("q2o/x", []byte("x"), 2, 1)
	// RFC 0003 "Exactly once": the message is delivered once the publisher
	// releases it.
	if h, _ := pub.read(); h.Type != codec.TypePubrec {
		t.Fatalf("want PUBREC, got %s", h.Type)
	}
	pub.send((&codec.Ack{Type: codec.TypePubrel, PacketID: 1}).Append(nil, codec.Version5))
	p := sub.expectPublish()
	if p.QoS != 2 {
		t.Fatalf("delivered at QoS %d, want 2", p.QoS)
	}
	sub.send((&codec.Ack{Type: codec.TypePubrec, PacketID: p.PacketID}).Append(nil, codec.Version5))
	h, body := sub.read()
	var rel codec.Ack
	if err := rel.Decode(h, body, codec.Version5); err != nil || h.Type != codec.TypePubrel || rel.PacketID != p.PacketID {
		t.Fatalf("want PUBREL %d, got %s %+v %v", p.PacketID, h.Type, rel, err)
	}
	sub.send((&codec.Ack{Type: codec.TypePubcomp, PacketID: p.PacketID}).Append(nil, codec.Version5))
}

// TestDeliveriesStayInsideTheSubscribersReceiveMaximum: a subscriber that
// advertises Receive Maximum 2 has at most two QoS 1 deliveries unacknowledged;
// the third is written once it acknowledges one.
func TestDeliveriesStayInsideTheSubscribersReceiveMaximum(t *testing.T) {
	addr := target(t)
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect("window", func(c *codec.Connect) {
		c.Properties.ReceiveMaximum = 2
		c.Properties.Present.Set(codec.PropReceiveMaximum)
	})
	sub.subscribe(1, "win/#", 1)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect("window-pub", nil)
	for i := 1; i <= 3; i++ {
		pub.publish("win/x", []byte{byte(i)}, 1, uint16(i))
		pub.expectPuback(uint16(i))
	}
	first := sub.expectPublish()
	sub.expectPublish()
	// The third was queued before this PINGREQ was sent (its PUBACK came
	// back first), so a PINGRESP ahead of it shows the window held it.
	sub.send([]byte{0xC0, 0})
	if h, _ := sub.read(); h.Type != codec.TypePingresp {
		t.Fatalf("got %s with two deliveries unacknowledged, want PINGRESP", h.Type)
	}
	sub.send((&codec.Ack{Type: codec.TypePuback, PacketID: first.PacketID}).Append(nil, codec.Version5))
	if third := sub.expectPublish(); third.Payload[0] != 3 {
		t.Fatalf("got payload %d, want the third", third.Payload[0])
	}
}

func TestDeliveryCarriesTheSubscriptionIdentifier(t *testing.T) {
	addr := target(t)
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect("subid", nil)
	s := &codec.Subscribe{PacketID: 1, Subscriptions: []codec.Subscription{{Filter: []byte("sid/#"), QoS: 1}}}
	s.Properties.SubscriptionIDs = []uint32{42}
	s.Properties.Present.Set(codec.PropSubscriptionID)
	sub.send(s.Append(nil, codec.Version5))
	if h, _ := sub.read(); h.Type != codec.TypeSuback {
		t.Fatalf("want SUBACK, got %s", h.Type)
	}
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect("subid-pub", nil)
	pub.publish("sid/x", []byte("x"), 0, 0)
	p := sub.expectPublish()
	if ids := p.Properties.SubscriptionIDs; len(ids) != 1 || ids[0] != 42 {
		t.Fatalf("Subscription Identifiers %v, want [42]", ids)
	}
}

func TestRetainedMessageCarriesWhatRemainsOfItsExpiry(t *testing.T) {
	addr := target(t)
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect("exp-pub", nil)
	p := &codec.Publish{QoS: 1, PacketID: 1, Retain: true, Topic: []byte("expiry/x"), Payload: []byte("soon")}
	p.Properties.MessageExpiry = 100
	p.Properties.Present.Set(codec.PropMessageExpiry)
	pub.send(p.Append(nil, codec.Version5))
	pub.expectPuback(1)
	sub := dialRaw(t, addr, codec.Version5)
	sub.mustConnect("exp-sub", nil)
	sub.subscribe(1, "expiry/#", 1)
	got := sub.expectPublish()
	if !got.Retain || !got.Properties.Present.Has(codec.PropMessageExpiry) || got.Properties.MessageExpiry == 0 || got.Properties.MessageExpiry > 100 {
		t.Fatalf("retain %v expiry %d (present %v), want the retained value with at most 100 s left", got.Retain, got.Properties.MessageExpiry, got.Properties.Present.Has(codec.PropMessageExpiry))
	}
}
