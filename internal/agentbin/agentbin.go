// Package agentbin is how the node agent (cmd/clusterctl-node) reaches the
// nodes: clusterctl pins it by the SHA-256 of the binary, uploads it
// gzip-compressed to the cluster bucket under a key named by that hash
// before a stack needs it, and the nodes download it from there, gunzip it
// and check the hash before they run it.
//
// Where the agents come from, in this order (Load): a directory named by
// CLUSTERCTL_NODE_AGENTS; the agents embedded in clusterctl (`make build`
// builds them for linux/amd64 and linux/arm64 into dist/); a build with the
// local Go toolchain from clusterctl's own module source, kept in the
// user's cache; else an error saying what to do. Builds are reproducible
// (-trimpath, no VCS stamp, no build id, the version given): the same
// source, version and toolchain give the same hash.
package agentbin

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Archs are the architectures nodes run, in Go's words.
var Archs = []string{"amd64", "arm64"}

// Binary is one build of the node agent: its hash (of the binary itself,
// what nodes check) and its gzip form (what is uploaded), made from the
// binary when first asked for.
type Binary struct {
	Arch   string
	SHA256 string // hex, of the uncompressed binary

	body []byte // the binary, when the source gave it uncompressed
	once sync.Once
	gz   []byte
}

// New is arch's agent made of the binary body.
func New(arch string, body []byte) *Binary {
	s := sha256.Sum256(body)
	return &Binary{Arch: arch, SHA256: hex.EncodeToString(s[:]), body: body}
}

// compressed is arch's agent of the given hash, already compressed.
func compressed(arch, sha string, gz []byte) *Binary {
	b := &Binary{Arch: arch, SHA256: sha, gz: gz}
	b.once.Do(func() {})
	return b
}

// Gzip is the compressed binary, as uploaded (Compress).
func (b *Binary) Gzip() []byte {
	b.once.Do(func() { b.gz = Compress(b.body) })
	return b.gz
}

// Short is the hash as the plan shows it.
func (b *Binary) Short() string { return Short(b.SHA256) }

// Short shortens a hash for people (12 hex digits, as git and docker do).
func Short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// Compress gzips body deterministically: no name, no modification time,
// so that the same binary always gives the same object (with the same
// toolchain's compress/flate).
func Compress(body []byte) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression) // a valid level: no error
	w.Write(body)                                              // a bytes.Buffer does not fail
	w.Close()
	return buf.Bytes()
}

// Decompress is the binary a gzip holds.
func Decompress(gz []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

// Set is the agents for every architecture, by arch.
type Set map[string]*Binary

// Hashes is the SHA-256 of each arch's agent, as the stacks pin them.
func (s Set) Hashes() map[string]string {
	out := map[string]string{}
	for arch, b := range s {
		out[arch] = b.SHA256
	}
	return out
}

// Sorted is the set's agents in the order of Archs.
func (s Set) Sorted() []*Binary {
	var out []*Binary
	for _, arch := range Archs {
		if b, ok := s[arch]; ok {
			out = append(out, b)
		}
	}
	return out
}

// FileName is the name of arch's agent binary in CLUSTERCTL_NODE_AGENTS;
// dist/ and the cache hold FileName+".gz" and FileName+".sha256".
func FileName(arch string) string { return "clusterctl-node-linux-" + arch }

// BuildFlags are the go command's arguments of a reproducible build of the
// agent stamped with version (main.version; none when empty): no path, VCS
// stamp or build id in the binary, so the same source, version and
// toolchain give the same bytes.
func BuildFlags(version string) []string {
	ld := "-s -w -buildid="
	if version != "" {
		ld += " -X main.version=" + version
	}
	return []string{"build", "-trimpath", "-buildvcs=false", "-ldflags=" + ld}
}

// BuildEnv is the environment of a build for arch: Linux, no cgo, the
// module's own go.mod and go.sum as they are, no workspace, and the
// baseline of each architecture whatever the user's environment says
// (GOAMD64=v3 would give an agent some instances cannot run, and another
// hash).
func BuildEnv(arch string) []string {
	return []string{"GOOS=linux", "GOARCH=" + arch, "CGO_ENABLED=0", "GOFLAGS=-mod=readonly", "GOWORK=off",
		"GOAMD64=v1", "GOARM64=v8.0", "GOEXPERIMENT="}
}

// Build builds arch's agent stamped with version, with the Go toolchain
// goCmd, from the module in moduleDir, into dir.
func Build(ctx context.Context, goCmd, moduleDir, dir, arch, version string) (*Binary, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	out := filepath.Join(dir, FileName(arch))
	args := append(BuildFlags(version), "-o", out, "./cmd/clusterctl-node")
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), BuildEnv(arch)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.Join(strings.Fields(stderr.String()), " ")
		return nil, fmt.Errorf("building the node agent for linux/%s in %s: %v: %s", arch, moduleDir, err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	return New(arch, b), nil
}

// BuildAll builds the agent for every arch of Archs (Build), in a
// directory removed afterwards: the binaries are held in the Set.
func BuildAll(ctx context.Context, goCmd, moduleDir, version string) (Set, error) {
	tmp, err := os.MkdirTemp("", "clusterctl-node-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	set := Set{}
	for _, arch := range Archs {
		b, err := Build(ctx, goCmd, moduleDir, tmp, arch, version)
		if err != nil {
			return nil, err
		}
		set[arch] = b
	}
	return set, nil
}

// WriteCompressed writes each agent of set into dir as the gzip (FileName
// + ".gz") and its hash (+ ".sha256"): the form of dist/ and of the cache.
// Each file is written whole or not at all (renamed into place).
func WriteCompressed(dir string, set Set) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, b := range set.Sorted() {
		for _, f := range []struct {
			name string
			body []byte
		}{{FileName(b.Arch) + ".gz", b.Gzip()}, {FileName(b.Arch) + ".sha256", []byte(b.SHA256 + "\n")}} {
			if err := writeFile(filepath.Join(dir, f.name), f.body); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeFile(path string, body []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(body); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// archList is "linux/amd64, linux/arm64" for the archs given.
func archList(archs []string) string {
	var out []string
	for _, a := range archs {
		out = append(out, "linux/"+a)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
