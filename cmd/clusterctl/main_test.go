package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/iostreams"
)

// Exit codes and messages of runs that need no AWS endpoint.
func TestRun(t *testing.T) {
	tests := []struct {
		args     []string
		code     int
		stdout   string
		stderr   string
		jsonBody bool
	}{
		{[]string{"version"}, 0, "clusterctl ", "", false},
		{[]string{"render", "core", "prod"}, 0, "AWSTemplateFormatVersion", "", true},
		{[]string{"render", "group", "-n", "arm", "-t", "m7g.large", "-m", "role=worker"}, 0, `"clusterctl:label:role"`, "", true},
		{[]string{"--frobnicate"}, 2, "", "clusterctl: unknown flag --frobnicate", false},
		{[]string{"list-nodes", "-o", "xml"}, 2, "", "clusterctl: invalid output format \"xml\"", false},
		{[]string{"list-nodes", "--query", "{"}, 2, "", "clusterctl: invalid --query", false},
		{[]string{"render", "group", "-n", "g", "-t", "r3.large", "-c", "3", "--max", "2"}, 2, "", "count 3 is above max 2", false},
		{[]string{"update-group", "-n", "g", "-j", "core", "--continue-rollback", "-c", "2"}, 2, "", "--continue-rollback takes no other changes", false},
		{[]string{"unlock", "core", "--id", "nope"}, 2, "", "invalid lease id \"nope\"", false},
		{[]string{"unlock", "core", "--group", "g_1", "--id", "0123456789ab"}, 2, "", "invalid group name", false},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			// No AWS configuration at all: these must not need one.
			t.Setenv("AWS_REGION", "")
			t.Setenv("AWS_DEFAULT_REGION", "")
			t.Setenv("AWS_CONFIG_FILE", "/dev/null")
			ios, _, out, errOut := iostreams.Test()
			code := run(context.Background(), tt.args, ios)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstderr: %s", code, tt.code, errOut)
			}
			if !strings.Contains(out.String(), tt.stdout) || !strings.Contains(errOut.String(), tt.stderr) {
				t.Errorf("stdout %q, stderr %q; want %q and %q", out, errOut, tt.stdout, tt.stderr)
			}
			if tt.code != 0 && strings.Count(strings.TrimSpace(errOut.String()), "\n") > 0 && !strings.Contains(errOut.String(), "Usage") {
				t.Errorf("error is not one line: %q", errOut)
			}
			if tt.jsonBody && !json.Valid(out.Bytes()) {
				t.Error("rendered template is not JSON")
			}
		})
	}
}
