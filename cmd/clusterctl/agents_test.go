package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/clusterctl/clusterctl/internal/agentbin"
	"github.com/clusterctl/clusterctl/internal/userconfig"
)

// TestMain gives every command here stand-in node agents: the commands
// treat an agent as bytes to hash, compress and upload, and building the
// real ones from the module source (internal/agentbin's own tests do)
// would cost the first command that renders about 20 s of both cores.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "clusterctl-agents-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		body := "#!/bin/sh\n# clusterctl-node linux/" + arch + " (cmd tests)\n"
		if err := os.WriteFile(filepath.Join(dir, "clusterctl-node-linux-"+arch), []byte(body), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Setenv(agentbin.EnvDir, dir)
	// No default cluster of the user running the tests reaches them.
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	os.Unsetenv(userconfig.EnvCluster)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
