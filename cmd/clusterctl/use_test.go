package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/clusterctl/clusterctl/internal/iostreams"
	"github.com/clusterctl/clusterctl/internal/userconfig"
)

// A cluster flag typed before the command moves to right after the
// command's words, where kong takes it; anything else stays as typed.
func TestClusterFlagAfterCommand(t *testing.T) {
	root := testParser(t).Model.Node
	for _, tt := range []struct{ args, want []string }{
		{[]string{"-j", "prod", "list-nodes"}, []string{"list-nodes", "-j", "prod"}},
		{[]string{"--cluster=prod", "-o", "wide", "list-nodes"}, []string{"-o", "wide", "list-nodes", "--cluster=prod"}},
		{[]string{"--region", "eu-west-1", "--join", "prod", "list-groups", "-o", "json"}, []string{"--region", "eu-west-1", "list-groups", "--join", "prod", "-o", "json"}},
		{[]string{"-j", "prod", "render", "group", "-n", "g"}, []string{"render", "group", "-j", "prod", "-n", "g"}},
		{[]string{"-j", "prod", "secrets", "add", "token"}, []string{"secrets", "add", "-j", "prod", "token"}},
		// Before the words docker passes on, not among them.
		{[]string{"-j", "prod", "docker", "service", "ls"}, []string{"docker", "-j", "prod", "service", "ls"}},
		{[]string{"-j", "prod", "docker", "--", "ps"}, []string{"docker", "-j", "prod", "--", "ps"}},
		// Unchanged: after the command already, no command, no value.
		{[]string{"list-nodes", "-j", "prod"}, []string{"list-nodes", "-j", "prod"}},
		{[]string{"-j", "prod"}, []string{"-j", "prod"}},
		{[]string{"-j", "prod", "frobnicate"}, []string{"-j", "prod", "frobnicate"}},
		{[]string{"-j"}, []string{"-j"}},
		{[]string{"--", "-j", "prod", "list-nodes"}, []string{"--", "-j", "prod", "list-nodes"}},
	} {
		if got := clusterFlagAfterCommand(root, slices.Clone(tt.args)); !slices.Equal(got, tt.want) {
			t.Errorf("%q: got %q, want %q", tt.args, got, tt.want)
		}
	}
}

// runCLI runs clusterctl's run with args and returns the exit code,
// stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	code := run(context.Background(), args, ios)
	return code, out.String(), errOut.String()
}

// withDefault gives the test a configuration directory of its own whose
// default cluster is cluster ("" for no file), and no CLUSTERCTL_CLUSTER.
func withDefault(t *testing.T, cluster string) string {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv(userconfig.EnvCluster, "")
	os.Unsetenv(userconfig.EnvCluster)
	path, err := userconfig.Path()
	if err != nil {
		t.Fatal(err)
	}
	if cluster != "" {
		if err := userconfig.Save(path, userconfig.Config{Cluster: cluster, Region: "eu-west-1"}); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// The default cluster fills -j where none is given, the command saying
// so once; -j, an argument, or CLUSTERCTL_CLUSTER come first. Each run
// here stops on bad input before any AWS call, which shows which cluster
// the command took.
func TestDefaultClusterFillsTheClusterFlag(t *testing.T) {
	const fileNote = "Note: using cluster prod (the default: clusterctl use)\n"
	for _, tt := range []struct {
		name     string
		env      *string // CLUSTERCTL_CLUSTER; nil: unset
		args     []string
		code     int
		note     string // the first line of stderr, "" for none
		errorHas string
	}{
		{"the file's", nil, []string{"update-group", "-n", "g", "--continue-rollback", "-c", "2"}, 2, fileNote, "--continue-rollback takes no other changes"},
		{"-j first", nil, []string{"update-group", "-n", "g", "-j", "other", "--continue-rollback", "-c", "2"}, 2, "", "--continue-rollback takes no other changes"},
		{"-j before the command", nil, []string{"-j", "other", "update-group", "-n", "g", "--continue-rollback", "-c", "2"}, 2, "", "--continue-rollback takes no other changes"},
		// Not "the cluster is given twice": the argument is the cluster.
		{"the argument first", nil, []string{"update-core", "other", "--continue-rollback", "--managers", "3"}, 2, "", "--continue-rollback takes no other changes"},
		{"the argument's command without it", nil, []string{"update-core", "--continue-rollback", "--managers", "3"}, 2, fileNote, "--continue-rollback takes no other changes"},
		{"the environment over the file", ptr("staging"), []string{"update-group", "-n", "g", "--continue-rollback", "-c", "2"}, 2, "Note: using cluster staging (from CLUSTERCTL_CLUSTER)\n", "--continue-rollback"},
		{"the environment set empty: none", ptr(""), []string{"update-group", "-n", "g", "-c", "2"}, 2, "", "which cluster? clusterctl update-group -j NAME"},
		// A new cluster, and an offline render, never take the default.
		{"not create-core", nil, []string{"create-core", "--managers", "2"}, 2, "", "which cluster? clusterctl create-core -j NAME"},
		{"not render group", nil, []string{"render", "group", "-n", "g", "-t", "t3.small", "-c", "3", "--max", "2"}, 2, "", "count 3 is above max 2"},
		{"a bad name from the default", ptr("9x"), []string{"list-nodes"}, 2, "Note: using cluster 9x (from CLUSTERCTL_CLUSTER)\n", `-j/--cluster: invalid cluster name "9x"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			withDefault(t, "prod")
			if tt.env != nil {
				t.Setenv(userconfig.EnvCluster, *tt.env)
			}
			code, _, stderr := runCLI(t, tt.args...)
			note, rest, _ := strings.Cut(stderr, "\n")
			if tt.note == "" {
				note, rest = "", stderr
			} else {
				note += "\n"
			}
			if code != tt.code || note != tt.note || !strings.Contains(rest, tt.errorHas) || strings.Count(rest, "\n") != 1 || strings.Contains(rest, "Note:") {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d, note %q, then one line with %q", code, stderr, tt.code, tt.note, tt.errorHas)
			}
		})
	}
}

func ptr(s string) *string { return &s }

// A configuration file that cannot be read stops the commands that would
// use it, with one line naming it; those given -j and a region run.
func TestBrokenDefaultFile(t *testing.T) {
	path := withDefault(t, "")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("cluster: prod\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "update-group", "-n", "g", "-c", "2")
	if code != 2 || !strings.HasPrefix(stderr, "clusterctl: reading "+path) || !strings.Contains(stderr, "clusterctl use --clear") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("exit %d, stderr %q: want exit 2 and one line naming %s", code, stderr, path)
	}
	code, _, stderr = runCLI(t, "update-group", "-n", "g", "-j", "prod", "--continue-rollback", "-c", "2")
	if code != 2 || !strings.Contains(stderr, "--continue-rollback takes no other changes") {
		t.Errorf("with -j: exit %d, stderr %q", code, stderr)
	}
	// --clear removes it.
	if code, out, stderr := runCLI(t, "use", "--clear"); code != 0 || out != "No default cluster to clear\n" {
		t.Errorf("use --clear: exit %d, %q %q", code, out, stderr)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("use --clear left %s: %v", path, err)
	}
}

// use without AWS: --no-check writes the file, use prints it, --clear
// forgets it; bad input is one line, exit 2, nothing written.
func TestUseOffline(t *testing.T) {
	path := withDefault(t, "")
	steps := []struct {
		args   []string
		code   int
		stdout string
	}{
		{[]string{"use"}, 0, "No default cluster (clusterctl use CLUSTER sets one)\n"},
		{[]string{"use", "prod", "--no-check", "--region", "eu-west-3"}, 0, "Default cluster: prod in eu-west-3 (commands given no -j act on it; clusterctl use --clear forgets it)\n"},
		{[]string{"use"}, 0, "Default cluster: prod in eu-west-3 (set by clusterctl use, in " + path + ")\n"},
		{[]string{"use", "--query", ".cluster + \" \" + .region + \" \" + .source"}, 0, "prod eu-west-3 file\n"},
		{[]string{"use", "9x", "--no-check"}, 2, ""},
		{[]string{"use", "prod", "--no-check", "--region", "eu-wets-1"}, 2, ""},
		{[]string{"use", "prod", "--clear"}, 2, ""},
		{[]string{"use", "--no-check"}, 2, ""},
		{[]string{"use"}, 0, "Default cluster: prod in eu-west-3 (set by clusterctl use, in " + path + ")\n"},
		{[]string{"use", "--none"}, 0, "Cleared the default cluster (was prod)\n"},
		{[]string{"use"}, 0, "No default cluster (clusterctl use CLUSTER sets one)\n"},
	}
	for _, s := range steps {
		code, out, stderr := runCLI(t, s.args...)
		if code != s.code || out != s.stdout || (code == 2) != (strings.Count(stderr, "\n") == 1) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d, stdout %q", s.args, code, out, stderr, s.code, s.stdout)
		}
	}
}

// Help lists the cluster flag first among a command's flags.
func TestHelpListsClusterFlagFirst(t *testing.T) {
	for _, cmd := range [][]string{{"add-agents"}, {"update-group"}, {"describe"}, {"render", "node-config"}, {"logs"}} {
		_, help, _ := runCLI(t, append([]string{"help"}, cmd...)...)
		flags := help[strings.Index(help, "\nFlags:\n"):]
		own := strings.Index(flags, "--help")
		j := strings.Index(flags, "-j, --cluster=NAME")
		next := strings.Index(flags[own+len("--help"):], "\n  ")
		if j < 0 || next < 0 || j > own+len("--help")+next+80 {
			t.Errorf("%s: -j is not the first flag after --help:\n%s", cmd, help)
		}
	}
}

// The commands that make a new group neither show nor take the flags
// that only change one; update-group keeps them.
func TestCreateOnlyFlags(t *testing.T) {
	for _, cmd := range [][]string{{"add-agents"}, {"render", "group"}, {"render", "node-config"}} {
		_, help, _ := runCLI(t, append([]string{"help"}, cmd...)...)
		for _, hidden := range []string{"--[no-]spot", "--no-spot", "--[no-]autoscale", "--no-autoscale", `--publish ""`, `--publish\n`} {
			if strings.Contains(help, hidden) {
				t.Errorf("help %s shows %s:\n%s", cmd, hidden, help)
			}
		}
		if !strings.Contains(help, "--spot ") || !strings.Contains(help, "--autoscale ") || !strings.Contains(help, "--publish=") {
			t.Errorf("help %s lost --spot, --autoscale or --publish:\n%s", cmd, help)
		}
	}
	_, help, _ := runCLI(t, "help", "update-group")
	for _, shown := range []string{"--[no-]spot", "--[no-]autoscale", "--no-autoscale: a fixed count again", `--publish`} {
		if !strings.Contains(help, shown) {
			t.Errorf("help update-group lost %s", shown)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"add-agents", "-n", "g", "-t", "t3.small", "-j", "core", "--no-spot"}, "clusterctl: --no-spot is for update-group, which changes a group: a new group is on-demand unless --spot\n"},
		{[]string{"add-agents", "-n", "g", "-t", "t3.small", "-j", "core", "--no-autoscale"}, "clusterctl: --no-autoscale is for update-group, which changes a group: a new group keeps a fixed count unless --autoscale\n"},
		{[]string{"add-agents", "-n", "g", "-t", "t3.small", "-j", "core", "--publish", ""}, "clusterctl: --publish \"\" is for update-group, which changes a group: a new group has no load balancer unless --publish PORT\n"},
		{[]string{"add-agents", "-n", "g", "-t", "t3.small", "-j", "core", "--publish="}, "clusterctl: --publish \"\" is for update-group"},
		{[]string{"render", "group", "-n", "g", "-t", "t3.small", "--no-spot"}, "clusterctl: --no-spot is for update-group"},
		{[]string{"update-group", "-n", "g", "-j", "core", "--no-spot", "--continue-rollback"}, "clusterctl: --continue-rollback takes no other changes"},
		{[]string{"update-group", "-n", "g", "-j", "core", "--publish", "", "--continue-rollback"}, "clusterctl: --continue-rollback takes no other changes"},
	} {
		code, _, stderr := runCLI(t, tt.args...)
		if code != 2 || !strings.HasPrefix(stderr, tt.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and %q", tt.args, code, stderr, tt.want)
		}
	}
}

// render operator-policy scopes its ARNs to the default's cluster and
// region, as the commands would act; the flag and the environment first.
func TestOperatorPolicyTakesTheDefault(t *testing.T) {
	withDefault(t, "prod")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	for _, tt := range []struct {
		args  []string
		env   string // AWS_REGION
		stack string
	}{
		{nil, "", "arn:aws:cloudformation:eu-west-1:*:stack/prod/*"},
		{[]string{"-j", "qa"}, "", "arn:aws:cloudformation:eu-west-1:*:stack/qa/*"},
		{[]string{"--region", "us-west-2"}, "", "arn:aws:cloudformation:us-west-2:*:stack/prod/*"},
		{nil, "ap-south-1", "arn:aws:cloudformation:ap-south-1:*:stack/prod/*"},
	} {
		t.Setenv("AWS_REGION", tt.env)
		code, out, errOut := runCLI(t, append([]string{"render", "operator-policy", "--part", "1"}, tt.args...)...)
		if code != 0 || !strings.Contains(out, `"`+tt.stack+`"`) {
			t.Errorf("%q, AWS_REGION=%q: exit %d, want %s in the policy\n%s", tt.args, tt.env, code, tt.stack, errOut)
		}
	}
}
