// Package agentbin is how the node agent (cmd/clusterctl-node) reaches the
// nodes: clusterctl pins it by SHA-256, uploads it to the cluster bucket
// under a key named by that hash before a stack needs it, and the nodes
// download it from there and check the hash before they run it.
//
// The agents come from clusterctl itself: `make build` builds them for
// linux/amd64 and linux/arm64 and embeds them (dist/). A clusterctl built
// without them (a plain `go install`) builds them with the local Go
// toolchain from its own module into a cache, or says how to get them.
// Builds are reproducible (-trimpath, no VCS stamp, no build id): the same
// source and toolchain give the same hash.
package agentbin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Archs are the architectures nodes run, in Go's words.
var Archs = []string{"amd64", "arm64"}

// Binary is one build of the node agent.
type Binary struct {
	Arch   string
	Body   []byte
	SHA256 string // hex
}

// New is the binary body for arch.
func New(arch string, body []byte) Binary {
	s := sha256.Sum256(body)
	return Binary{Arch: arch, Body: body, SHA256: hex.EncodeToString(s[:])}
}

// FileName is the name of arch's agent in dist/ and in a cache.
func FileName(arch string) string { return "clusterctl-node-linux-" + arch }

//go:embed dist
var dist embed.FS

// Embedded are the agents built into this clusterctl, by architecture;
// empty when it was built without them.
func Embedded() map[string]Binary {
	out := map[string]Binary{}
	for _, arch := range Archs {
		if b, err := fs.ReadFile(dist, "dist/"+FileName(arch)); err == nil && len(b) > 0 {
			out[arch] = New(arch, b)
		}
	}
	return out
}

// BuildFlags are the flags of a reproducible build of the agent.
func BuildFlags() []string {
	return []string{"build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid="}
}

// Build builds arch's agent with the Go toolchain goCmd from the module
// in moduleDir into dir.
func Build(ctx context.Context, goCmd, moduleDir, dir, arch string) (Binary, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Binary{}, err
	}
	out := filepath.Join(dir, FileName(arch))
	args := append(BuildFlags(), "-o", out, "./cmd/clusterctl-node")
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0", "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return Binary{}, fmt.Errorf("building the node agent for linux/%s: %v: %s", arch, err, strings.TrimSpace(stderr.String()))
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return Binary{}, err
	}
	return New(arch, b), nil
}

// ErrNoAgents: this clusterctl has no agents and cannot build them.
var ErrNoAgents = errors.New("this clusterctl carries no node agents")

// Source says where clusterctl's own module is, to build the agents from.
type Source struct {
	Go        string // the go command; "go" on the PATH when empty
	ModuleDir string // the module's directory; "" when unknown
	CacheDir  string // where built agents are kept
}

// Load returns the agents for every architecture: the embedded ones, else
// ones built from the module's source (kept in the cache), else
// ErrNoAgents with what to do.
func Load(ctx context.Context, src Source) (map[string]Binary, error) {
	if e := Embedded(); len(e) == len(Archs) {
		return e, nil
	}
	goCmd := src.Go
	if goCmd == "" {
		goCmd = "go"
	}
	if _, err := exec.LookPath(goCmd); err != nil || src.ModuleDir == "" {
		return nil, fmt.Errorf("%w and cannot build them (no Go toolchain or no module source): build clusterctl with `make build`, which embeds them", ErrNoAgents)
	}
	out := map[string]Binary{}
	for _, arch := range Archs {
		b, err := Build(ctx, goCmd, src.ModuleDir, src.CacheDir, arch)
		if err != nil {
			return nil, err
		}
		out[arch] = b
	}
	return out, nil
}
