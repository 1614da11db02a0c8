package peer

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Options says where the harness finds and builds the peers.
type Options struct {
	RepoRoot string // the saguin module's root: cmd/saguin and bench/peers/mochi are under it
	BinDir   string // where the built binaries go
}

// Names lists every broker the harness can run, in the order reports show them.
var Names = []string{Saguin, SaguinSQLite, Mosquitto, Mochi}

// Prepare makes the named brokers runnable: builds Sagüin from the tree and
// the mochi peer from its module, finds Mosquitto. A broker that cannot be
// prepared is left out with its reason in the second map, so one missing
// peer does not cost the figures of the others.
func Prepare(ctx context.Context, opt Options, names []string) (map[string]*Broker, map[string]error) {
	ready := map[string]*Broker{}
	failed := map[string]error{}
	var saguinBin string
	var saguinErr error
	builtSaguin := false
	for _, name := range names {
		var b *Broker
		var err error
		switch name {
		case Saguin, SaguinSQLite:
			if !builtSaguin {
				saguinBin, saguinErr = buildSaguin(ctx, opt)
				builtSaguin = true
			}
			if err = saguinErr; err == nil {
				b = saguinBroker(name, saguinBin, gitVersion(ctx, opt.RepoRoot), name == SaguinSQLite)
			}
		case Mosquitto:
			b, err = mosquittoBroker(ctx)
		case Mochi:
			b, err = mochiBroker(ctx, opt)
		default:
			err = fmt.Errorf("unknown broker %q (known: %s)", name, strings.Join(Names, ", "))
		}
		if err == nil {
			err = probe(ctx, b, opt.BinDir)
		}
		if err != nil {
			failed[name] = err
			continue
		}
		ready[name] = b
	}
	return ready, failed
}

// probe starts and stops the broker once, so that one that cannot run at
// all (a tree whose binary has no broker mode yet, a configuration it
// refuses) is reported once as unavailable rather than failing every run.
func probe(ctx context.Context, b *Broker, scratch string) error {
	dir, err := os.MkdirTemp(scratch, "probe-"+b.Name+"-")
	if err != nil {
		return fmt.Errorf("making a probe directory: %w", err)
	}
	defer os.RemoveAll(dir)
	p, err := b.Start(ctx, dir)
	if err != nil {
		return err
	}
	p.Stop()
	return nil
}

func buildSaguin(ctx context.Context, opt Options) (string, error) {
	// SAGUIN_BENCH_BINARY runs a given build instead - a release binary, or
	// a wrapper starting an ARM one under qemu (docs/packaging.md).
	if bin := os.Getenv("SAGUIN_BENCH_BINARY"); bin != "" {
		return bin, nil
	}
	bin := filepath.Join(opt.BinDir, "saguin")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/saguin")
	cmd.Dir = opt.RepoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building saguin from the tree: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return bin, nil
}

func gitVersion(ctx context.Context, dir string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "describe", "--always", "--dirty").Output()
	if err != nil {
		return "tree"
	}
	return "git " + strings.TrimSpace(string(out))
}

// saguinConfig is the configuration of RFC 0002 the harness runs Sagüin on:
// one tcp door, one provider that keeps nothing across a restart (memory with
// snapshot_dir: none, or a sqlite file in the run's directory), and limits
// opened where a default would measure the limit instead of the broker -
// max_connections above the 100,000 idle connections the full profile's
// conns case holds, and no max_connect_rate, whose default of 500 a second
// would make the connect rate a reading of the configuration. Everything else is default:
// publish_rate and publish_bytes are absent (no bound) by default already.
//
// The operations listener on opsAddr serves /metrics, where the window
// scenario reads the sqlite provider's commits; min_scrape_interval is at
// its floor of 60 s, so a scenario scrapes once, at its end.
func saguinConfig(r run, sqlite bool) string {
	addr, opsAddr, dir := r.addr, r.opsAddr, r.dir
	provider := "      mem:\n        type: memory\n        snapshot_dir: none\n"
	name := "mem"
	if sqlite {
		provider = fmt.Sprintf("      db:\n        type: sqlite\n        file_path: %s\n", filepath.Join(dir, "saguin.db"))
		name = "db"
	}
	return fmt.Sprintf(`# Written by the benchmark harness for one run.
broker:
  id: bench
  log_level: warn
  mqtt:
    listen:
      tcp:
        - name: plain
          address: %s
        - name: tls
          address: %s
          tls:
            cert_file: %s
            key_file: %s
  operations:
    listen:
      tcp:
        address: %s
  storage:
    default: %s
    default_retention_period: none
    default_retention_bytes: none
    providers:
%s  limits:
    max_connections: 110000
    max_connect_rate: none
channels:
  # The latest scenarios' topics: current values here, retained messages on
  # the other peers (docs/performance.md "latest").
  benchlatest:
    type: latest
    filter: bench/latest/#
    retention_period: none
  # The append channel the append-pub-q1 scenario publishes into; on the
  # other peers the same topics are plain MQTT. Bounded so a long run's
  # records do not measure the memory of the run instead of the broker.
  benchlog:
    type: append
    filter: bench/append/#
    retention_bytes: 256MiB
  # The replay scenario's channel: every record a durable consumer is owed
  # is held until the run ends (up to 1,000,000 of 128 bytes), so it has no
  # bound of its own; the run's directory goes with the run.
  benchreplay:
    type: append
    filter: bench/replay/#
    retention_bytes: none
    retention_period: none
  # The queue scenarios (docs/performance.md "Queue channels"): workers of
  # $saguin/queue/benchjobs here, a shared subscription to the same topics
  # elsewhere; a queue whose one attempt dead-letters every returned job; a
  # queue held at a small max_bytes, refusing 0x97.
  benchjobs:
    type: queue
    filter: bench/queue/#
  benchdlq:
    type: queue
    filter: bench/dlq/#
    retry:
      max_attempts: 1
    dlq_retention_bytes: 64MiB
  benchfull:
    type: queue
    filter: bench/full/#
    max_bytes: 64KiB
`, addr, r.tlsAddr, r.tls.CertFile, r.tls.KeyFile, opsAddr, name, provider)
}

func saguinBroker(name, bin, version string, sqlite bool) *Broker {
	return &Broker{Name: name, Version: version, ops: true, tls: true, command: func(r run) (*exec.Cmd, error) {
		abs, err := filepath.Abs(r.dir)
		if err != nil {
			return nil, fmt.Errorf("resolving the run directory: %w", err)
		}
		r.dir = abs
		path := filepath.Join(abs, "saguin.yaml")
		if err := os.WriteFile(path, []byte(saguinConfig(r, sqlite)), 0o600); err != nil {
			return nil, fmt.Errorf("writing saguin configuration: %w", err)
		}
		return exec.Command(bin, "--config", path), nil
	}}
}

// mosquittoConfig runs Mosquitto with nothing persisted and a queue limit
// that never drops in these scenarios: max_queued_messages is per client,
// default 1,000, and a QoS 1 fan-out burst or a slow subscriber would
// otherwise be measured shedding. TCP_NODELAY is set because every other peer
// sets it (Go's net and gnet both do) and Nagle's algorithm against delayed
// acknowledgements would add 40 ms stalls to Mosquitto's latency figures that
// say nothing about Mosquitto. Everything else is Mosquitto's default,
// max_inflight_messages (20) included.
//
// The TLS door is a second listener with the run's certificate and key,
// Mosquitto's defaults otherwise (TLS 1.2 and 1.3, OpenSSL's ciphers). There
// is no WebSocket door: Debian's mosquitto 2.0.11 is built without
// libwebsockets, so `protocol websockets` is refused there. `user root`
// keeps a Mosquitto started by root as root: it reads the certificate after
// dropping to its own user otherwise, and the run's directory is the
// harness's alone (it has no effect on a harness not run as root).
func mosquittoConfig(r run) (string, error) {
	host, port, ok := strings.Cut(r.addr, ":")
	if !ok {
		return "", fmt.Errorf("address %q has no port", r.addr)
	}
	tlsHost, tlsPort, ok := strings.Cut(r.tlsAddr, ":")
	if !ok {
		return "", fmt.Errorf("address %q has no port", r.tlsAddr)
	}
	return fmt.Sprintf(`# Written by the benchmark harness for one run.
listener %s %s
listener %s %s
certfile %s
keyfile %s
allow_anonymous true
user root
persistence false
max_queued_messages 1000000
set_tcp_nodelay true
log_dest stderr
log_type error
log_type warning
`, port, host, tlsPort, tlsHost, r.tls.CertFile, r.tls.KeyFile), nil
}

func findMosquitto() (string, error) {
	if p, err := exec.LookPath("mosquitto"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto"} {
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("mosquitto %w: `make bench-deps` installs it from Debian", errNotFound)
}

func mosquittoBroker(ctx context.Context) (*Broker, error) {
	bin, err := findMosquitto()
	if err != nil {
		return nil, err
	}
	// mosquitto -h prints "mosquitto version 2.0.11" first and exits non-zero.
	out, _ := exec.CommandContext(ctx, bin, "-h").CombinedOutput()
	version := "unknown"
	if line, _, _ := strings.Cut(string(out), "\n"); strings.Contains(line, "version") {
		version = strings.TrimSpace(line[strings.Index(line, "version")+len("version"):])
	}
	return &Broker{Name: Mosquitto, Version: version, tls: true, command: func(r run) (*exec.Cmd, error) {
		conf, err := mosquittoConfig(r)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(r.dir, "mosquitto.conf")
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			return nil, fmt.Errorf("writing mosquitto configuration: %w", err)
		}
		return exec.Command(bin, "-c", path), nil
	}}, nil
}

func mochiBroker(ctx context.Context, opt Options) (*Broker, error) {
	src := filepath.Join(opt.RepoRoot, "bench", "peers", "mochi")
	bin := filepath.Join(opt.BinDir, "mochi")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the mochi peer in %s: %w: %s", src, err, strings.TrimSpace(string(out)))
	}
	version, err := moduleVersion(filepath.Join(src, "go.mod"), "github.com/mochi-mqtt/server/v2")
	if err != nil {
		return nil, err
	}
	return &Broker{Name: Mochi, Version: version, command: func(r run) (*exec.Cmd, error) {
		return exec.Command(bin, "-addr", r.addr), nil
	}}, nil
}

// moduleVersion reads the version a go.mod requires of module.
func moduleVersion(gomod, module string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", gomod, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "require "))
		if len(fields) >= 2 && fields[0] == module {
			return fields[1], nil
		}
	}
	return "", fmt.Errorf("%s does not require %s", gomod, module)
}
