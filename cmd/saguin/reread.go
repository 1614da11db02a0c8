package main

import (
	"bytes"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/saguin-edge/saguin/broker"
	"github.com/saguin-edge/saguin/config"
	"github.com/saguin-edge/saguin/netloop"
	"github.com/saguin-edge/saguin/netloop/certs"
)

// reread is SIGUSR1 (RFC 0005 "SIGUSR1 re-reads the log level"), one step:
// the configuration file again for what may change without a restart (the
// log level, the ws doors' same_origin and allowed_origins), the MQTT
// password files and the acl_file, every TLS door's certificate, key and
// client CA, and every file a running service re-reads (the operations
// doors' credentials and certificates) - each from the paths the broker
// started with. Everything is read before anything is applied; a file that
// does not read changes nothing, is logged at error, and the broker keeps
// running with what it had (checklist AMB-24). It says what it applied, and
// which parts of the edited file it did not, because addresses and storage
// are startup-only.
func reread(running *config.Config, level *slog.LevelVar, b *broker.Broker, tlsDoors *certs.Store, srv *netloop.Server,
	runs []*running, names []string, log *slog.Logger) {
	// Every file is read, whatever failed before it, so that each failing
	// one is named in this one step rather than one a signal.
	failed := false
	next, err := config.Load(running.File)
	if err != nil {
		failed = true
		log.Error("SIGUSR1: the configuration is not valid; nothing re-read is applied, and the broker keeps what it had", "config", running.File, "error", err)
	}
	access, errs := loadAccess(running)
	for _, err := range errs {
		failed = true
		var es interface{ Unwrap() []error }
		if errors.As(err, &es) {
			for _, e := range es.Unwrap() {
				log.Error("SIGUSR1: a credential file cannot be used; nothing re-read is applied, and the broker keeps what it had", "error", e)
			}
			continue
		}
		log.Error("SIGUSR1: a credential file cannot be used; nothing re-read is applied, and the broker keeps what it had", "error", err)
	}
	var applies []func()
	var lines []string
	for i, r := range runs {
		if r.reread == nil {
			continue
		}
		apply, l, err := r.reread()
		if err != nil {
			failed = true
			log.Error("SIGUSR1: a file did not read; nothing re-read is applied, and the broker keeps what it had", "service", names[i], "error", err)
			continue
		}
		applies = append(applies, apply)
		lines = append(lines, l...)
	}
	// The MQTT doors' certificates are staged like the rest: read now, put
	// in force only with everything else.
	applyCerts, loaded, err := tlsDoors.Reread()
	if err != nil {
		failed = true
		log.Error("SIGUSR1: a certificate did not load; every listener keeps serving the pair it had, and nothing else re-read is applied", "error", err)
	}
	if failed {
		return
	}
	applyCerts()
	b.SetAccess(access)
	for _, apply := range applies {
		apply()
	}
	from := level.Level()
	level.Set(logLevel(next.Broker.LogLevel))
	// Every line of the report is said at warn, like the re-read lines of the
	// services, so that it is seen at whatever level was just set but error.
	log.Warn("SIGUSR1: log level applied", "from", levelName(from), "to", levelName(level.Level()))
	log.Warn("SIGUSR1: credentials re-read and in force", heldSummary(running, access)...)
	for _, l := range loaded {
		log.Warn("SIGUSR1: certificate re-read", "listener", l.Listener, "expires", l.Expires.UTC().Format(time.RFC3339))
	}
	for _, ln := range next.Broker.MQTT.Listeners {
		if ln.Kind == config.KindWS && srv.SetOrigins(ln.Name, !ln.SameOrigin, ln.AllowedOrigins) {
			log.Warn("SIGUSR1: page origins re-read", "listener", ln.Key, "same_origin", ln.SameOrigin, "allowed_origins", len(ln.AllowedOrigins))
		}
	}
	for _, l := range lines {
		log.Warn("SIGUSR1: re-read", "what", l)
	}
	if moved := startupOnly(running, next); len(moved) > 0 {
		log.Warn("SIGUSR1: not applied - addresses, storage and every other key are read at startup only; restart to apply them",
			"sections_edited", strings.Join(moved, ","))
	} else {
		log.Warn("SIGUSR1: addresses and storage are startup-only; nothing else in the file changed")
	}
}

// startupOnly names the sections of /v1/operations/config that differ
// between the running configuration and the file as it is now.
// The ws doors' same_origin and allowed_origins are re-read and applied, so
// an edit of them alone is not reported as a listeners section left as it
// was: they are compared as the running broker now holds them.
func startupOnly(running, next *config.Config) []string {
	asApplied := *next
	asApplied.Broker.MQTT.Listeners = slices.Clone(next.Broker.MQTT.Listeners)
	for i, l := range asApplied.Broker.MQTT.Listeners {
		for _, r := range running.Broker.MQTT.Listeners {
			if l.Kind == config.KindWS && r.Kind == config.KindWS && r.Name == l.Name {
				asApplied.Broker.MQTT.Listeners[i].SameOrigin, asApplied.Broker.MQTT.Listeners[i].AllowedOrigins = r.SameOrigin, r.AllowedOrigins
			}
		}
	}
	var out []string
	for _, s := range config.Sections {
		a, err1 := running.JSON(s)
		b, err2 := asApplied.JSON(s)
		if err1 == nil && err2 == nil && !bytes.Equal(a, b) {
			out = append(out, s)
		}
	}
	return out
}

func levelName(l slog.Level) string {
	return strings.ToLower(l.String())
}
