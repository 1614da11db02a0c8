package conformance

import (
	"bufio"
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
)

// needTool skips when a Debian tool the test drives is missing (make
// test-deps installs it).
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed (make test-deps)", name)
	}
	return p
}

// TestMosquittoSubReceivesWhatMosquittoPubPublishes is the README's demo: a
// stock subscriber on '#' sees a stock publisher's message, on both protocols.
func TestMosquittoSubReceivesWhatMosquittoPubPublishes(t *testing.T) {
	sub := needTool(t, "mosquitto_sub")
	pub := needTool(t, "mosquitto_pub")
	addr := target(t)
	host, port := hostPort(t, addr)
	for _, v := range []string{"311", "5"} {
		t.Run("V"+v, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			topic := "demo/" + v + "/b"
			s := exec.CommandContext(ctx, sub, "-V", v, "-h", host, "-p", port, "-t", "demo/"+v+"/#", "-v", "-C", "1", "-q", "1")
			out, err := s.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Start(); err != nil {
				t.Fatal(err)
			}
			defer s.Wait()
			lines := make(chan string, 1)
			go func() {
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			// The subscription is in place once the broker says so; publish
			// until the subscriber prints, since a publish before its SUBACK
			// reaches nobody.
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				if err := exec.CommandContext(ctx, pub, "-V", v, "-h", host, "-p", port, "-t", topic, "-m", "hi", "-q", "1").Run(); err != nil {
					t.Fatalf("mosquitto_pub: %v", err)
				}
				select {
				case line, ok := <-lines:
					if !ok {
						t.Fatal("mosquitto_sub ended without printing")
					}
					if strings.TrimSpace(line) != topic+" hi" {
						t.Fatalf("mosquitto_sub printed %q, want %q", line, topic+" hi")
					}
					return
				case <-tick.C:
				case <-ctx.Done():
					t.Fatal("mosquitto_sub printed nothing")
				}
			}
		})
	}
}

// TestMosquittoClientsReadTheRefusals drives the refusals through the stock
// Debian clients: what they print is what an operator sees.
func TestMosquittoClientsReadTheRefusals(t *testing.T) {
	pub := needTool(t, "mosquitto_pub")
	b := startBroker(t, brokerConfig{MQTT: `min_protocol_version: "5"`, Limits: "max_client_id_length: 23"})
	host, port := hostPort(t, b.addr)
	run := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		defer cancel()
		out, _ := exec.CommandContext(ctx, pub, append([]string{"-h", host, "-p", port, "-t", "x", "-m", "y"}, args...)...).CombinedOutput()
		return strings.ToLower(string(out))
	}
	if out := run("-V", "311"); !strings.Contains(out, "unacceptable protocol version") {
		t.Errorf("3.1.1 below min_protocol_version 5: mosquitto_pub printed %q", out)
	}
	if out := run("-V", "5", "-i", strings.Repeat("x", 24)); !strings.Contains(out, "client identifier not valid") {
		t.Errorf("a 24-byte id over max_client_id_length 23: mosquitto_pub printed %q", out)
	}
	if out := run("-V", "5", "-i", strings.Repeat("x", 23)); strings.Contains(out, "error") {
		t.Errorf("a 23-byte id: mosquitto_pub printed %q", out)
	}
}

// TestPahoPublishReachesPahoSubscriber is the first delivery path through an
// independent MQTT 5 client library on both ends.
func TestPahoPublishReachesPahoSubscriber(t *testing.T) {
	addr := target(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	got := make(chan *paho.Publish, 1)
	sc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	sub := paho.NewClient(paho.ClientConfig{Conn: sc, OnPublishReceived: []func(paho.PublishReceived) (bool, error){
		func(pr paho.PublishReceived) (bool, error) { got <- pr.Packet; return true, nil },
	}})
	if _, err := sub.Connect(ctx, &paho.Connect{ClientID: "paho-sub", CleanStart: true, KeepAlive: 30}); err != nil {
		t.Fatal(err)
	}
	defer sub.Disconnect(&paho.Disconnect{})
	if _, err := sub.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "paho/#", QoS: 1}}}); err != nil {
		t.Fatal(err)
	}
	pc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p := paho.NewClient(paho.ClientConfig{Conn: pc})
	if _, err := p.Connect(ctx, &paho.Connect{ClientID: "paho-pub", CleanStart: true, KeepAlive: 30}); err != nil {
		t.Fatal(err)
	}
	defer p.Disconnect(&paho.Disconnect{})
	resp, err := p.Publish(ctx, &paho.Publish{Topic: "paho/x", QoS: 1, Payload: []byte("hello")})
	if err != nil {
		t.Fatal(err)
	}
	if resp.ReasonCode != 0 {
		t.Fatalf("PUBACK 0x%02x", resp.ReasonCode)
	}
	select {
	case m := <-got:
		if m.Topic != "paho/x" || string(m.Payload) != "hello" || m.QoS != 1 {
			t.Fatalf("got %s %q at QoS %d", m.Topic, m.Payload, m.QoS)
		}
	case <-ctx.Done():
		t.Fatal("nothing delivered")
	}
}
