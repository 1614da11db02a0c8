package conformance

import (
	"os/exec"
	"path/filepath"
	"testing"

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
