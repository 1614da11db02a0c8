package conformance

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/eclipse/paho.golang/paho"

	"github.com/saguin-edge/saguin/codec"
)

func TestTakeoverSendsTheOldConnectionSessionTakenOver(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		addr := target(t)
		old := dialRaw(t, addr, v)
		old.mustConnect("same-id", nil)
		dialRaw(t, addr, v).mustConnect("same-id", nil)
		old.expectEnd(codec.SessionTakenOver)
	})
}

// TestTakeoverSeenByPaho checks the same rule through an independent MQTT 5
// client library: the old connection's OnServerDisconnect sees 0x8E.
func TestTakeoverSeenByPaho(t *testing.T) {
	addr := target(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	got := make(chan byte, 1)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	old := paho.NewClient(paho.ClientConfig{Conn: conn, OnServerDisconnect: func(d *paho.Disconnect) { got <- d.ReasonCode }})
	if _, err := old.Connect(ctx, &paho.Connect{ClientID: "paho-same", CleanStart: true, KeepAlive: 30}); err != nil {
		t.Fatal(err)
	}
	conn2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	newer := paho.NewClient(paho.ClientConfig{Conn: conn2})
	if _, err := newer.Connect(ctx, &paho.Connect{ClientID: "paho-same", CleanStart: true, KeepAlive: 30}); err != nil {
		t.Fatal(err)
	}
	defer newer.Disconnect(&paho.Disconnect{})
	select {
	case rc := <-got:
		if rc != 0x8E {
			t.Fatalf("the old connection was told 0x%02x, want 0x8e", rc)
		}
	case <-ctx.Done():
		t.Fatal("the old connection was not told it was taken over")
	}
}

func TestKeepaliveExpiryEndsTheConnection(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		c := dialRaw(t, target(t), v)
		c.mustConnect("quiet", func(p *codec.Connect) { p.KeepAlive = 1 })
		// Silent for one and a half keepalives: the broker ends it.
		c.expectEnd(codec.KeepAliveTimeout)
	})
}

func TestPingreqIsAnsweredAndKeepsTheConnection(t *testing.T) {
	versions(t, func(t *testing.T, v byte) {
		c := dialRaw(t, target(t), v)
		c.mustConnect("pinger", func(p *codec.Connect) { p.KeepAlive = 1 })
		for i := 0; i < 4; i++ {
			c.send([]byte{0xC0, 0x00})
			if h, _ := c.read(); h.Type != codec.TypePingresp {
				t.Fatalf("want PINGRESP, got %s", h.Type)
			}
		}
	})
}

func TestDisconnectMayNotRaiseASessionExpiryOfZero(t *testing.T) {
	c := dialRaw(t, target(t), codec.Version5)
	c.mustConnect("zero", nil)
	d := &codec.Disconnect{}
	d.Properties.SessionExpiry = 60
	d.Properties.Present.Set(codec.PropSessionExpiry)
	c.send(d.Append(nil, codec.Version5))
	c.expectDisconnect(codec.ProtocolError)
}

func TestSessionOutlivesItsConnectionByItsExpiry(t *testing.T) {
	addr := target(t)
	withExpiry := func(c *codec.Connect) {
		c.CleanStart = false
		c.Properties.SessionExpiry = 60
		c.Properties.Present.Set(codec.PropSessionExpiry)
	}
	c := dialRaw(t, addr, codec.Version5)
	c.mustConnect("durable", withExpiry)
	c.subscribe(1, "kept/#", 1)
	c.send((&codec.Disconnect{}).Append(nil, codec.Version5))
	c.expectClosed()

	back := dialRaw(t, addr, codec.Version5)
	if ack := back.mustConnect("durable", withExpiry); !ack.SessionPresent {
		t.Fatal("CONNACK Session Present 0 for a session inside its expiry")
	}
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect("pub", nil)
	pub.publish("kept/x", []byte("still subscribed"), 1, 1)
	pub.expectPuback(1)
	if p := back.expectPublish(); string(p.Payload) != "still subscribed" {
		t.Fatalf("got %q", p.Payload)
	}
}

func TestDisconnectWithSessionExpiryZeroEndsTheSession(t *testing.T) {
	addr := target(t)
	c := dialRaw(t, addr, codec.Version5)
	c.mustConnect("short", func(p *codec.Connect) {
		p.CleanStart = false
		p.Properties.SessionExpiry = 60
		p.Properties.Present.Set(codec.PropSessionExpiry)
	})
	d := &codec.Disconnect{}
	d.Properties.Present.Set(codec.PropSessionExpiry) // SessionExpiry 0
	c.send(d.Append(nil, codec.Version5))
	c.expectClosed()
	if ack := dialRaw(t, addr, codec.Version5).mustConnect("short", func(p *codec.Connect) { p.CleanStart = false }); ack.SessionPresent {
		t.Fatal("a session its DISCONNECT ended was resumed")
	}
}

func TestGracefulStopSendsServerShuttingDownAndClosesThe311Connections(t *testing.T) {
	b := startBroker(t, brokerConfig{Broker: "pid_file: $DIR/saguin.pid"})
	pidFile := filepath.Join(b.dir, "saguin.pid")
	pid, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	if strings.TrimSpace(string(pid)) != strconv.Itoa(b.cmd.Process.Pid) {
		t.Fatalf("pid file holds %q, want %d", pid, b.cmd.Process.Pid)
	}
	five := dialRaw(t, b.addr, codec.Version5)
	five.mustConnect("five", nil)
	old := dialRaw(t, b.addr, codec.Version311)
	old.mustConnect("old", nil)
	b.signal(syscall.SIGTERM)
	five.expectDisconnect(codec.ServerShuttingDown)
	old.expectClosedSilently()
	if code := b.waitExit(waitLong); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Fatalf("pid file left after a clean shutdown: %v", err)
	}
}

func TestSIGHUPIsAnsweredByAWarningAndChangesNothing(t *testing.T) {
	b := startBroker(t, brokerConfig{})
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect("stays", nil)
	b.signal(syscall.SIGHUP)
	if b.log.wait(regexp.MustCompile(`level=WARN .*SIGHUP`), waitLong) == "" {
		t.Fatal("no warning line for SIGHUP")
	}
	c.send([]byte{0xC0, 0x00})
	if h, _ := c.read(); h.Type != codec.TypePingresp {
		t.Fatalf("after SIGHUP: want PINGRESP, got %s", h.Type)
	}
}

func TestStartWithoutConfigIsRefusedWithAMessage(t *testing.T) {
	out, err := exec.Command(binPath).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("saguin with no arguments: %v, want a non-zero exit", err)
	}
	if !strings.Contains(string(out), "--config") {
		t.Fatalf("the refusal does not name --config: %q", out)
	}
}

func TestUnwritablePIDFileStopsTheStart(t *testing.T) {
	dir := t.TempDir()
	code, out := startFailing(t, brokerConfig{Broker: "pid_file: $DIR/missing/dir/saguin.pid"}, dir)
	if code == 0 || !strings.Contains(out, "pid") {
		t.Fatalf("exit %d, output %q: want a refusal naming the pid file", code, out)
	}
}
