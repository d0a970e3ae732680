package agentbin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
)

// ModulePath is clusterctl's module.
const ModulePath = "github.com/clusterctl/clusterctl"

// FindModule returns the directory of clusterctl's module source, to build
// the agents from: where this file was compiled from (a build in a
// checkout, or `go install` without -trimpath, whose source sits in the
// module cache), else the module cache's copy of the version the binary
// was built from (`go mod download`, which fetches it if needed). "" when
// neither is found.
func FindModule(ctx context.Context, goCmd string) string {
	_, file, _, _ := runtime.Caller(0)
	bi, _ := debug.ReadBuildInfo()
	return findModule(ctx, goCmd, file, bi)
}

// findModule is FindModule given this file's compiled path and the
// binary's build information (nil: none).
func findModule(ctx context.Context, goCmd, file string, bi *debug.BuildInfo) string {
	if filepath.IsAbs(file) {
		if dir := filepath.Dir(filepath.Dir(filepath.Dir(file))); isModule(dir) {
			return dir
		}
	}
	if bi == nil || bi.Main.Path != ModulePath || !released(bi.Main.Version) {
		return ""
	}
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.CommandContext(ctx, goCmd, "mod", "download", "-json", bi.Main.Path+"@"+bi.Main.Version)
	cmd.Dir = os.TempDir() // outside any module
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	var m struct{ Dir string }
	if json.Unmarshal(out, &m) != nil || !isModule(m.Dir) {
		return ""
	}
	return m.Dir
}

// released tells whether a module version names something the module
// proxy serves: not a checkout's "(devel)" or a modified tree's "+dirty".
func released(v string) bool {
	return strings.HasPrefix(v, "v") && !strings.Contains(v, "+")
}

// isModule tells whether dir holds clusterctl's module with the agent.
func isModule(dir string) bool {
	if dir == "" {
		return false
	}
	if _, err := os.Stat(filepath.Join(dir, "cmd", "clusterctl-node")); err != nil {
		return false
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(mod))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == ModulePath
		}
	}
	return false
}

// DefaultSource is where clusterctl looks for its agents: EnvDir, what it
// embeds, then its module source built with the go command on the PATH
// into the user's cache (os.UserCacheDir()/clusterctl/agents), stamped
// with version.
func DefaultSource(ctx context.Context, version string) Source {
	src := Source{Dir: os.Getenv(EnvDir), Embedded: Embedded(), Go: "go", Version: version}
	if src.Dir != "" {
		return src
	}
	if set, err := fromCompressed(src.Embedded); err == nil && set != nil {
		return src
	}
	src.ModuleDir = FindModule(ctx, src.Go)
	if c, err := os.UserCacheDir(); err == nil {
		src.CacheDir = filepath.Join(c, "clusterctl", "agents")
	}
	return src
}
