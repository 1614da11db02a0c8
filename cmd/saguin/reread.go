package main

import (
	"log/slog"

	"github.com/saguin-edge/saguin/config"
	"github.com/saguin-edge/saguin/netloop"
	"github.com/saguin-edge/saguin/netloop/certs"
)

// reread is SIGUSR1: the configuration file is read again for what may
// change without a restart - so far the ws doors' same_origin and
// allowed_origins - and every TLS door's certificate, key and client CA from
// the paths the broker started with. One transaction: nothing changes unless
// the file is valid and every door's files load; each failure is logged at
// error and every door keeps what it had (RFC 0002 "TLS on a listener",
// "Which web pages may connect").
func reread(path string, tlsDoors *certs.Store, srv *netloop.Server, log *slog.Logger) {
	cfg, err := config.Load(path)
	if err != nil {
		log.Error("SIGUSR1: the configuration is not valid; nothing was re-read and everything stays as it was", "config", path, "error", err)
		return
	}
	loaded, err := tlsDoors.Reload()
	if err != nil {
		log.Error("SIGUSR1: a certificate did not load; every listener keeps serving the pair it had", "error", err)
		return
	}
	for _, l := range loaded {
		log.Info("SIGUSR1: certificate re-read", "listener", l.Listener, "expires", l.Expires.UTC().Format("2006-01-02T15:04:05Z"))
	}
	for _, ln := range cfg.Broker.MQTT.Listeners {
		if ln.Kind == config.KindWS && srv.SetOrigins(ln.Name, !ln.SameOrigin, ln.AllowedOrigins) {
			log.Info("SIGUSR1: page origins re-read", "listener", ln.Key, "same_origin", ln.SameOrigin, "allowed_origins", len(ln.AllowedOrigins))
		}
	}
}
