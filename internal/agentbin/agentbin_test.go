package agentbin

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/clusterctl/clusterctl/internal/errs"
)

// The gzip of a binary is the same bytes every time (no name, no time),
// and holds the binary.
func TestCompressDeterministic(t *testing.T) {
	body := bytes.Repeat([]byte("clusterctl-node "), 10000)
	a, b := Compress(body), Compress(append([]byte(nil), body...))
	if !bytes.Equal(a, b) {
		t.Fatal("two compressions differ")
	}
	if a[3] != 0 || a[4]|a[5]|a[6]|a[7] != 0 {
		t.Errorf("gzip header carries flags %x or a time %x", a[3], a[4:8])
	}
	if out, err := Decompress(a); err != nil || !bytes.Equal(out, body) {
		t.Errorf("decompressed: %v", err)
	}
	bin := New("amd64", body)
	if !bytes.Equal(bin.Gzip(), a) || bin.Short() != bin.SHA256[:12] {
		t.Errorf("binary's gzip or short hash")
	}
}

func writeAgents(t *testing.T, dir string, archs ...string) {
	t.Helper()
	for _, a := range archs {
		if err := os.WriteFile(filepath.Join(dir, FileName(a)), []byte("agent "+a), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// CLUSTERCTL_NODE_AGENTS comes first; a directory lacking an agent is a
// usage error naming the file, on one line.
func TestLoadFromDir(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeAgents(t, dir, "amd64", "arm64")
	embedded := fstest.MapFS{}
	set, err := Load(ctx, Source{Dir: dir, Embedded: embedded})
	if err != nil || set["amd64"].SHA256 != New("amd64", []byte("agent amd64")).SHA256 || len(set) != 2 {
		t.Fatalf("%v %v", set, err)
	}
	os.Remove(filepath.Join(dir, FileName("arm64")))
	_, err = Load(ctx, Source{Dir: dir})
	if errs.ExitCode(err) != errs.ExitUsage || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), "CLUSTERCTL_NODE_AGENTS="+dir+": clusterctl-node-linux-arm64: no such file or directory") {
		t.Errorf("missing agent: %v", err)
	}
	os.WriteFile(filepath.Join(dir, FileName("arm64")), nil, 0o644)
	if _, err := Load(ctx, Source{Dir: dir}); errs.ExitCode(err) != errs.ExitUsage || !strings.Contains(err.Error(), "empty file") {
		t.Errorf("empty agent: %v", err)
	}
	if _, err := Load(ctx, Source{Dir: filepath.Join(dir, "nosuch")}); errs.ExitCode(err) != errs.ExitUsage {
		t.Errorf("no directory: %v", err)
	}
}

func embeddedFS(archs ...string) fstest.MapFS {
	m := fstest.MapFS{}
	for _, a := range archs {
		b := New(a, []byte("embedded "+a))
		m[FileName(a)+".gz"] = &fstest.MapFile{Data: b.Gzip()}
		m[FileName(a)+".sha256"] = &fstest.MapFile{Data: []byte(b.SHA256 + "\n")}
	}
	return m
}

// The embedded agents are taken as they are, without a toolchain; half a
// set is an error, not a reason to build.
func TestLoadEmbedded(t *testing.T) {
	ctx := context.Background()
	set, err := Load(ctx, Source{Embedded: embeddedFS("amd64", "arm64"), Go: "no-such-go-command"})
	if err != nil || len(set) != 2 {
		t.Fatalf("%v %v", set, err)
	}
	for _, a := range Archs {
		body, err := Decompress(set[a].Gzip())
		if err != nil || set[a].SHA256 != New(a, body).SHA256 {
			t.Errorf("%s: %v", a, err)
		}
	}
	if _, err := Load(ctx, Source{Embedded: embeddedFS("amd64")}); err == nil || !strings.Contains(err.Error(), "only linux/amd64 of linux/amd64, linux/arm64") {
		t.Errorf("half a set: %v", err)
	}
	bad := embeddedFS("amd64", "arm64")
	bad[FileName("arm64")+".sha256"] = &fstest.MapFile{Data: []byte("nonsense")}
	if _, err := Load(ctx, Source{Embedded: bad}); err == nil {
		t.Error("a hash file without a hash taken")
	}
}

// WriteCompressed writes what fromCompressed reads: dist/ and the cache
// share one form.
func TestWriteCompressedRoundTrip(t *testing.T) {
	dir := t.TempDir()
	set := Set{"amd64": New("amd64", []byte("a")), "arm64": New("arm64", []byte("b"))}
	if err := WriteCompressed(dir, set); err != nil {
		t.Fatal(err)
	}
	got, err := fromCompressed(os.DirFS(dir))
	if err != nil || got["amd64"].SHA256 != set["amd64"].SHA256 || !bytes.Equal(got["arm64"].Gzip(), set["arm64"].Gzip()) {
		t.Errorf("%v %v", got, err)
	}
}

// Without agents, module source or toolchain, clusterctl says what to do,
// on one line, as a usage error.
func TestLoadNothing(t *testing.T) {
	ctx := context.Background()
	for _, src := range []Source{
		{Embedded: fstest.MapFS{}, Go: "no-such-go-command", ModuleDir: t.TempDir()},
		{Embedded: fstest.MapFS{}},
	} {
		_, err := Load(ctx, src)
		if !errors.Is(err, ErrNoAgents) || errs.ExitCode(err) != errs.ExitUsage || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v", src, err)
			continue
		}
		for _, want := range []string{"make build", "Go toolchain", "CLUSTERCTL_NODE_AGENTS"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q does not say %q", err, want)
			}
		}
	}
}

// fakeGo is a go command that logs its calls and "builds" a file holding
// the source's marker and the flags it was given.
func fakeGo(t *testing.T) (goCmd, log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "log")
	goCmd = filepath.Join(dir, "go")
	script := `#!/bin/sh
echo "$*" >> ` + log + `
if [ "$1" = env ]; then echo go1.fake; exit 0; fi
out=""; prev=""
for a in "$@"; do [ "$prev" = -o ] && out="$a"; prev="$a"; done
{ cat marker; echo "$GOOS/$GOARCH $GOAMD64 $CGO_ENABLED $*"; } > "$out"
`
	if err := os.WriteFile(goCmd, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return goCmd, log
}

func builds(t *testing.T, log string) int {
	b, _ := os.ReadFile(log)
	return strings.Count(string(b), "build ")
}

// Without embedded agents, they are built from the module's source once
// per source, toolchain and version, and kept in the cache: the second
// load builds nothing, a changed .go file or version builds again, a
// changed test file does not.
func TestLoadBuildsAndCaches(t *testing.T) {
	ctx := context.Background()
	goCmd, log := fakeGo(t)
	module := t.TempDir()
	os.WriteFile(filepath.Join(module, "go.mod"), []byte("module "+ModulePath+"\n"), 0o644)
	os.WriteFile(filepath.Join(module, "marker"), []byte("one"), 0o644)
	os.MkdirAll(filepath.Join(module, "internal", "node"), 0o755)
	os.WriteFile(filepath.Join(module, "internal", "node", "node.go"), []byte("package node"), 0o644)
	src := Source{Embedded: fstest.MapFS{}, Go: goCmd, ModuleDir: module, CacheDir: t.TempDir(), Version: "v1.2.3"}
	// The user's environment does not reach the agents' build.
	t.Setenv("GOAMD64", "v3")
	t.Setenv("CGO_ENABLED", "1")

	first, err := Load(ctx, src)
	if err != nil || len(first) != 2 || builds(t, log) != 2 {
		t.Fatalf("%v %v, %d builds", first, err, builds(t, log))
	}
	body, _ := Decompress(first["arm64"].Gzip())
	if !strings.Contains(string(body), "linux/arm64 v1 0 build -trimpath -buildvcs=false -ldflags=-s -w -buildid= -X main.version=v1.2.3 -o ") {
		t.Errorf("built with %q", body)
	}
	again, err := Load(ctx, src)
	if err != nil || builds(t, log) != 2 || again["amd64"].SHA256 != first["amd64"].SHA256 || !bytes.Equal(again["arm64"].Gzip(), first["arm64"].Gzip()) {
		t.Errorf("cache hit: %v, %d builds", err, builds(t, log))
	}
	os.WriteFile(filepath.Join(module, "internal", "node", "node_test.go"), []byte("package node"), 0o644)
	if Load(ctx, src); builds(t, log) != 2 {
		t.Errorf("a test file rebuilt the agents")
	}
	os.WriteFile(filepath.Join(module, "internal", "node", "node.go"), []byte("package node // changed"), 0o644)
	if Load(ctx, src); builds(t, log) != 4 {
		t.Errorf("a changed source was not rebuilt: %d builds", builds(t, log))
	}
	src.Version = "v1.2.4"
	if Load(ctx, src); builds(t, log) != 6 {
		t.Errorf("another version was not rebuilt: %d builds", builds(t, log))
	}
	// Without a cache directory every load builds.
	src.CacheDir = ""
	if Load(ctx, src); builds(t, log) != 8 {
		t.Errorf("%d builds", builds(t, log))
	}
}

// A failed build says so on one line, naming the architecture.
func TestLoadBuildFails(t *testing.T) {
	dir := t.TempDir()
	goCmd := filepath.Join(dir, "go")
	os.WriteFile(goCmd, []byte("#!/bin/sh\n[ \"$1\" = env ] && { echo go1.fake; exit 0; }\necho 'cannot find package' >&2\necho 'second line' >&2\nexit 1\n"), 0o755)
	_, err := Load(context.Background(), Source{Embedded: fstest.MapFS{}, Go: goCmd, ModuleDir: t.TempDir()})
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "building the node agent for linux/amd64") || !strings.Contains(err.Error(), "cannot find package second line") {
		t.Errorf("%v", err)
	}
}

// This package's own source is found where it was compiled from, in a
// build that is not trimmed: the checkout that builds the agents. (The
// tests themselves may be trimmed, as make test builds them: the path is
// the one an untrimmed build records.)
func TestFindModule(t *testing.T) {
	wd, _ := os.Getwd()
	dir := findModule(context.Background(), "no-such-go", filepath.Join(wd, "module.go"), nil)
	if dir != filepath.Dir(filepath.Dir(wd)) {
		t.Errorf("module at %q, want %q", dir, filepath.Dir(filepath.Dir(wd)))
	}
	for v, want := range map[string]bool{"v1.2.3": true, "v0.0.0-20260101000000-0123456789ab": true, "(devel)": false, "v1.2.3+dirty": false, "": false} {
		if released(v) != want {
			t.Errorf("released(%q) = %v", v, !want)
		}
	}
}

// A build is for Linux on the architecture asked, without cgo, stamped
// with the version, and two builds of the same source are the same
// binary: the hash clusterctl pins is what any build of its version
// gives. (A small module stands in for clusterctl's own.)
func TestBuildReproducible(t *testing.T) {
	module := t.TempDir()
	os.MkdirAll(filepath.Join(module, "cmd", "clusterctl-node"), 0o755)
	os.WriteFile(filepath.Join(module, "go.mod"), []byte("module example.com/m\n\ngo 1.22\n"), 0o644)
	os.WriteFile(filepath.Join(module, "cmd", "clusterctl-node", "main.go"), []byte("package main\n\nimport \"os\"\n\nvar version = \"dev\"\n\nfunc main() { os.Stdout.WriteString(version) }\n"), 0o644)
	goCmd := "go" // on the PATH: a test binary built with -trimpath knows no GOROOT
	ctx := context.Background()
	for _, tt := range []struct {
		arch    string
		machine elf.Machine
	}{{"amd64", elf.EM_X86_64}, {"arm64", elf.EM_AARCH64}} {
		a, err := Build(ctx, goCmd, module, t.TempDir(), tt.arch, "v9.8.7")
		if err != nil {
			t.Fatal(err)
		}
		b, err := Build(ctx, goCmd, module, t.TempDir(), tt.arch, "v9.8.7")
		if err != nil {
			t.Fatal(err)
		}
		if a.SHA256 != b.SHA256 || a.Arch != tt.arch {
			t.Errorf("%s: two builds %s and %s", tt.arch, a.SHA256, b.SHA256)
		}
		if !bytes.Contains(a.body, []byte("v9.8.7")) {
			t.Errorf("%s: the version is not stamped", tt.arch)
		}
		f, err := elf.NewFile(bytes.NewReader(a.body))
		if err != nil {
			t.Fatal(err)
		}
		if f.Machine != tt.machine || f.FileHeader.OSABI != elf.ELFOSABI_NONE {
			t.Errorf("%s: built for %v", tt.arch, f.Machine)
		}
		if _, err := f.DynamicSymbols(); err == nil {
			t.Errorf("%s: dynamically linked", tt.arch)
		}
	}
}

// What a cache lookup costs: hashing the module's source (docs/design.md).
func BenchmarkCacheKey(b *testing.B) {
	dir, err := filepath.Abs("../..")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := CacheKey(dir, "go1", "v1"); err != nil {
			b.Fatal(err)
		}
	}
}

// A clusterctl built with `go install ...@VERSION -trimpath` knows no path
// of its source: it asks the go command for the module cache's copy of
// its version; a checkout's "(devel)" build, or another module, has none.
func TestFindModuleOfAVersion(t *testing.T) {
	ctx := context.Background()
	module := t.TempDir()
	os.MkdirAll(filepath.Join(module, "cmd", "clusterctl-node"), 0o755)
	os.WriteFile(filepath.Join(module, "go.mod"), []byte("module "+ModulePath+"\n\ngo 1.22\n"), 0o644)
	dir := t.TempDir()
	goCmd := filepath.Join(dir, "go")
	os.WriteFile(goCmd, []byte("#!/bin/sh\necho \"$*\" >> "+filepath.Join(dir, "log")+"\necho '{\"Path\": \"x\", \"Dir\": \""+module+"\"}'\n"), 0o755)
	bi := func(path, version string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: path, Version: version}}
	}
	trimmed := ModulePath + "/internal/agentbin/module.go"
	if got := findModule(ctx, goCmd, trimmed, bi(ModulePath, "v1.4.0")); got != module {
		t.Errorf("found %q, want %q", got, module)
	}
	if log, _ := os.ReadFile(filepath.Join(dir, "log")); strings.TrimSpace(string(log)) != "mod download -json "+ModulePath+"@v1.4.0" {
		t.Errorf("asked the go command %q", log)
	}
	for _, b := range []*debug.BuildInfo{bi(ModulePath, "(devel)"), bi("example.com/other", "v1.4.0"), nil} {
		if got := findModule(ctx, goCmd, trimmed, b); got != "" {
			t.Errorf("%+v: found %q", b, got)
		}
	}
	// A path that is not clusterctl's module is not taken for it.
	if got := findModule(ctx, "no-such-go", filepath.Join(t.TempDir(), "internal", "agentbin", "module.go"), nil); got != "" {
		t.Errorf("found %q", got)
	}
}
