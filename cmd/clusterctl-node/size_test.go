package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// maxAgentSize bounds the stripped agent, which every node fetches at boot:
// 21.7 MB with its AWS calls held as functions (awsn.NewS3 and the like),
// 56 MB with the SDK's clients stored in the adapters' interfaces; 25.0 MB
// with the housekeeping's parts and the engine's version and hash labels.
// The bound catches the interfaces' 56 MB, with room for a feature.
const maxAgentSize = 26_000_000

func TestAgentSize(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "clusterctl-node")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the agent: %v\n%s", err, out)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > maxAgentSize {
		t.Errorf("the stripped agent is %.1f MB, above %.0f MB: is an AWS SDK client stored in an interface? See internal/node/awsn's calls.go",
			float64(fi.Size())/1e6, float64(maxAgentSize)/1e6)
	}
}
