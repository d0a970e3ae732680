package main

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/awsx"
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
		{[]string{"version"}, 0, "clusterctl dev (", "", false},
		{[]string{"version", "-o", "json"}, 0, `"goVersion": "go`, "", true},
		{[]string{"version", "--query", ".os + \"/\" + .arch"}, 0, runtime.GOOS + "/" + runtime.GOARCH + "\n", "", false},
		{[]string{"version", "-o", "yaml"}, 0, "version: dev\n", "", false},
		{[]string{"version", "-o", "xml"}, 2, "", "invalid output format", false},
		{[]string{"render", "core", "prod"}, 0, "AWSTemplateFormatVersion", "", true},
		{[]string{"render", "group", "-n", "arm", "-t", "m7g.large", "-m", "role=worker"}, 0, `"clusterctl:label:role"`, "", true},
		{[]string{"render", "core", "prod", "-o", "json"}, 0, "AWSTemplateFormatVersion", "", true},
		{[]string{"render", "core", "prod", "-o", "yaml"}, 0, "AWSTemplateFormatVersion: \"2010-09-09\"\n", "", false},
		{[]string{"render", "core", "prod", "--query", ".Outputs | keys | length"}, 0, "15\n", "", false},
		{[]string{"render", "group", "-n", "g", "-t", "m5.large", "-o", "json", "--query", ".Parameters.InstanceType.Type"}, 0, "\"String\"\n", "", true},
		// A string result is raw (jq -r) but for -o json: ready for $(...).
		{[]string{"render", "group", "-n", "g", "-t", "m5.large", "--query", ".Parameters.InstanceType.Type"}, 0, "String\n", "", false},
		{[]string{"render", "core", "-o", "xml"}, 2, "", "invalid output format", false},
		{[]string{"help"}, 0, "Commands:", "", false},
		{[]string{}, 0, "Usage: clusterctl <command> [flags]", "", false},
		{[]string{"completion"}, 2, "", "clusterctl: which shell? clusterctl completion bash, zsh or fish", false},
		{[]string{"completion", "tcsh"}, 2, "", `clusterctl: no completion for shell "tcsh"`, false},
		{[]string{"help", "update-group"}, 0, "Usage: clusterctl update-group --cluster=NAME --name=GROUP", "", false},
		{[]string{"help", "render", "group"}, 0, "Usage: clusterctl render group", "", false},
		{[]string{"help", "launch"}, 2, "", "clusterctl: unexpected argument launch", false},
		{[]string{"help", "-o", "json"}, 2, "", "help prints text only", false},
		{[]string{"--frobnicate"}, 2, "", "clusterctl: unknown flag --frobnicate", false},
		{[]string{"list-nodes", "-o", "xml"}, 2, "", "clusterctl: invalid output format \"xml\"", false},
		{[]string{"list-nodes", "--query", "{"}, 2, "", "clusterctl: invalid --query", false},
		{[]string{"render", "group", "-n", "g", "-t", "r3.large", "-c", "3", "--max", "2"}, 2, "", "count 3 is above max 2", false},
		{[]string{"update-group", "-n", "g", "-j", "core", "--continue-rollback", "-c", "2"}, 2, "", "--continue-rollback takes no other changes", false},
		// A setting at fault is named by its flag, from one mapping.
		{[]string{"render", "group", "-n", "g", "-t", "r3.large", "-c", "3", "--max", "2"}, 2, "", "clusterctl: --max: invalid capacity: count 3 is above max 2", false},
		{[]string{"render", "group", "-n", "g"}, 2, "", "clusterctl: missing flags: -t/--instance-type", false},
		{[]string{"render", "group", "-n", "control", "-t", "t3.small"}, 2, "", `clusterctl: -n/--name: invalid group name "control"`, false},
		{[]string{"render", "group", "-n", "g", "-t", "t3.small", "--ssh-cidr", "2001:db8::/32"}, 2, "", "clusterctl: --ssh-cidr: invalid CIDR", false},
		{[]string{"render", "group", "-n", "g", "-t", "t3.small", "-m", "a=1", "-m", "a=2"}, 2, "", `key "a" given twice`, false},
		{[]string{"render", "group", "-n", "g", "-t", "t3.small", "-j", "9x"}, 2, "", `clusterctl: -j/--cluster: invalid cluster name "9x"`, false},
		{[]string{"render", "group", "-n", "g", "-t", "t3.small", "--min-in-service", "2"}, 2, "", "clusterctl: --min-in-service: invalid rolling update minimum in service 2: must be below max 2", false},
		{[]string{"render", "core", "--volume-size", "4"}, 2, "", "clusterctl: --volume-size: invalid volume size 4", false},
		{[]string{"render", "core", "9prod"}, 2, "", `clusterctl: invalid cluster name "9prod"`, false},
		{[]string{"create-core", "prod", "--key-name", "a'b"}, 2, "", "clusterctl: --key-name: invalid key name", false},
		// update-group checks the flags given before it reads anything.
		{[]string{"update-group", "-n", "g", "-j", "core", "-t", "big"}, 2, "", "clusterctl: -t/--instance-type: invalid instance type", false},
		{[]string{"update-group", "-n", "g", "-j", "core", "-c", "5", "--max", "3"}, 2, "", "clusterctl: --max: invalid capacity: count 5 is above max 3", false},
		{[]string{"update-group", "-n", "g", "-j", "core", "--max-batch", "0"}, 2, "", "clusterctl: --max-batch: invalid rolling update batch size 0", false},
		{[]string{"unlock", "core", "--id", "nope"}, 2, "", "invalid lease id \"nope\"", false},
		// A flag of one value given twice is refused, not the last taken.
		{[]string{"render", "group", "-n", "g", "-t", "t3.small", "-c", "2", "-c", "3"}, 2, "", "clusterctl: -c/--count given 2 times (-c 2, -c 3): give it once", false},
		{[]string{"update-group", "-n", "g", "-j", "core", "--count=2", "--count", "3"}, 2, "", "clusterctl: -c/--count given 2 times (--count=2, --count 3): give it once", false},
		{[]string{"list-nodes", "-j", "a", "--cluster", "b"}, 2, "", "clusterctl: -j/--cluster given 2 times (-j a, --cluster b): give it once", false},
		{[]string{"update-group", "-n", "g", "-j", "core", "--spot", "--no-spot"}, 2, "", "clusterctl: --spot given 2 times", false},
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
				t.Errorf("output is not JSON: %s", out)
			}
		})
	}
}

// An endpoint that did not answer is the first line's whole story; the
// lines after it (what state was left, how to resume) are kept.
func TestEndpointMessage(t *testing.T) {
	e := &awsx.EndpointError{Endpoint: "http://127.0.0.1:1", Reason: "no response", Silence: 20 * time.Second, Operation: "CloudFormation.DescribeStackEvents", Attempts: 3}
	wrapped := fmt.Errorf("waiting for stack %q: operation error CloudFormation: DescribeStackEvents, %w\nre-attach with: clusterctl wait core", "core", e)
	want := "AWS endpoint http://127.0.0.1:1: no response to CloudFormation.DescribeStackEvents in 20 s (3 attempts)\nre-attach with: clusterctl wait core"
	if got := message(wrapped); got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
	if got := message(fmt.Errorf("listing: %w", e)); got != e.Error() {
		t.Errorf("message = %q, want %q", got, e.Error())
	}
}
