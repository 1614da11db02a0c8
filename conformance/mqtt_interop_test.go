package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	pahov3 "github.com/eclipse/paho.mqtt.golang"

	"github.com/saguin-edge/saguin/codec"
)

// Issue 6 item 11: the broker through real client libraries - the Debian
// mosquitto_pub/mosquitto_sub on both protocols, Eclipse Paho for Go (MQTT 5
// paho.golang and 3.1.1 paho.mqtt.golang) and MQTT.js from npm.

// mosquittoSub starts mosquitto_sub with args and returns its output lines.
func mosquittoSub(t *testing.T, ctx context.Context, args ...string) <-chan string {
	t.Helper()
	s := exec.CommandContext(ctx, needTool(t, "mosquitto_sub"), args...)
	out, err := s.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	subProcs.Store(t.Name(), s)
	t.Cleanup(func() { s.Process.Kill(); s.Wait(); subProcs.Delete(t.Name()) })
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return lines
}

// subProcs holds the mosquitto_sub started by each running test, by name.
var subProcs sync.Map

// killSubs kills the test's mosquitto_sub as a power cut would.
func killSubs(t *testing.T) {
	if s, ok := subProcs.Load(t.Name()); ok {
		s.(*exec.Cmd).Process.Kill()
	}
}

func TestMqttMosquittoSubIsSentTheRetainedValueMosquittoPubLeft(t *testing.T) {
	pub := needTool(t, "mosquitto_pub")
	addr := mqttTarget(t)
	host, port := hostPort(t, addr)
	for _, v := range []string{"311", "5"} {
		t.Run("V"+v, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			topic := uniq(t) + "/state"
			if out, err := exec.CommandContext(ctx, pub, "-V", v, "-h", host, "-p", port, "-t", topic, "-m", "on", "-q", "1", "-r").CombinedOutput(); err != nil {
				t.Fatalf("mosquitto_pub: %v %s", err, out)
			}
			// -R would drop stale (retained) messages; -C 1 -v prints the first.
			lines := mosquittoSub(t, ctx, "-V", v, "-h", host, "-p", port, "-t", topic, "-v", "-C", "1", "-q", "1", "-F", "%r %t %p")
			select {
			case line := <-lines:
				if line != "1 "+topic+" on" {
					t.Fatalf("mosquitto_sub printed %q, want %q (retain flag, topic, payload)", line, "1 "+topic+" on")
				}
			case <-ctx.Done():
				t.Fatal("mosquitto_sub printed nothing")
			}
		})
	}
}

func TestMqttMosquittoPubQoS2ReachesMosquittoSubOnce(t *testing.T) {
	pub := needTool(t, "mosquitto_pub")
	addr := mqttTarget(t)
	host, port := hostPort(t, addr)
	for _, v := range []string{"311", "5"} {
		t.Run("V"+v, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			topic := uniq(t)
			lines := mosquittoSub(t, ctx, "-V", v, "-h", host, "-p", port, "-t", topic+"/#", "-q", "2", "-F", "%q %p", "-i", clientID(t, "msub"))
			// The subscriber is in place once a probe published after it arrives.
			for ready := false; !ready; {
				if err := exec.CommandContext(ctx, pub, "-V", v, "-h", host, "-p", port, "-t", topic+"/probe", "-m", "probe", "-q", "0").Run(); err != nil {
					t.Fatal(err)
				}
				select {
				case line := <-lines:
					ready = line == "0 probe"
				case <-time.After(200 * time.Millisecond):
				case <-ctx.Done():
					t.Fatal("mosquitto_sub never subscribed")
				}
			}
			if out, err := exec.CommandContext(ctx, pub, "-V", v, "-h", host, "-p", port, "-t", topic+"/x", "-m", "exactly", "-q", "2").CombinedOutput(); err != nil {
				t.Fatalf("mosquitto_pub -q 2: %v %s", err, out)
			}
			if err := exec.CommandContext(ctx, pub, "-V", v, "-h", host, "-p", port, "-t", topic+"/end", "-m", "end", "-q", "1").Run(); err != nil {
				t.Fatal(err)
			}
			var got []string
			for line := range lines {
				if line == "1 end" {
					break
				}
				if line != "0 probe" {
					got = append(got, line)
				}
			}
			if strings.Join(got, "|") != "2 exactly" {
				t.Fatalf("mosquitto_sub printed %q, want one QoS 2 delivery", got)
			}
		})
	}
}

func TestMqttPahoGolangMQTT5SeesSessionPresentAndWhatItWasOwed(t *testing.T) {
	addr := mqttTarget(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	topic := uniq(t)
	id := clientID(t, "paho5")
	dial := func(got chan *paho.Publish) *paho.Client {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		cfg := paho.ClientConfig{Conn: conn}
		if got != nil {
			cfg.OnPublishReceived = []func(paho.PublishReceived) (bool, error){
				func(pr paho.PublishReceived) (bool, error) { got <- pr.Packet; return true, nil },
			}
		}
		return paho.NewClient(cfg)
	}
	expiry := uint32(60)
	first := dial(nil)
	if _, err := first.Connect(ctx, &paho.Connect{ClientID: id, CleanStart: true, KeepAlive: 30, Properties: &paho.ConnectProperties{SessionExpiryInterval: &expiry}}); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: topic + "/#", QoS: 1}}}); err != nil {
		t.Fatal(err)
	}
	first.Disconnect(&paho.Disconnect{})
	pub := dial(nil)
	if _, err := pub.Connect(ctx, &paho.Connect{ClientID: clientID(t, "pub"), CleanStart: true, KeepAlive: 30}); err != nil {
		t.Fatal(err)
	}
	defer pub.Disconnect(&paho.Disconnect{})
	if _, err := pub.Publish(ctx, &paho.Publish{Topic: topic + "/x", QoS: 1, Payload: []byte("owed"),
		Properties: &paho.PublishProperties{ContentType: "text/plain", User: paho.UserProperties{{Key: "k", Value: "v"}}}}); err != nil {
		t.Fatal(err)
	}
	got := make(chan *paho.Publish, 4)
	back := dial(got)
	ack, err := back.Connect(ctx, &paho.Connect{ClientID: id, CleanStart: false, KeepAlive: 30, Properties: &paho.ConnectProperties{SessionExpiryInterval: &expiry}})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Disconnect(&paho.Disconnect{})
	if !ack.SessionPresent {
		t.Fatal("Paho saw Session Present 0 for a kept session")
	}
	select {
	case m := <-got:
		if string(m.Payload) != "owed" || m.Properties == nil || m.Properties.ContentType != "text/plain" || m.Properties.User.Get("k") != "v" {
			t.Fatalf("Paho got %q with %+v", m.Payload, m.Properties)
		}
	case <-ctx.Done():
		t.Fatal("Paho was not sent what its session was owed")
	}
}

func TestMqttPahoMQTT311ResumesACleanSessionZeroSession(t *testing.T) {
	addr := mqttTarget(t)
	topic := uniq(t)
	id := clientID(t, "paho3")
	got := make(chan pahov3.Message, 4)
	opts := func(clean bool) *pahov3.ClientOptions {
		o := pahov3.NewClientOptions().AddBroker("tcp://" + addr).SetClientID(id).SetCleanSession(clean).
			SetProtocolVersion(4).SetAutoReconnect(false).SetConnectTimeout(waitLong).
			SetDefaultPublishHandler(func(_ pahov3.Client, m pahov3.Message) { got <- m })
		return o
	}
	wait := func(tok pahov3.Token, what string) {
		t.Helper()
		if !tok.WaitTimeout(waitLong) || tok.Error() != nil {
			t.Fatalf("%s: %v", what, tok.Error())
		}
	}
	c := pahov3.NewClient(opts(false))
	wait(c.Connect(), "connect")
	wait(c.Subscribe(topic+"/#", 1, nil), "subscribe")
	c.Disconnect(100)

	p := pahov3.NewClient(pahov3.NewClientOptions().AddBroker("tcp://" + addr).SetClientID(clientID(t, "pub")).SetProtocolVersion(4))
	wait(p.Connect(), "publisher connect")
	wait(p.Publish(topic+"/x", 1, false, "owed"), "publish")
	wait(p.Publish(topic+"/x", 2, false, "exactly"), "publish QoS 2")
	p.Disconnect(100)

	back := pahov3.NewClient(opts(false))
	tok := back.Connect()
	wait(tok, "reconnect")
	defer back.Disconnect(100)
	if !tok.(*pahov3.ConnectToken).SessionPresent() {
		t.Fatal("paho.mqtt.golang saw Session Present 0")
	}
	for _, want := range []string{"owed", "exactly"} {
		select {
		case m := <-got:
			if string(m.Payload()) != want {
				t.Fatalf("got %q, want %q", m.Payload(), want)
			}
		case <-time.After(waitLong):
			t.Fatalf("%q was not delivered to the resumed 3.1.1 session", want)
		}
	}
}

// TestMqttMQTTjsInteroperates runs conformance/interop/interop.js (MQTT.js,
// pinned in package.json/package-lock.json) against the broker: a retained
// value with its properties, a QoS 2 delivery once, a kept session resumed -
// on MQTT 5 and 3.1.1.
func TestMqttMQTTjsInteroperates(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: MQTT.js interoperability not checked")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed: MQTT.js interoperability not checked")
	}
	// npm ci into a copy, so the source tree never holds node_modules.
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "interop.js"} {
		b, err := os.ReadFile(filepath.Join("interop", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Skipf("npm ci failed (no registry?): MQTT.js interoperability not checked: %v\n%s", err, out)
	}
	addr := mqttTarget(t)
	out, err := runNode(ctx, node, dir, "interop.js", addr, uniq(t))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var res map[string]struct {
		Error    string
		Retained struct {
			Granted        []int
			Payload        string
			Retain         bool
			QoS            int
			ContentType    string
			UserProperties map[string]any
		}
		QoS2 []struct {
			Payload string
			QoS     int
		}
		Session struct {
			SessionPresent bool
			Payload        string
			QoS            int
		}
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("interop.js printed %q: %v", out, err)
	}
	for _, v := range []string{"v5", "v4"} {
		t.Run(v, func(t *testing.T) {
			r, ok := res[v]
			if !ok || r.Error != "" {
				t.Fatalf("MQTT.js %s: %s", v, r.Error)
			}
			rt := r.Retained
			if fmt.Sprint(rt.Granted) != "[1]" || rt.Payload != "state" || !rt.Retain || rt.QoS != 1 {
				t.Errorf("retained: %+v, want granted [1], state, RETAIN at QoS 1", rt)
			}
			if v == "v5" && (rt.ContentType != "text/plain" || fmt.Sprint(rt.UserProperties["site"]) != "depot") {
				t.Errorf("retained properties: content type %q user %v", rt.ContentType, rt.UserProperties)
			}
			if len(r.QoS2) != 1 || r.QoS2[0].Payload != "exactly" || r.QoS2[0].QoS != 2 {
				t.Errorf("QoS 2: MQTT.js received %+v, want exactly one at QoS 2", r.QoS2)
			}
			if !r.Session.SessionPresent || r.Session.Payload != "while-away" || r.Session.QoS != 1 {
				t.Errorf("kept session: %+v, want Session Present and the message owed", r.Session)
			}
		})
	}
}

func TestMqttMosquittoSubsWillIsPublishedWhenItDies(t *testing.T) {
	pub := needTool(t, "mosquitto_pub")
	addr := mqttTarget(t)
	host, port := hostPort(t, addr)
	for _, v := range []string{"311", "5"} {
		t.Run("V"+v, func(t *testing.T) {
			var ver byte = codec.Version311
			if v == "5" {
				ver = codec.Version5
			}
			topic := uniq(t)
			w := watcher(t, addr, ver, topic+"/status")
			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			// A retained value on its command topic is printed once it has
			// connected and subscribed: the sign its Will is armed.
			if out, err := exec.CommandContext(ctx, pub, "-V", v, "-h", host, "-p", port, "-t", topic+"/cmd", "-m", "hello", "-q", "1", "-r").CombinedOutput(); err != nil {
				t.Fatalf("mosquitto_pub: %v %s", err, out)
			}
			lines := mosquittoSub(t, ctx, "-V", v, "-h", host, "-p", port, "-t", topic+"/cmd", "-q", "1",
				"--will-topic", topic+"/status", "--will-payload", "gone", "--will-qos", "1")
			select {
			case <-lines:
			case <-ctx.Done():
				t.Fatal("mosquitto_sub never printed the retained value")
			}
			w.expectNothing("a Will before its client died")
			killSubs(t) // SIGKILL: no DISCONNECT
			if p := w.expectPublish(); string(p.Payload) != "gone" || string(p.Topic) != topic+"/status" {
				t.Fatalf("got %s %q, want mosquitto_sub's Will", p.Topic, p.Payload)
			}
		})
	}
}

func TestMqttPahoGolangSharedSubscriptionDeliversEachMessageOnce(t *testing.T) {
	addr := mqttTarget(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	topic := uniq(t)
	got := make(chan string, 32)
	for _, name := range []string{"a", "b"} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c := paho.NewClient(paho.ClientConfig{Conn: conn, OnPublishReceived: []func(paho.PublishReceived) (bool, error){
			func(pr paho.PublishReceived) (bool, error) {
				got <- name + ":" + string(pr.Packet.Payload)
				return true, nil
			},
		}})
		if _, err := c.Connect(ctx, &paho.Connect{ClientID: clientID(t, "share-"+name), CleanStart: true, KeepAlive: 30}); err != nil {
			t.Fatal(err)
		}
		defer c.Disconnect(&paho.Disconnect{})
		ack, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "$share/g/" + topic + "/#", QoS: 1}}})
		if err != nil || len(ack.Reasons) != 1 || ack.Reasons[0] != 1 {
			t.Fatalf("SUBACK %+v %v, want granted QoS 1", ack, err)
		}
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p := paho.NewClient(paho.ClientConfig{Conn: conn})
	if _, err := p.Connect(ctx, &paho.Connect{ClientID: clientID(t, "pub"), CleanStart: true, KeepAlive: 30}); err != nil {
		t.Fatal(err)
	}
	defer p.Disconnect(&paho.Disconnect{})
	const n = 6
	for i := 0; i < n; i++ {
		if _, err := p.Publish(ctx, &paho.Publish{Topic: topic + "/x", QoS: 1, Payload: []byte(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for len(seen) < n {
		select {
		case m := <-got:
			payload := m[strings.IndexByte(m, ':')+1:]
			if seen[payload] {
				t.Fatalf("message %s delivered twice across the group", payload)
			}
			seen[payload] = true
		case <-ctx.Done():
			t.Fatalf("the group received %d of %d", len(seen), n)
		}
	}
}
