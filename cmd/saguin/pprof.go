//go:build saguin_pprof

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // the /debug/pprof/ routes, on http.DefaultServeMux
	"os"
)

// With the saguin_pprof tag (a build made to profile, never the shipped
// one), SAGUIN_PPROF=host:port serves Go's profiles there, so a CPU profile
// of the broker under load is one curl away (docs/performance.md, "Where a
// QoS 1 round trip's CPU goes"). The shipped binary has no such listener:
// the operations listener is its only HTTP door, and it has no profiles.
func init() {
	registerService("the profile listener", func(env *serviceEnv) (*running, error) {
		addr := os.Getenv("SAGUIN_PPROF")
		if addr == "" {
			return nil, errors.New("this build serves profiles: set SAGUIN_PPROF to the host:port for them")
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("the profile listener on %s: %w", addr, err)
		}
		srv := &http.Server{Handler: http.DefaultServeMux}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				env.log.Error("the profile listener stopped", "error", err)
			}
		}()
		env.log.Info("serving profiles", "address", ln.Addr().String())
		return &running{stop: func(ctx context.Context) error { return srv.Shutdown(ctx) }}, nil
	})
}
