package conformance

import (
	"bufio"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// needTool skips when a Debian tool the test drives is missing (make
// test-deps installs it).
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed (make test-deps)", name)
	}
	return p
}

// TestMosquittoSubReceivesWhatMosquittoPubPublishes is the README's demo: a
// stock subscriber on '#' sees a stock publisher's message, on both protocols.
func TestMosquittoSubReceivesWhatMosquittoPubPublishes(t *testing.T) {
	sub := needTool(t, "mosquitto_sub")
	pub := needTool(t, "mosquitto_pub")
	addr := target(t)
	host, port := hostPort(t, addr)
	for _, v := range []string{"311", "5"} {
		t.Run("V"+v, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			topic := "demo/" + v + "/b"
			s := exec.CommandContext(ctx, sub, "-V", v, "-h", host, "-p", port, "-t", "demo/"+v+"/#", "-v", "-C", "1", "-q", "1")
			out, err := s.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Start(); err != nil {
				t.Fatal(err)
			}
			defer s.Wait()
			lines := make(chan string, 1)
			go func() {
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			// The subscription is in place once the broker says so; publish
			// until the subscriber prints, since a publish before its SUBACK
			// reaches nobody.
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				if err := exec.CommandContext(ctx, pub, "-V", v, "-h", host, "-p", port, "-t", topic, "-m", "hi", "-q", "1").Run(); err != nil {
					t.Fatalf("mosquitto_pub: %v", err)
				}
				select {
				case line, ok := <-lines:
					if !ok {
						t.Fatal("mosquitto_sub ended without printing")
					}
					if strings.TrimSpace(line) != topic+" hi" {
						t.Fatalf("mosquitto_sub printed %q, want %q", line, topic+" hi")
					}
					return
				case <-tick.C:
				case <-ctx.Done():
					t.Fatal("mosquitto_sub printed nothing")
				}
			}
		})
	}
}
