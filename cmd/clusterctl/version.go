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

func buildInfo(version string) versionInfo {
	v := versionInfo{Version: version, Commit: commit, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if v.Commit == "" {
		v.Commit = vcsRevision()
	}
	return v
}

func vcsRevision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
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
