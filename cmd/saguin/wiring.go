package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/saguin-edge/saguin/broker"
	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/config"
	"github.com/saguin-edge/saguin/netloop"
	"github.com/saguin-edge/saguin/netloop/certs"
)

// netloopOptions maps the resolved configuration onto netloop's options; a
// TLS door serves what tlsDoors holds for it (loadCertificates). A nil
// tlsDoors maps the doors without their TLS, for checks that open nothing
// (notServed).
func netloopOptions(cfg *config.Config, b *broker.Broker, tlsDoors *certs.Store, log *slog.Logger) (netloop.Options, error) {
	l := cfg.Broker.Limits
	o := netloop.Options{
		MinProtocolVersion: cfg.Broker.MQTT.MinProtocolVersion,
		MaxConnections:     l.MaxConnections,
		ConnectTimeout:     l.ConnectTimeout,
		MaxConnectSize:     int(l.MaxConnectSize),
		MaxConnectRate:     l.MaxConnectRate,
		MaxMessageSize:     int(l.MaxMessageSize),
		MaxClientIDLength:  l.MaxClientIDLength,
		MaxSessionExpiry:   l.MaxSessionExpiry,
		MaxKeepalive:       l.MaxKeepalive,
		WriteTimeout:       l.WriteTimeout,
		SessionQueueBytes:  int(l.SessionQueueBytes),
		RetainAvailable:    true,
		MayDenyFeatures:    cfg.Broker.MQTT.ACLFile != "",
		Logger:             log,
		Handler:            b,
		Clock:              clock.Real,
	}
	if b != nil {
		// Who was refused, for /v1/operations/refused.
		o.OnConnectRefused = b.ConnectRefused
	}
	for _, ln := range cfg.Broker.MQTT.Listeners {
		d := netloop.Door{Name: ln.Name, Address: ln.Address, ProxyProtocol: ln.ProxyProtocol}
		switch ln.Kind {
		case config.KindTCP:
			d.Kind = netloop.KindTCP
		case config.KindWS:
			d.Kind = netloop.KindWS
			d.CrossOrigin, d.AllowedOrigins = !ln.SameOrigin, ln.AllowedOrigins
		case config.KindUnix:
			d.Kind, d.Path, d.Mode = netloop.KindUnix, ln.Path, ln.Mode
		}
		if ln.TLS != nil && tlsDoors != nil {
			if d.TLS = tlsDoors.Config(ln.Key); d.TLS == nil {
				return o, fmt.Errorf("listener %s: its certificate was not loaded", ln.Key)
			}
		}
		o.Doors = append(o.Doors, d)
	}
	return o, nil
}

// loadCertificates reads every MQTT door's certificate, key and client CA
// before any port opens; a bad one stops the start naming its listener (RFC
// 0002 "TLS on a listener"), each one that loads logs its expiry.
func loadCertificates(cfg *config.Config, log *slog.Logger) (*certs.Store, error) {
	var files []certs.Files
	for _, ln := range cfg.Broker.MQTT.Listeners {
		if t := ln.TLS; t != nil {
			files = append(files, certs.Files{Listener: ln.Key, CertFile: t.CertFile, KeyFile: t.KeyFile,
				ClientCAFile: t.ClientCAFile, RequireCertificate: t.RequireCertificate, MinVersion: certs.MinVersion(t.MinVersion)})
		}
	}
	st, loaded, err := certs.Load(files)
	if err != nil {
		return nil, err
	}
	logExpiries(log, loaded)
	return st, nil
}

func logExpiries(log *slog.Logger, loaded []certs.Loaded) {
	for _, l := range loaded {
		log.Info("certificate loaded", "listener", l.Listener, "expires", l.Expires.UTC().Format(time.RFC3339))
	}
}

// brokerOptions maps the limits the broker core enforces and the stores it
// keeps its state in.
func brokerOptions(cfg *config.Config, st *storage, log *slog.Logger) broker.Options {
	l := cfg.Broker.Limits
	return broker.Options{
		MaxTopicLength:       l.MaxTopicLength,
		MaxTopicLevels:       l.MaxTopicLevels,
		MaxSubscriptions:     l.MaxSubscriptions,
		MaxHeaderCount:       l.MaxHeaderCount,
		MaxHeaderBytes:       int(l.MaxHeaderBytes),
		PublishRate:          int64(l.PublishRate),
		PublishBytes:         l.PublishBytes,
		SessionQueueBytes:    l.SessionQueueBytes,
		MaxSessionExpiry:     l.MaxSessionExpiry,
		AckCommitInterval:    cfg.Broker.Session.AckCommitInterval,
		QoS2MaxInflight:      cfg.Broker.QoS2.MaxInflightPerClient,
		QoS2ExpiresAfter:     cfg.Broker.QoS2.ExpiresAfter,
		ShareExpiresAfter:    cfg.Broker.Share.ExpiresAfter,
		Sessions:             st.sessions,
		Retained:             st.retained,
		RetainedWithSessions: st.retainedWithSessions,
		// A sqlite provider waits for a commit: what a client waits on
		// there is written off the event loop (netloop.Handler.Waits, broker.Broker.Waits).
		SessionsWaitOnDisk: st.sessionsOnDisk,
		RetainedWaitOnDisk: st.retainedOnDisk,
		AwaitClient:        st.awaitClient,
		Clock:              clock.Real,
		Logger:             log,
	}
}
