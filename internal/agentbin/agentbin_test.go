package agentbin

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Without agents and without a toolchain, clusterctl says what to do.
func TestLoadWithoutToolchain(t *testing.T) {
	if len(Embedded()) == len(Archs) {
		t.Skip("this build embeds the agents")
	}
	_, err := Load(context.Background(), Source{Go: "no-such-go-command", ModuleDir: "/x"})
	if !errors.Is(err, ErrNoAgents) || !strings.Contains(err.Error(), "make build") {
		t.Errorf("%v", err)
	}
	if _, err := exec.LookPath("no-such-go-command"); err == nil {
		t.Fatal("the test's command exists")
	}
}

// A build is for Linux on the architecture asked, without cgo, and two
// builds of the same source are the same binary: the hash clusterctl pins
// is what any build of its version gives. (A small module stands in for
// clusterctl's own, which takes minutes to build.)
func TestBuildReproducible(t *testing.T) {
	module := t.TempDir()
	os.MkdirAll(filepath.Join(module, "cmd", "clusterctl-node"), 0o755)
	os.WriteFile(filepath.Join(module, "go.mod"), []byte("module example.com/m\n\ngo 1.22\n"), 0o644)
	os.WriteFile(filepath.Join(module, "cmd", "clusterctl-node", "main.go"), []byte("package main\n\nimport \"os\"\n\nfunc main() { os.Exit(0) }\n"), 0o644)
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	ctx := context.Background()
	for _, tt := range []struct {
		arch    string
		machine elf.Machine
	}{{"amd64", elf.EM_X86_64}, {"arm64", elf.EM_AARCH64}} {
		a, err := Build(ctx, goCmd, module, t.TempDir(), tt.arch)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Build(ctx, goCmd, module, t.TempDir(), tt.arch)
		if err != nil {
			t.Fatal(err)
		}
		if a.SHA256 != b.SHA256 || a.Arch != tt.arch {
			t.Errorf("%s: two builds %s and %s", tt.arch, a.SHA256, b.SHA256)
		}
		f, err := elf.NewFile(bytes.NewReader(a.Body))
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
