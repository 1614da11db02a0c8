// Command mochi is the mochi-mqtt v2 peer of Sagüin's benchmark harness: a
// plain broker on one TCP address, everyone allowed, nothing persisted.
//
// It lives in a module of its own so that the broker's module never depends
// on mochi-mqtt; the harness builds it with `go build` in this directory.
// It runs with mochi's stock capabilities (8,192 pending writes and 8,192
// QoS 1/2 deliveries in flight per client, Receive Maximum 1,024): raising
// the pending-write bound costs memory per connection up front, since mochi
// allocates that channel at connect, which would distort the idle-connection
// scenario. The harness's closed-loop scenarios stay well inside those bounds.
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:1883", "TCP address to listen on")
	flag.Parse()
	if err := run(*addr); err != nil {
		fmt.Fprintln(os.Stderr, "mochi peer:", err)
		os.Exit(1)
	}
}

func run(addr string) error {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	server := mqtt.New(&mqtt.Options{
		Logger: logger,
	})
	if err := server.AddHook(new(auth.AllowHook), nil); err != nil {
		return fmt.Errorf("adding the allow-all hook: %w", err)
	}
	if err := server.AddListener(listeners.NewTCP(listeners.Config{Type: listeners.TypeTCP, ID: "tcp", Address: addr})); err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	if err := server.Serve(); err != nil {
		return fmt.Errorf("serving: %w", err)
	}
	<-stop
	if err := server.Close(); err != nil {
		return fmt.Errorf("closing: %w", err)
	}
	return nil
}
