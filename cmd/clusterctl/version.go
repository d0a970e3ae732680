package main

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// commit is set at build time (-ldflags "-X main.commit=..."); without it
// the VCS revision the Go toolchain stamped, if any, is used.
var commit = ""

// versionInfo is what `clusterctl version` reports. The JSON keys are a
// public interface.
type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
}

// buildInfo is what this binary knows of itself. A release (make build,
// make release) has its version and commit through -ldflags. Without them,
// `go install ...@v1.2.0` still knows its module version, and a build in a
// checkout the version and revision the Go toolchain stamps; "dev" only
// when neither says anything.
func buildInfo(version string) versionInfo {
	v := versionInfo{Version: version, Commit: commit, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if v.Version == "dev" && ok {
		v.Version = moduleVersion(bi.Main.Version, v.Version)
	}
	if v.Commit == "" && ok {
		v.Commit = vcsRevision(bi)
	}
	return v
}

// moduleVersion is the main module's version as the toolchain stamped it,
// else fallback: "(devel)" and "" say nothing.
func moduleVersion(stamped, fallback string) string {
	if stamped == "" || stamped == "(devel)" {
		return fallback
	}
	return stamped
}

func vcsRevision(bi *debug.BuildInfo) string {
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}

// String is the one-line form: clusterctl v1.2.0 (commit 0123abcd, go1.26.8, linux/amd64).
func (v versionInfo) String() string {
	var details []string
	if v.Commit != "" {
		details = append(details, "commit "+v.Commit)
	}
	details = append(details, v.GoVersion, v.OS+"/"+v.Arch)
	return "clusterctl " + v.Version + " (" + strings.Join(details, ", ") + ")"
}
