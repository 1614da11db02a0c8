// Package machine describes the computer a benchmark ran on, so that a table
// of figures carries what it takes to compare it with another: the processor
// and how many of it, the kernel, the memory, and the disk a sqlite provider
// wrote to.
package machine

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Description is the machine, as the report prints it.
type Description struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	Kernel    string `json:"kernel"`
	Arch      string `json:"arch"`
	MemoryMiB uint64 `json:"memory_mib"`
	Disk      string `json:"disk"` // the device, filesystem and kind (ssd/rotational) holding the scratch directory
	Go        string `json:"go"`
}

// Describe reads the machine from /proc and /sys; scratch is the directory
// the brokers' files go in, whose disk is the one a sqlite figure measured.
// A field the machine does not expose is left as "unknown" rather than
// failing the run: the figures are still worth having.
func Describe(scratch string) Description {
	return Description{
		CPU:       cpuModel(),
		Cores:     runtime.NumCPU(),
		Kernel:    firstLine("/proc/sys/kernel/osrelease"),
		Arch:      runtime.GOARCH,
		MemoryMiB: memTotalMiB(),
		Disk:      disk(scratch),
		Go:        runtime.Version(),
	}
}

// String is the one-line form the Markdown report heads its table with.
func (d Description) String() string {
	return fmt.Sprintf("%s, %d cores (%s), %d MiB RAM, Linux %s, disk %s, %s",
		d.CPU, d.Cores, d.Arch, d.MemoryMiB, d.Kernel, d.Disk, d.Go)
}

func firstLine(path string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	return strings.TrimSpace(line)
}

// cpuModel reads "model name" (x86) or, on ARM where that is absent, "Model"
// or "Hardware".
func cpuModel() string {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	found := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if _, seen := found[k]; !seen && v != "" {
			found[k] = v
		}
	}
	for _, k := range []string{"model name", "Model", "Hardware"} {
		if v, ok := found[k]; ok {
			return v
		}
	}
	return "unknown"
}

func memTotalMiB() uint64 {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	var kb uint64
	for line := range strings.SplitSeq(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &kb)
		}
	}
	return kb / 1024
}

// disk names the mount holding dir: its device, filesystem type and whether
// the kernel calls the device rotational. A tmpfs is said outright, because
// fsync is free there and a sqlite figure measured on one means little.
func disk(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "unknown"
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		abs = resolved
	}
	raw, err := os.ReadFile("/proc/mounts")
	if err != nil {
		return "unknown"
	}
	var dev, fs, best string
	for line := range strings.SplitSeq(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		mnt := f[1]
		if (abs == mnt || strings.HasPrefix(abs, strings.TrimSuffix(mnt, "/")+"/")) && len(mnt) >= len(best) {
			dev, fs, best = f[0], f[2], mnt
		}
	}
	if dev == "" {
		return "unknown"
	}
	kind := ""
	if name, ok := strings.CutPrefix(dev, "/dev/"); ok {
		kind = rotational(name)
	}
	return fmt.Sprintf("%s (%s%s) at %s", dev, fs, kind, best)
}

// rotational reads the kernel's word on a block device. A partition has none
// of its own: its disk's is one directory up from where the partition's
// /sys/class/block link resolves.
func rotational(name string) string {
	paths := []string{filepath.Join("/sys/block", name, "queue", "rotational")}
	if real, err := filepath.EvalSymlinks(filepath.Join("/sys/class/block", name)); err == nil {
		paths = append(paths, filepath.Join(filepath.Dir(real), "queue", "rotational"))
	}
	for _, path := range paths {
		switch firstLine(path) {
		case "0":
			return ", ssd"
		case "1":
			return ", rotational"
		}
	}
	return ""
}

// Load1 is the kernel's one-minute load average: how many threads wanted a
// core, averaged. Beside the core count it says whether the benchmark had
// the machine to itself; -1 where it cannot be read.
func Load1() float64 {
	var load float64
	if _, err := fmt.Sscanf(firstLine("/proc/loadavg"), "%g", &load); err != nil {
		return -1
	}
	return load
}
