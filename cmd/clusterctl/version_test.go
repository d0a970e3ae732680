package main

import (
	"runtime/debug"
	"testing"
)

// Without -ldflags, the version is what the toolchain stamped: the module
// version of `go install ...@v1.2.0`, or of a build in a checkout; "dev"
// only when it stamped nothing. The revision comes from the VCS stamp.
func TestVersionWithoutLdflags(t *testing.T) {
	for _, tt := range []struct{ stamped, want string }{
		{"v1.2.0", "v1.2.0"},
		{"v0.0.0-20261128141500-0c0735a72f85+dirty", "v0.0.0-20261128141500-0c0735a72f85+dirty"},
		{"(devel)", "dev"},
		{"", "dev"},
	} {
		if got := moduleVersion(tt.stamped, "dev"); got != tt.want {
			t.Errorf("module version %q: %q, want %q", tt.stamped, got, tt.want)
		}
	}
	bi := &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0c0735a72f85aa11bb22cc33dd44ee55ff667788"}, {Key: "vcs.modified", Value: "true"}}}
	if got := vcsRevision(bi); got != "0c0735a72f85-dirty" {
		t.Errorf("revision %q", got)
	}
	if got := vcsRevision(&debug.BuildInfo{}); got != "" {
		t.Errorf("revision without a stamp %q", got)
	}
}
