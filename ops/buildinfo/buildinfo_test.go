package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestParseReadsVersionAndRevision(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/saguin-edge/saguin", Version: "v0.0.0-20261201234246-14044c5abcd1+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "14044c5abcd1ef0123456789abcdef0123456789"},
			{Key: "vcs.modified", Value: "true"},
			{Key: "GOARM", Value: "7"},
		},
	}
	in := parse(bi)
	if in.Version != "v0.0.0-20261201234246-14044c5abcd1+dirty" {
		t.Errorf("Version %q", in.Version)
	}
	if in.Revision != "14044c5abcd1+dirty" {
		t.Errorf("Revision %q", in.Revision)
	}
	if in.GoVersion != "go1.26.8" {
		t.Errorf("GoVersion %q", in.GoVersion)
	}
	if in.Platform[len(in.Platform)-3:] != "/v7" {
		t.Errorf("Platform %q does not carry GOARM", in.Platform)
	}
}

func TestParseWithoutStampSaysDevelAndUnknown(t *testing.T) {
	in := parse(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}})
	if in.Version != "devel" || in.Revision != "unknown" {
		t.Fatalf("got %+v, want devel and unknown", in)
	}
	if in := parse(nil); in.Version != "devel" {
		t.Fatalf("no build info: %+v", in)
	}
}
