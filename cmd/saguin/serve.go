package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/saguin-edge/saguin/broker"
	"github.com/saguin-edge/saguin/config"
	"github.com/saguin-edge/saguin/netloop"
)

// shutdownGrace bounds how long a stopping broker waits for its connections
// to take their DISCONNECT and close; write_timeout bounds each of them too.
const shutdownGrace = 10 * time.Second

func init() {
	registerMode("--config", modeDoc{usage: "--config FILE", summary: "run the broker on the configuration FILE until SIGTERM or SIGINT"}, runServe)
}

// service is something the broker runs beside its MQTT doors - the
// operations listener, bridges - registered from its own file so that
// wiring one in never means editing this one.
type service struct {
	name string
	// start runs the service; nil, nil when the configuration asks for none.
	start func(env *serviceEnv) (*running, error)
}

// serviceEnv is what a service is started with: the running broker's parts.
type serviceEnv struct {
	cfg     *config.Config
	broker  *broker.Broker
	net     *netloop.Server
	storage *storage
	log     *slog.Logger
	started time.Time
}

// running is a started service.
type running struct {
	// stop ends it at shutdown.
	stop func(context.Context) error
	// reread, when set, reads the service's files again for SIGUSR1 without
	// applying them; apply is called only if every service's reread and the
	// configuration itself read well.
	reread func() (apply func(), lines []string, err error)
}

var services []service

// registerService adds a service. Called from init functions only.
func registerService(name string, start func(*serviceEnv) (*running, error)) {
	services = append(services, service{name: name, start: start})
}

// runServe runs the broker: load the configuration, install the signal
// handlers, write the pid file, open the doors, and serve until SIGTERM or
// SIGINT stops it gracefully.
func runServe(args []string, stdout, stderr io.Writer) int {
	path, err := configPath(args)
	if err != nil {
		fmt.Fprintf(stderr, "saguin: %v\n", err)
		return 2
	}
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "saguin: %v\n", err)
		return 1
	}
	started := time.Now()
	holdHeapFloor()
	level := new(slog.LevelVar)
	level.Set(logLevel(cfg.Broker.LogLevel))
	log := slog.New(slog.NewTextHandler(stdout, &slog.HandlerOptions{Level: level})).
		With("broker_id", cfg.Broker.ID)
	if parts := notServed(cfg); len(parts) > 0 {
		// Nothing configured is ever silently ignored: a part the file
		// names and this build cannot serve stops the start, each named.
		for _, p := range parts {
			log.Error("cannot start: the configuration names a part that is not served yet", "part", p)
		}
		return 1
	}
	// What --check-config says beside "ok" is said at the start too, once:
	// a door beside an acl_file nothing identifies a client at (checklist
	// B4), an inert provider, a bridge rule discarding a level.
	for _, n := range cfg.Notes {
		log.Warn("configuration note", "note", n.String())
	}

	// Signal handlers go in before the pid file is written, or a supervisor
	// signalling at once would kill the broker it just started (RFC 0002).
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1)
	defer signal.Stop(sigs)

	if cfg.Broker.PIDFile != "" {
		if err := writePIDFile(cfg.Broker.PIDFile); err != nil {
			log.Error("cannot write the pid file; not running unmanaged", "pid_file", cfg.Broker.PIDFile, "error", err)
			return 1
		}
		defer os.Remove(cfg.Broker.PIDFile)
	}

	counters := new(broker.Counters)
	st, err := openStorage(cfg, broker.StoreHooks(counters), log)
	if err != nil {
		log.Error("cannot open storage", "error", err)
		return 1
	}
	bo := brokerOptions(cfg, st, log)
	bo.Counters = counters
	bo.Catalogue = catalogue(cfg)
	b, err := broker.New(bo)
	if err != nil {
		log.Error("cannot start the broker", "error", err)
		if err := st.close(); err != nil {
			log.Error("storage did not close cleanly", "error", err)
		}
		return 1
	}
	// Whatever ends the run, the stores take what the broker still holds
	// before they close: a memory provider's snapshot is written there.
	defer func() {
		b.Close()
		if err := st.close(); err != nil {
			log.Error("storage did not close cleanly", "error", err)
		}
	}()
	if err := plugChannels(cfg, st, b); err != nil {
		log.Error("cannot start the broker", "error", err)
		return 1
	}
	if err := plugLatest(cfg, st, b, log); err != nil {
		log.Error("cannot start the broker", "error", err)
		return 1
	}
	if err := plugQueues(cfg, st, b); err != nil {
		log.Error("cannot open the queues", "error", err)
		return 1
	}
	if err := b.Restore(); err != nil {
		log.Error("cannot restore sessions", "error", err)
		return 1
	}
	// Credentials are in force before a door opens.
	access, errs := loadAccess(cfg)
	if len(errs) > 0 {
		for _, err := range errs {
			log.Error("cannot read a credential file", "error", err)
		}
		return 1
	}
	b.SetAccess(access)
	tlsDoors, err := loadCertificates(cfg, log)
	if err != nil {
		log.Error("cannot open the MQTT doors", "error", err)
		return 1
	}
	opts, err := netloopOptions(cfg, b, tlsDoors, log)
	if err != nil {
		log.Error("cannot open the MQTT doors", "error", err)
		return 1
	}
	srv, err := netloop.New(opts)
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		log.Error("cannot open the MQTT doors", "error", err)
		return 1
	}
	env := &serviceEnv{cfg: cfg, broker: b, net: srv, storage: st, log: log, started: started}
	var runs []*running
	var names []string
	stopServices := func(ctx context.Context) int {
		code := 0
		for i := len(runs) - 1; i >= 0; i-- {
			if err := runs[i].stop(ctx); err != nil {
				log.Error("stopping "+names[i]+" did not finish cleanly", "error", err)
				code = 1
			}
		}
		return code
	}
	for _, svc := range services {
		r, err := svc.start(env)
		if err != nil {
			log.Error("cannot start "+svc.name, "error", err)
			stopServices(context.Background())
			srv.Shutdown(context.Background())
			return 1
		}
		if r != nil {
			runs, names = append(runs, r), append(names, svc.name)
		}
	}
	log.Info("broker started", "config", cfg.File, "pid", os.Getpid())

	for sig := range sigs {
		if sig == syscall.SIGHUP {
			log.Warn("SIGHUP received and ignored: Sagüin does not reload on HUP; SIGUSR1 re-reads the log level and credential files, and addresses and storage need a restart")
			continue
		}
		if sig == syscall.SIGUSR1 {
			reread(cfg, level, b, tlsDoors, srv, runs, names, log)
			continue
		}
		log.Info("stopping", "signal", sig.String())
		break
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	code := 0
	b.Stop()
	if err := srv.Shutdown(ctx); err != nil {
		log.Error("shutdown did not finish cleanly", "error", err)
		code = 1
	}
	if stopServices(ctx) != 0 {
		code = 1
	}
	if code != 0 {
		return code
	}
	log.Info("broker stopped")
	return 0
}

// configPath reads --config <file> or --config=<file>; nothing else is taken.
func configPath(args []string) (string, error) {
	var path string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--config":
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "--") {
				return "", errors.New("--config needs the configuration file")
			}
			path = args[i+1]
			i++
		case strings.HasPrefix(a, "--config="):
			path = strings.TrimPrefix(a, "--config=")
		default:
			return "", fmt.Errorf("%q is not understood with --config%s", a, didYouMean(a, []string{"--config"}))
		}
	}
	if path == "" {
		return "", errors.New("--config needs the configuration file")
	}
	return path, nil
}

// logLevel maps broker.log_level to slog; absent is info.
func logLevel(s string) slog.Level {
	switch s {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// writePIDFile replaces the file with this process's id.
func writePIDFile(path string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	return nil
}
