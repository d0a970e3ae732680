package main

import (
	"context"
	"strings"
	"testing"
)

// get reads only what clusterctl docker puts under commands/.
func TestGetOnlyCommands(t *testing.T) {
	for _, key := range []string{"control/swarm-backup.tar.gz", "join/swarm/worker-token", "commands/../control/manager-token", "commandsx/y"} {
		err := getCmd{Key: key, File: "/dev/null"}.Run(context.Background(), &cli{Root: t.TempDir(), Settings: "/node.env"})
		if err == nil || !strings.Contains(err.Error(), "refusing key") {
			t.Errorf("%s: %v", key, err)
		}
	}
}
