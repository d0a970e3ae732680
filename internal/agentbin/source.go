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
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/clusterctl/clusterctl/internal/errs"
)

// EnvDir names the directory of agents that takes precedence over every
// other source: FileName(arch) for each arch of Archs.
const EnvDir = "CLUSTERCTL_NODE_AGENTS"

//go:embed dist
var dist embed.FS

// Source says where Load looks for the agents.
type Source struct {
	// Dir is the directory of EnvDir ("" when unset).
	Dir string
	// Embedded holds FileName(arch)+".gz" and +".sha256" at its root, as
	// `make build` writes them (nil: none).
	Embedded fs.FS
	// Go is the go command that builds the agents ("go" on the PATH when
	// empty); ModuleDir clusterctl's module source ("" when unknown, see
	// FindModule); CacheDir where built agents are kept ("" : none).
	Go, ModuleDir, CacheDir string
	// Version is what the agents built here are stamped with.
	Version string
	// Say, when set, is told before a build (which takes a while).
	Say func(string)
}

// Embedded are the agents `make build` put into this clusterctl (an
// empty directory otherwise).
func Embedded() fs.FS {
	sub, _ := fs.Sub(dist, "dist") // a static, valid path
	return sub
}

// ErrNoAgents: clusterctl has no node agents and cannot build them.
var ErrNoAgents = errors.New("no node agents")

// Load returns the agents for every architecture, from the first source
// that has them: Dir, the embedded agents, the cache or a build from the
// module's source. A Dir that lacks one, and a clusterctl that has no way
// to the agents, are usage errors saying what to do: nothing was created.
func Load(ctx context.Context, src Source) (Set, error) {
	if src.Dir != "" {
		return fromDir(src.Dir)
	}
	if src.Embedded != nil {
		set, err := fromCompressed(src.Embedded)
		if err != nil {
			return nil, fmt.Errorf("the node agents embedded in clusterctl: %w", err)
		}
		if set != nil {
			return set, nil
		}
	}
	return built(ctx, src)
}

// fromDir reads the agents of the EnvDir directory.
func fromDir(dir string) (Set, error) {
	set := Set{}
	for _, arch := range Archs {
		path := filepath.Join(dir, FileName(arch))
		body, err := os.ReadFile(path)
		if err == nil && len(body) == 0 {
			err = errors.New("empty file")
		}
		if err != nil {
			return nil, errs.Usage("%s=%s: %s: %v (the directory holds the node agents %s and %s)", EnvDir, dir, FileName(arch), shortPathError(err), FileName("amd64"), FileName("arm64"))
		}
		set[arch] = New(arch, body)
	}
	return set, nil
}

// shortPathError drops the path an *fs.PathError repeats.
func shortPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

var hexSHA256 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// fromCompressed reads the agents in the form of dist/ and of the cache;
// nil, nil when fsys holds none of them.
func fromCompressed(fsys fs.FS) (Set, error) {
	set := Set{}
	for _, arch := range Archs {
		gz, err := fs.ReadFile(fsys, FileName(arch)+".gz")
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sum, err := fs.ReadFile(fsys, FileName(arch)+".sha256")
		if err != nil {
			return nil, err
		}
		sha := strings.TrimSpace(string(sum))
		if !hexSHA256.MatchString(sha) {
			return nil, fmt.Errorf("%s.sha256 holds no SHA-256", FileName(arch))
		}
		set[arch] = compressed(arch, sha, gz)
	}
	switch len(set) {
	case 0:
		return nil, nil
	case len(Archs):
		return set, nil
	}
	return nil, fmt.Errorf("only %s of %s", archList(slices.Collect(maps.Keys(set))), archList(Archs))
}

// noAgents is the error of a clusterctl with no way to its agents.
func noAgents(why string) error {
	return errs.AsUsage(fmt.Errorf("%w: %s; build clusterctl with `make build` (it embeds them), install a Go toolchain (clusterctl builds them on first use), or set %s to a directory holding %s and %s",
		ErrNoAgents, why, EnvDir, FileName("amd64"), FileName("arm64")))
}

// built returns the agents built from the module's source: from the cache
// when this source was built before with this toolchain and version, else
// built now and kept there.
func built(ctx context.Context, src Source) (Set, error) {
	goCmd := src.Go
	if goCmd == "" {
		goCmd = "go"
	}
	if src.ModuleDir == "" {
		return nil, noAgents("this clusterctl carries none and its module source is not on this machine")
	}
	if _, err := exec.LookPath(goCmd); err != nil {
		return nil, noAgents("this clusterctl carries none and there is no Go toolchain (" + goCmd + ") to build them")
	}
	goVersion, err := toolchain(ctx, goCmd)
	if err != nil {
		return nil, err
	}
	key, err := CacheKey(src.ModuleDir, goVersion, src.Version)
	if err != nil {
		return nil, fmt.Errorf("reading clusterctl's module source: %w", err)
	}
	var dir string
	if src.CacheDir != "" {
		dir = filepath.Join(src.CacheDir, key)
		if set, err := fromCompressed(os.DirFS(dir)); err == nil && set != nil {
			return set, nil
		}
	}
	if src.Say != nil {
		kept := ""
		if dir != "" {
			kept = ", kept in " + dir
		}
		src.Say(fmt.Sprintf("Building the node agent (%s) from %s with %s (%s)%s\n", archList(Archs), src.ModuleDir, goCmd, goVersion, kept))
	}
	set, err := BuildAll(ctx, goCmd, src.ModuleDir, src.Version)
	if err != nil {
		return nil, err
	}
	if dir != "" {
		// A cache that cannot be written costs a build next time, nothing more.
		_ = WriteCompressed(dir, set)
	}
	return set, nil
}

// toolchain is the version of the go command (`go env GOVERSION`).
func toolchain(ctx context.Context, goCmd string) (string, error) {
	cmd := exec.CommandContext(ctx, goCmd, "env", "GOVERSION")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if v := strings.TrimSpace(string(out)); err == nil && v != "" {
		return v, nil
	}
	return "", fmt.Errorf("asking %s its version: %v %s", goCmd, err, strings.TrimSpace(stderr.String()))
}

// CacheKey names a build of the agents: the hash of the module's .go
// files (tests aside), go.mod and go.sum, the toolchain's version, the
// version stamped and the build's flags and environment. A changed source, toolchain or
// version is built anew; the same ones are found in the cache.
func CacheKey(moduleDir, goVersion, version string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00", goVersion, version, strings.Join(BuildFlags(version), " "), strings.Join(BuildEnv(""), " "))
	var files []string
	err := filepath.WalkDir(moduleDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != moduleDir && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			if path != moduleDir {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if (strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go")) || (filepath.Dir(path) == moduleDir && (name == "go.mod" || name == "go.sum")) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	slices.Sort(files)
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		rel, _ := filepath.Rel(moduleDir, f)
		sum := sha256.Sum256(body)
		fmt.Fprintf(h, "%s\x00%x\x00", filepath.ToSlash(rel), sum)
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}
