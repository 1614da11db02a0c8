package conformance

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// BenchmarkConnectWithPasswordFile is CONNECTs a second, each verified
// against a 1,000-iteration $7$ hash, through Sagüin and Mosquitto reading the
// same file in the same run (two clients connecting at once, each CONNECT
// answered and the socket closed):
//
//	go test -run '^$' -bench ConnectWithPasswordFile -benchtime 300x ./conformance/
func BenchmarkConnectWithPasswordFile(b *testing.B) {
	bin, err := exec.LookPath("mosquitto_passwd")
	if err != nil {
		b.Skip("mosquitto_passwd is not installed")
	}
	dir := b.TempDir()
	pw := filepath.Join(dir, "clients.passwd")
	if out, err := exec.Command(bin, "-H", "sha512-pbkdf2", "-I", "1000", "-c", "-b", pw, "device-7", "pw7").CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	saguin := startBrokerIn(b, dir, brokerConfig{MQTT: "password_file: " + pw, Limits: "max_connect_rate: none"})
	mosquitto := startMosquittoWith(b, "allow_anonymous false\npassword_file "+pw+"\n")
	for _, target := range []struct{ name, addr string }{{"saguin", saguin.addr}, {"mosquitto", mosquitto}} {
		b.Run(target.name, func(b *testing.B) {
			b.SetParallelism(1) // GOMAXPROCS clients
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					c := dialRaw(b, target.addr, codec.Version5)
					if ack := c.connect("", login("device-7", "pw7")); ack.ReasonCode != codec.Success {
						b.Errorf("CONNACK 0x%02x", byte(ack.ReasonCode))
						return
					}
					c.nc.Close()
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "connects/s")
		})
	}
}

// fanOutACL is a 50-rule acl_file, as BenchmarkBroadcastPublishQoS1To100WithACL
// in broker/ has: 48 roles nobody here holds, and the two the benchmark's
// clients are given.
func fanOutACL() string {
	var b strings.Builder
	b.WriteString("roles:\n")
	for i := range 48 {
		fmt.Fprintf(&b, "  r%d:\n    - topic: site/%d/#\n      allow: [read, write]\n", i, i)
	}
	b.WriteString("  fleet:\n    - topic: fleet/+/temp\n      allow: [read]\n    - topic: fleet/%u/#\n      allow: [write]\n")
	b.WriteString("users:\n  sub: [r1, r2, r3, fleet]\n  pub: [fleet]\n")
	return b.String()
}

// BenchmarkFanOutWithACLThroughTheBinary is deliveries a second through the
// binary, one QoS 1 publisher to 100 QoS 1 subscribers (each acknowledging),
// without and with the 50-rule acl_file, the same password file in both: the
// per-delivery check as a whole broker pays it, beside the broker/ benchmark
// that isolates it:
//
//	go test -run '^$' -bench FanOutWithACLThroughTheBinary -benchtime 300x ./conformance/
func BenchmarkFanOutWithACLThroughTheBinary(b *testing.B) {
	saguinOnly(b, "the benchmark starts saguin with its own acl_file")
	for _, withACL := range []bool{false, true} {
		name := "none"
		if withACL {
			name = "acl_file"
		}
		b.Run(name, func(b *testing.B) { benchFanOut(b, withACL, 100) })
	}
}

func benchFanOut(b *testing.B, withACL bool, subs int) {
	dir := b.TempDir()
	pw := writePasswd(b, dir, map[string]string{"sub": "pws", "pub": "pwp"})
	mqtt := "password_file: " + pw
	if withACL {
		path := filepath.Join(dir, "acl.yaml")
		if err := os.WriteFile(path, []byte(fanOutACL()), 0o600); err != nil {
			b.Fatal(err)
		}
		mqtt += "\nacl_file: " + path
	}
	br := startBrokerIn(b, dir, brokerConfig{MQTT: mqtt, Limits: "max_connect_rate: none"})
	var (
		got     sync.WaitGroup
		errOnce sync.Once
		failed  error
	)
	for i := range subs {
		c := dialRaw(b, br.addr, codec.Version5)
		c.mustConnect(fmt.Sprintf("sub-%d", i), login("sub", "pws"))
		c.mustSubscribe(1, "fleet/+/temp", 1)
		got.Add(1)
		// Each subscriber acknowledges as it reads, so the broker's
		// in-flight window never holds a delivery back.
		go func() {
			defer got.Done()
			for n := 0; n < b.N; {
				h, body, err := c.next(waitLong)
				if err == nil && h.Type == codec.TypePublish {
					var p codec.Publish
					if err = p.Decode(h, body, c.version); err == nil {
						n++
						_, err = c.nc.Write((&codec.Ack{Type: codec.TypePuback, PacketID: p.PacketID}).Append(nil, c.version))
					}
				}
				if err != nil {
					errOnce.Do(func() { failed = err })
					return
				}
			}
		}()
	}
	pub := dialRaw(b, br.addr, codec.Version5)
	pub.mustConnect("pub", login("pub", "pwp"))
	payload := []byte("21.5")
	start := time.Now()
	b.ResetTimer()
	for i := range b.N {
		pub.publishQoS1("fleet/pub/temp", payload, uint16(i%65535+1))
	}
	got.Wait()
	b.StopTimer()
	if failed != nil && !errors.Is(failed, os.ErrDeadlineExceeded) {
		b.Fatal(failed)
	} else if failed != nil {
		b.Fatal("a subscriber was not sent every publish")
	}
	b.ReportMetric(float64(subs*b.N)/time.Since(start).Seconds(), "deliveries/s")
}
