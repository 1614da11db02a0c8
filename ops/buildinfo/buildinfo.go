// Package buildinfo reads what the Go toolchain stamped into the binary - the
// main module's version and the VCS revision it was built from - so that
// `saguin --version` and the saguin_build_info metric say the same thing and
// neither is a hand-kept constant that goes stale.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Info is what a build says about itself.
type Info struct {
	// Version is the main module's version as the toolchain stamped it: a
	// tag (v1.2.0), a pseudo-version (v0.0.0-20261201234246-14044c5abcd1),
	// either with +dirty when the tree had uncommitted changes, or "devel"
	// when the build carried none (go run, a tree without VCS).
	Version string
	// Revision is the first 12 hex digits of the VCS revision, +dirty when
	// modified, or "unknown".
	Revision string
	// GoVersion is the toolchain that built the binary.
	GoVersion string
	// Platform is GOOS/GOARCH, with the GOARM level on 32-bit ARM.
	Platform string
}

// Read returns the running binary's build information.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return parse(nil)
	}
	return parse(bi)
}

func parse(bi *debug.BuildInfo) Info {
	in := Info{Version: "devel", Revision: "unknown", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		return in
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		in.Version = v
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		case "GOARM":
			in.Platform += "/v" + s.Value
		}
	}
	if len(in.Revision) > 12 {
		in.Revision = in.Revision[:12]
	}
	if dirty && in.Revision != "unknown" {
		in.Revision += "+dirty"
	}
	if bi.GoVersion != "" {
		in.GoVersion = bi.GoVersion
	}
	return in
}

// String is the one line `saguin --version` prints.
func (in Info) String() string {
	return "saguin " + in.Version + " (revision " + in.Revision + ", " + in.GoVersion + ", " + in.Platform + ")"
}
