// Package proc reads what the Linux kernel has counted for a process: CPU
// time and resident memory, from /proc. The benchmark harness charges each
// broker with these, so a broker that is fast because it burns both cores is
// seen to do so.
package proc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// userHZ is the unit of utime and stime in /proc/<pid>/stat. Linux fixes it
// at 100 for userspace on every architecture (USER_HZ), whatever the kernel's
// own tick rate is, so it needs no sysconf (and no cgo) to learn.
const userHZ = 100

// Usage is one reading of a process.
type Usage struct {
	CPU     time.Duration // user + system time of every thread, living and exited
	RSS     uint64        // resident set size now, bytes (VmRSS)
	PeakRSS uint64        // the largest resident set size so far, bytes (VmHWM)
}

// Read takes one reading of process pid.
func Read(pid int) (Usage, error) {
	cpu, err := readCPU(pid)
	if err != nil {
		return Usage{}, err
	}
	rss, peak, err := readMemory(pid)
	if err != nil {
		return Usage{}, err
	}
	return Usage{CPU: cpu, RSS: rss, PeakRSS: peak}, nil
}

// RSS reads only the resident set size, for sampling on a short period.
func RSS(pid int) (uint64, error) {
	rss, _, err := readMemory(pid)
	return rss, err
}

func readCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading cpu time of pid %d: %w", pid, err)
	}
	return parseStatCPU(raw)
}

// parseStatCPU takes utime and stime, fields 14 and 15 of /proc/<pid>/stat.
// The command name (field 2) is in parentheses and may itself hold spaces or
// parentheses, so fields are counted from the last ')'.
func parseStatCPU(raw []byte) (time.Duration, error) {
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return 0, fmt.Errorf("parsing /proc stat: no command name")
	}
	fields := bytes.Fields(raw[end+1:])
	// fields[0] is field 3 (state), so field n is fields[n-3].
	if len(fields) < 13 {
		return 0, fmt.Errorf("parsing /proc stat: %d fields after the command name", len(fields))
	}
	utime, err := strconv.ParseUint(string(fields[11]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parsing /proc stat utime: %w", err)
	}
	stime, err := strconv.ParseUint(string(fields[12]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parsing /proc stat stime: %w", err)
	}
	return time.Duration(utime+stime) * (time.Second / userHZ), nil
}

func readMemory(pid int) (rss, peak uint64, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("reading memory of pid %d: %w", pid, err)
	}
	return parseStatusMemory(raw)
}

// parseStatusMemory takes VmRSS and VmHWM from /proc/<pid>/status, which the
// kernel writes in kB.
func parseStatusMemory(raw []byte) (rss, peak uint64, err error) {
	var haveRSS, havePeak bool
	for line := range bytes.SplitSeq(raw, []byte{'\n'}) {
		name, value, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		var dst *uint64
		switch string(name) {
		case "VmRSS":
			dst, haveRSS = &rss, true
		case "VmHWM":
			dst, havePeak = &peak, true
		default:
			continue
		}
		kb, err := strconv.ParseUint(string(bytes.TrimSuffix(bytes.TrimSpace(value), []byte(" kB"))), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("parsing /proc status %s: %w", name, err)
		}
		*dst = kb * 1024
	}
	if !haveRSS || !havePeak {
		return 0, 0, fmt.Errorf("parsing /proc status: VmRSS or VmHWM missing (a zombie has neither)")
	}
	return rss, peak, nil
}

// MachineBusy is the CPU time every core of the machine has spent on
// anything but idling and waiting for I/O since boot (user, nice, system,
// irq, softirq; steal - time the hypervisor gave another guest - is not
// ours to see being used), from /proc/stat. Over a window, minus the
// broker's and the generator's own, it is what the rest of the machine took.
func MachineBusy() (time.Duration, error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("reading /proc/stat: %w", err)
	}
	return parseMachineBusy(raw)
}

// parseMachineBusy takes the first line of /proc/stat, "cpu  user nice
// system idle iowait irq softirq steal ...", in USER_HZ ticks.
func parseMachineBusy(raw []byte) (time.Duration, error) {
	line, _, _ := bytes.Cut(raw, []byte("\n"))
	fields := bytes.Fields(line)
	if len(fields) < 8 || string(fields[0]) != "cpu" {
		return 0, fmt.Errorf("parsing /proc/stat: the first line is not the machine's cpu total: %q", line)
	}
	var busy uint64
	for _, i := range []int{1, 2, 3, 6, 7} { // user nice system irq softirq
		n, err := strconv.ParseUint(string(fields[i]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing /proc/stat field %d: %w", i, err)
		}
		busy += n
	}
	return time.Duration(busy) * (time.Second / userHZ), nil
}
