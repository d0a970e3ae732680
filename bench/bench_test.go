package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The baseline scripts print what clusterctl prints, byte for byte: the
// benchmark compares their times only once it has compared their answers,
// and a field clusterctl gained without the baseline stopped it there.
func TestBaselineAgreesWithClusterctl(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "clusterctl")
	// Stand-in node agents: nodes never run on moto, and clusterctl only
	// hashes and uploads them.
	for _, arch := range []string{"amd64", "arm64"} {
		if err := os.WriteFile(filepath.Join(dir, "clusterctl-node-linux-"+arch), []byte("#!/bin/sh\n# "+arch+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("CLUSTERCTL_NODE_AGENTS", dir)
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/clusterctl").CombinedOutput(); err != nil {
		t.Fatalf("building clusterctl: %v\n%s", err, out)
	}
	b := &bench{ctx: t.Context(), started: time.Now(), listCallsOK: true, o: options{
		bin: bin, baseline: "baseline", groups: 1, nodes: 3, itype: "c5.large", checkpoints: []int{1}, checkOnly: true,
	}}
	err := b.run()
	b.cleanup()
	if err != nil {
		t.Fatal(err)
	}
}
