package remote

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The standard input is fetched by the node agent when the node has
// it (every node since the agent), with the instance role: no AWS CLI. A
// failed fetch is exit 125, and docker does not run.
func TestScriptFetchesInputWithTheNodeAgent(t *testing.T) {
	for _, tc := range []struct {
		name, agent string
		code        int
		out         string
	}{
		{"fetched", "#!/bin/sh\necho \"$@\" >\"$CLUSTERCTL_ROOT/args\"\nprintf 'the large input' >\"$7\"\n", 0, "docker got: the large input"},
		{"refused", "#!/bin/sh\necho \"$@\" >\"$CLUSTERCTL_ROOT/args\"\nexit 1\n", 125, "clusterctl: could not fetch the standard input from the cluster bucket"},
		// An agent that ignores the pins (or an object swapped under
		// it): the script's own check refuses, and docker never runs.
		{"swapped", "#!/bin/sh\necho \"$@\" >\"$CLUSTERCTL_ROOT/args\"\nprintf 'services: {evil: {}}' >\"$7\"\n", 125, "not what clusterctl sent (SHA-256 differs): refusing, nothing ran"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, path := t.TempDir(), t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, "usr/local/bin"), 0o755); err != nil {
				t.Fatal(err)
			}
			write := func(p, body string) {
				if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			write(filepath.Join(root, "usr/local/bin/clusterctl-node"), tc.agent)
			write(filepath.Join(path, "docker"), "#!/bin/sh\nprintf 'docker got: '\ncat\n")
			write(filepath.Join(path, "aws"), "#!/bin/sh\necho 'the AWS CLI ran' >&2\nexit 3\n")
			script := Script([]string{"stack", "deploy", "-c", "-", "web"}, "b", pinnedInput("commands/r1/stdin", "v1", []byte("the large input")), "eu-west-1")
			cmd := exec.Command("sh", "-c", script)
			cmd.Env = append(os.Environ(), "CLUSTERCTL_ROOT="+root, "PATH="+path+":/usr/bin:/bin")
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			if code != tc.code || !strings.Contains(string(out), tc.out) || strings.Contains(string(out), "AWS CLI") || tc.code != 0 && strings.Contains(string(out), "docker got") {
				t.Errorf("exit %d, output %q; want %d and %q", code, out, tc.code, tc.out)
			}
			if args, _ := os.ReadFile(filepath.Join(root, "args")); !strings.HasPrefix(string(args), "get --version-id v1 --sha256 "+pinnedInput("", "", []byte("the large input")).SHA256+" commands/r1/stdin ") {
				t.Errorf("the agent was called with %q", args)
			}
		})
	}
}
