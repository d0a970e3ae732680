package main

import (
	"strings"
	"testing"
	"time"
)

// --node takes an instance id as EC2 writes them: i- and 8 or 17 hex
// digits, as every other command that names a node.
func TestLogsNodeFlag(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		node, err string
	}{
		{"i-0123456789abcdef0", ""},
		{"i-01234567", ""},
		{"i-0123456789", `invalid --node "i-0123456789"`},
		{"i-0123456789ABCDEF0", `invalid --node "i-0123456789ABCDEF0"`},
		{"0123456789abcdef0", `invalid --node "0123456789abcdef0"`},
	} {
		c := &LogsCmd{Cluster: "core", Node: tc.node}
		req, err := c.request(now)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("--node %s: %v", tc.node, err)
		case tc.err == "" && req.Node != tc.node:
			t.Errorf("--node %s: request for node %q", tc.node, req.Node)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("--node %s: error %v, want %q", tc.node, err, tc.err)
		}
	}
}
