package conformance

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/saguin-edge/saguin/codec"
)

// BenchmarkIdleConnectionMemory is the broker process's resident memory per
// idle MQTT 5 connection, at 1,000 and 10,000 connections: VmRSS after the
// connections are admitted, less VmRSS before, divided by the count. Run it
// once per size:
//
//	go test -run '^$' -bench IdleConnectionMemory -benchtime 1x ./conformance/
func BenchmarkIdleConnectionMemory(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("connections=%d", n), func(b *testing.B) {
			br := startBroker(b, brokerConfig{Limits: "max_connections: 12000\nmax_connect_rate: none"})
			before := vmRSS(b, br.cmd.Process.Pid)
			conns := make([]net.Conn, n)
			var wg sync.WaitGroup
			var mu sync.Mutex
			var failed error
			const workers = 16
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < n; i += workers {
						nc, err := net.Dial("tcp", br.addr)
						if err == nil {
							p := &codec.Connect{Version: codec.Version5, CleanStart: true, ClientID: []byte("idle-" + strconv.Itoa(i))}
							_, err = nc.Write(p.Append(nil, codec.Version5))
						}
						if err == nil {
							var ack [64]byte
							_, err = nc.Read(ack[:])
						}
						if err != nil {
							mu.Lock()
							failed = err
							mu.Unlock()
							return
						}
						conns[i] = nc
					}
				}()
			}
			wg.Wait()
			defer func() {
				for _, nc := range conns {
					if nc != nil {
						nc.Close()
					}
				}
			}()
			if failed != nil {
				b.Fatal(failed)
			}
			after := vmRSS(b, br.cmd.Process.Pid)
			b.ReportMetric(float64(after-before)/float64(n), "B/conn")
			b.ReportMetric(float64(after)/(1<<20), "MiB-rss")
		})
	}
}

// vmRSS reads a process's resident set size in bytes.
func vmRSS(b *testing.B, pid int) int64 {
	b.Helper()
	return procRSS(b, pid)
}

// procRSS reads VmRSS from /proc.
func procRSS(b testing.TB, pid int) int64 {
	b.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
