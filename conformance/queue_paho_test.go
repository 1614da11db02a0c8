package conformance

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
)

// TestQueuePahoGolangWorkerAcksOnTheResponseTopic: a worker written with
// paho.golang takes jobs from $saguin/queue/jobs and acks each on the
// Response Topic it was given, echoing the Correlation Data; every job is
// offered once, and acknowledged jobs never come back.
func TestQueuePahoGolangWorkerAcksOnTheResponseTopic(t *testing.T) {
	b := startQueueBroker(t, queueChannel)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	conn, err := net.Dial("tcp", b.addr)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 16)
	var c *paho.Client
	c = paho.NewClient(paho.ClientConfig{Conn: conn, OnPublishReceived: []func(paho.PublishReceived) (bool, error){
		func(pr paho.PublishReceived) (bool, error) {
			p := pr.Packet
			got <- string(p.Payload)
			go c.Publish(ctx, &paho.Publish{QoS: 1, Topic: p.Properties.ResponseTopic, Payload: []byte("ack"),
				Properties: &paho.PublishProperties{CorrelationData: p.Properties.CorrelationData}})
			return true, nil
		}}})
	if _, err := c.Connect(ctx, &paho.Connect{ClientID: "paho-worker", CleanStart: true, KeepAlive: 30}); err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(&paho.Disconnect{})
	ack, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: queueForm, QoS: 1}}})
	if err != nil || len(ack.Reasons) != 1 || ack.Reasons[0] != 1 {
		t.Fatalf("SUBACK %+v, %v", ack, err)
	}
	pub := queueProducer(t, b.addr)
	want := []string{"j1", "j2", "j3", "j4"}
	for i, j := range want {
		pub.publishQoS1("work/1/inspect", []byte(j), uint16(i+1))
	}
	for _, j := range want {
		select {
		case p := <-got:
			if p != j {
				t.Fatalf("offered %q, want %q: offers go out in offset order", p, j)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no offer of %s", j)
		}
	}
	// Past the 1 s visibility timeout: an acknowledged job never comes back.
	select {
	case p := <-got:
		t.Fatalf("%q offered again after its ack", p)
	case <-time.After(1500 * time.Millisecond):
	}
}
