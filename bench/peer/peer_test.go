package peer

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

func TestSaguinConfigIsRFC0002sShapeWithOneProviderAndATCPAndATLSDoor(t *testing.T) {
	for _, sqlite := range []bool{false, true} {
		var doc struct {
			Broker struct {
				ID       string `yaml:"id"`
				LogLevel string `yaml:"log_level"`
				MQTT     struct {
					Listen struct {
						TCP []struct {
							Name    string            `yaml:"name"`
							Address string            `yaml:"address"`
							TLS     map[string]string `yaml:"tls"`
						} `yaml:"tcp"`
					} `yaml:"listen"`
				} `yaml:"mqtt"`
				Storage struct {
					Default   string                       `yaml:"default"`
					Period    string                       `yaml:"default_retention_period"`
					Bytes     string                       `yaml:"default_retention_bytes"`
					Providers map[string]map[string]string `yaml:"providers"`
				} `yaml:"storage"`
				Limits     map[string]any `yaml:"limits"`
				Operations struct {
					Listen struct {
						TCP struct {
							Address string `yaml:"address"`
						} `yaml:"tcp"`
					} `yaml:"listen"`
				} `yaml:"operations"`
			} `yaml:"broker"`
		}
		r := run{dir: "/tmp/run", addr: "127.0.0.1:4242", opsAddr: "127.0.0.1:4243", tlsAddr: "127.0.0.1:4244",
			tls: &tlsFiles{CertFile: "/tmp/run/bench-cert.pem", KeyFile: "/tmp/run/bench-key.pem"}}
		if err := yaml.Unmarshal([]byte(saguinConfig(r, sqlite)), &doc); err != nil {
			t.Fatal(err)
		}
		b := doc.Broker
		doors := b.MQTT.Listen.TCP
		if b.ID == "" || len(doors) != 2 || doors[0].Address != "127.0.0.1:4242" || doors[0].TLS != nil || b.Storage.Period != "none" || b.Storage.Bytes != "none" {
			t.Fatalf("sqlite=%v: %+v", sqlite, b)
		}
		if doors[1].Address != "127.0.0.1:4244" || doors[1].TLS["cert_file"] != r.tls.CertFile || doors[1].TLS["key_file"] != r.tls.KeyFile {
			t.Fatalf("the TLS door %+v: the run's certificate on the run's TLS address", doors[1])
		}
		p, ok := b.Storage.Providers[b.Storage.Default]
		if !ok || len(b.Storage.Providers) != 1 {
			t.Fatalf("sqlite=%v: default %q among %v", sqlite, b.Storage.Default, b.Storage.Providers)
		}
		if sqlite && (p["type"] != "sqlite" || p["file_path"] != "/tmp/run/saguin.db") {
			t.Fatalf("sqlite provider %v", p)
		}
		if !sqlite && (p["type"] != "memory" || p["snapshot_dir"] != "none") {
			t.Fatalf("memory provider %v", p)
		}
		if b.Operations.Listen.TCP.Address != "127.0.0.1:4243" {
			t.Fatalf("operations listener %q: the window scenario reads the commits on /metrics", b.Operations.Listen.TCP.Address)
		}
		if b.Limits["max_connect_rate"] != "none" {
			t.Fatalf("max_connect_rate %v: the default 500/s would be what conns measures", b.Limits["max_connect_rate"])
		}
	}
}

func TestMosquittoConfigNeverPersistsAndNeverDropsAQueue(t *testing.T) {
	conf, err := mosquittoConfig(run{addr: "127.0.0.1:4242", tlsAddr: "127.0.0.1:4244", tls: &tlsFiles{CertFile: "/r/c.pem", KeyFile: "/r/k.pem"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"listener 4242 127.0.0.1\n", "persistence false\n", "max_queued_messages 1000000\n", "allow_anonymous true\n",
		"listener 4244 127.0.0.1\ncertfile /r/c.pem\nkeyfile /r/k.pem\n"} {
		if !strings.Contains(conf, want) {
			t.Errorf("configuration lacks %q:\n%s", want, conf)
		}
	}
}

func TestStartedBrokerListensAndStopReapsIt(t *testing.T) {
	b, err := mosquittoBroker(context.Background())
	if err != nil {
		t.Skip(err)
	}
	p, err := b.Start(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatalf("started broker does not accept on %s: %v", p.Addr, err)
	}
	c.Close()
	u, err := p.Usage()
	if err != nil || u.RSS == 0 {
		t.Fatalf("usage %+v, %v", u, err)
	}
	p.Stop()
	if p.Alive() {
		t.Fatal("broker alive after Stop")
	}
}

func TestABrokerThatExitsAtOnceFailsItsStartWithItsOutput(t *testing.T) {
	b := &Broker{Name: "broken", command: func(run) (*exec.Cmd, error) {
		return exec.Command("sh", "-c", "echo config refused >&2; exit 3"), nil
	}}
	_, err := b.Start(context.Background(), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "config refused") {
		t.Fatalf("start error %v, want the broker's own words", err)
	}
}

func TestMochiPeerBuildsFromItsOwnModuleAndServes(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "bench", "peers", "mochi", "go.mod")); err != nil {
		t.Fatal(err)
	}
	b, err := mochiBroker(context.Background(), Options{RepoRoot: root, BinDir: t.TempDir()})
	if err != nil {
		if strings.Contains(err.Error(), "proxy") || strings.Contains(err.Error(), "dial") {
			t.Skipf("the module proxy is out of reach: %v", err)
		}
		t.Fatal(err)
	}
	if b.Version != "v2.7.9" {
		t.Fatalf("mochi version %q, want the one bench/peers/mochi/go.mod requires", b.Version)
	}
	p, err := b.Start(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p.Stop()
}

func TestUnknownBrokerIsNamedInItsRefusal(t *testing.T) {
	_, failed := Prepare(context.Background(), Options{BinDir: t.TempDir()}, []string{"emqx"})
	if err := failed["emqx"]; err == nil || !strings.Contains(err.Error(), "mosquitto") {
		t.Fatalf("error %v should list the known brokers", err)
	}
}
