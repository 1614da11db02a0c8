package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/saguin-edge/saguin/config"
)

// servedChannelTypes are the channel types this build has an engine for.
// Each channel issue adds its type here when it wires its engine in; until
// then a configuration naming the type refuses to start, because a broker
// that started anyway would serve the channel's topics as broadcast, and an
// operator who trusted the file would lose every record published while a
// consumer was away (issue 11, "Nothing configured is ever silently ignored").
var servedChannelTypes = map[string]bool{}

// notServed lists, one sentence each, every configured part this build
// does not serve yet: a channel of a type with no engine, the operations
// listener and bridges while no service of that name is registered, and the
// first door or credential netloop cannot open yet. Empty when everything
// the file names is served.
func notServed(cfg *config.Config) []string {
	var parts []string
	for _, ch := range cfg.Channels {
		if !servedChannelTypes[ch.Type] {
			parts = append(parts, fmt.Sprintf("channel %s: type %s is not served yet; a broker started anyway would serve its topics (%s) as broadcast and keep none of them", ch.Name, ch.Type, ch.Filter))
		}
	}
	if cfg.Broker.Operations != nil && !serviceRegistered("operations") {
		parts = append(parts, "broker.operations: the operations listener is not served yet")
	}
	if len(cfg.Bridges) > 0 && !serviceRegistered("bridges") {
		for _, br := range cfg.Bridges {
			parts = append(parts, fmt.Sprintf("bridges.%s: bridges are not served yet; a broker started anyway would neither dial %s nor carry its topics", br.Name, br.Peer))
		}
	}
	if _, err := netloopOptions(cfg, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		parts = append(parts, err.Error())
	}
	return parts
}

// serviceRegistered reports whether a service called name runs beside the
// MQTT doors (registerService).
func serviceRegistered(name string) bool {
	for _, s := range services {
		if s.name == name {
			return true
		}
	}
	return false
}
