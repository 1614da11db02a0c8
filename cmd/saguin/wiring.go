package main

import (
	"fmt"
	"log/slog"

	"github.com/saguin-edge/saguin/broker"
	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/config"
	"github.com/saguin-edge/saguin/netloop"
)

// netloopOptions maps the resolved configuration onto netloop's options.
// What cannot be served yet (TLS and WebSocket doors, PROXY headers) refuses
// the start naming its key, rather than leave a configured door closed.
func netloopOptions(cfg *config.Config, b *broker.Broker, log *slog.Logger) (netloop.Options, error) {
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
	for _, ln := range cfg.Broker.MQTT.Listeners {
		switch {
		case ln.ProxyProtocol:
			return o, fmt.Errorf("listener %s: proxy_protocol is not served yet", ln.Name)
		case ln.Kind == config.KindWS:
			return o, fmt.Errorf("listener %s: WebSocket doors are not served yet", ln.Name)
		case ln.TLS != nil:
			return o, fmt.Errorf("listener %s: TLS doors are not served yet", ln.Name)
		case ln.Kind == config.KindTCP:
			o.Doors = append(o.Doors, netloop.Door{Name: ln.Name, Kind: netloop.KindTCP, Address: ln.Address})
		case ln.Kind == config.KindUnix:
			o.Doors = append(o.Doors, netloop.Door{Name: ln.Name, Kind: netloop.KindUnix, Path: ln.Path, Mode: ln.Mode})
		}
	}
	return o, nil
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
