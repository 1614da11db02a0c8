//go:build saguin_testhooks

package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// With the saguin_testhooks tag (conformance builds a second binary with it,
// never the shipped one), SIGUSR2 takes a publish-path lock and holds it
// until the next SIGUSR2: how a test sees /health answer 503.
func init() {
	registerService("the test hooks", func(env *serviceEnv) (*running, error) {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGUSR2)
		done := make(chan struct{})
		go func() {
			var release func()
			for {
				select {
				case <-sigs:
					if release == nil {
						release = env.broker.HoldPublishPath()
						env.log.Warn("test hook: holding a publish-path lock")
					} else {
						release()
						release = nil
						env.log.Warn("test hook: publish-path lock let go")
					}
				case <-done:
					if release != nil {
						release()
					}
					return
				}
			}
		}()
		return &running{stop: func(context.Context) error {
			signal.Stop(sigs)
			close(done)
			return nil
		}}, nil
	})
}
