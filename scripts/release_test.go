// Package scripts holds the tests of the shell scripts beside them.
package scripts

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The release as `make release` builds it (scripts/release.sh): one binary
// per platform, of that platform, each embedding both node agents, dated
// at the commit, listed in SHA256SUMS with its hash; a second build of the
// same commit gives the same bytes.
//
// A cross build compiles the SDK's clients again for its platform: about
// 6 minutes of CPU each on a cold cache, as CI's is, and the arm64 node
// agent every release embeds is one already. So the release's own script
// builds the host's platform here, with both agents, unless
// CLUSTERCTL_RELEASE_TARGETS names others (all four: "linux/amd64
// linux/arm64 darwin/amd64 darwin/arm64"); the others are the same loop
// with other GOOS and GOARCH. Reproducibility is checked on linux/amd64,
// built again.
func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds clusterctl and both node agents")
	}
	machines := map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64}
	cpus := map[string]macho.Cpu{"darwin/amd64": macho.CpuAmd64, "darwin/arm64": macho.CpuArm64}
	targets := strings.Fields(os.Getenv("CLUSTERCTL_RELEASE_TARGETS"))
	for _, tg := range targets {
		if _, linux := machines[tg]; !linux && cpus[tg] == 0 {
			t.Fatalf("CLUSTERCTL_RELEASE_TARGETS: %q is not a release target (linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)", tg)
		}
	}
	if !slices.Contains(targets, "linux/amd64") {
		targets = append(targets, "linux/amd64") // run here, and built twice
	}
	// The checkout's own version: release.sh rebuilds the embedded agents
	// stamped with it, as make build does.
	version := strings.TrimSpace(run(t, "./version.sh"))
	epoch := strings.TrimSpace(run(t, "git", "log", "-1", "--format=%ct"))
	first, second := t.TempDir(), t.TempDir()
	release(t, first, version, strings.Join(targets, " "))

	sums := readSums(t, filepath.Join(first, "SHA256SUMS"))
	entries, err := os.ReadDir(first)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(targets)+1 || len(sums) != len(targets) {
		t.Errorf("dist holds %d files, SHA256SUMS lists %d; want %d binaries and SHA256SUMS", len(entries), len(sums), len(targets))
	}
	var agentHashes []string
	for _, arch := range []string{"amd64", "arm64"} {
		b, err := os.ReadFile(filepath.Join("..", "internal", "agentbin", "dist", "clusterctl-node-linux-"+arch+".sha256"))
		if err != nil {
			t.Fatal(err)
		}
		agentHashes = append(agentHashes, strings.Fields(string(b))[0])
	}
	for _, tg := range targets {
		goos, arch, _ := strings.Cut(tg, "/")
		name := "clusterctl-" + version + "-" + goos + "-" + arch
		path := filepath.Join(first, name)
		body, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		sum := sha256.Sum256(body)
		if sums[name] != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: SHA256SUMS says %q, the file hashes to %x", name, sums[name], sum)
		}
		switch goos {
		case "linux":
			f, err := elf.NewFile(bytes.NewReader(body))
			if err != nil || f.Machine != machines[tg] || f.Type != elf.ET_EXEC {
				t.Errorf("%s: not a %s executable: %v", name, machines[tg], err)
			}
		case "darwin":
			f, err := macho.NewFile(bytes.NewReader(body))
			if err != nil || f.Cpu != cpus[tg] || f.Type != macho.TypeExec {
				t.Errorf("%s: not a %s Mach-O executable: %v", name, cpus[tg], err)
			}
		}
		for _, h := range agentHashes {
			if !bytes.Contains(body, []byte(h)) {
				t.Errorf("%s does not embed the node agent of SHA-256 %s", name, h)
			}
		}
		if fi, err := os.Stat(path); err != nil || strconv.FormatInt(fi.ModTime().Unix(), 10) != epoch {
			t.Errorf("%s: dated %v, want the commit's time %s", name, fi.ModTime(), epoch)
		}
	}
	// The host's binary says its version and commit.
	host := "clusterctl-" + version + "-linux-amd64"
	if out := run(t, filepath.Join(first, host), "version"); !strings.HasPrefix(out, "clusterctl "+version+" (commit ") {
		t.Errorf("version: %q", out)
	}

	release(t, second, version, "linux/amd64")
	again, err := os.ReadFile(filepath.Join(second, host))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(again); sums[host] != hex.EncodeToString(sum[:]) {
		t.Errorf("a second build of the same commit differs: %x, first %s", sum, sums[host])
	}
}

// release runs scripts/release.sh into dist for the targets.
func release(t *testing.T, dist, version, targets string) {
	t.Helper()
	start := time.Now()
	cmd := exec.Command("./release.sh")
	cmd.Env = append(os.Environ(), "DIST="+dist, "VERSION="+version, "TARGETS="+targets)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release.sh (%s): %v\n%s", targets, err, out)
	}
	t.Logf("release.sh %s: %s", targets, time.Since(start).Round(time.Second))
}

func readSums(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		hash, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q is not sha256sum's", sc.Text())
		}
		sums[name] = hash
	}
	return sums
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return string(out)
}
