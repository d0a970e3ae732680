package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// useEnv is the environment of a user with a configuration directory of
// their own (where clusterctl use writes) and no CLUSTERCTL_CLUSTER;
// extra entries come last, and win.
func useEnv(dir string, extra ...string) []string {
	environ := slices.DeleteFunc(env(), func(e string) bool { return strings.HasPrefix(e, "CLUSTERCTL_CLUSTER=") })
	return append(append(environ, "XDG_CONFIG_HOME="+dir), extra...)
}

// clusterctl use makes a cluster the default of the commands given no
// -j, after checking it exists; each command that takes it says so once,
// on stderr; -j and CLUSTERCTL_CLUSTER come first; --clear forgets it.
func TestUseDefaultCluster(t *testing.T) {
	c, _ := newCluster(t, "web")
	dir := t.TempDir()
	file := filepath.Join(dir, "clusterctl", "config.json")
	run := func(extra []string, args ...string) result {
		return clusterctlEnv(t, useEnv(dir, extra...), args...)
	}
	const note = "Note: using cluster core (the default: clusterctl use)\n"

	// Tab after use offers the clusters.
	if r := run([]string{"COMP_LINE=clusterctl use "}); r.code != 0 || r.stdout != "core\n" {
		t.Errorf("completing clusterctl use: want core:\n%s", r)
	}

	// A cluster that does not exist is refused as every command refuses
	// it, and nothing is written.
	if r := run(nil, "use", "cor"); r.code != 1 || !strings.Contains(r.stderr, `cluster "cor" not found in us-east-1: no core stack of that name; did you mean core?`) || r.stdout != "" {
		t.Errorf("use cor: want exit 1 and did you mean core?:\n%s", r)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("use cor wrote %s: %v", file, err)
	}
	if r := run(nil, "use", "core"); r.code != 0 || r.stdout != "Default cluster: core in us-east-1 (commands given no -j act on it; clusterctl use --clear forgets it)\n" {
		t.Fatalf("use core:\n%s", r)
	}
	if r := run(nil, "use"); r.code != 0 || r.stdout != "Default cluster: core in us-east-1 (set by clusterctl use, in "+file+")\n" {
		t.Errorf("use:\n%s", r)
	}

	// Commands without -j act on it, saying so once.
	for _, args := range [][]string{
		{"list-nodes"},
		{"list-groups", "-o", "json"},
		{"describe"},
		{"events", "-n", "web"},
		{"update-group", "-n", "web", "-c", "2", "--dry-run"},
		{"add-agents", "-n", "b", "-t", "t3.small", "--dry-run"},
	} {
		r := run(nil, append(args, "-q")...)
		if r.code != 0 || !strings.HasPrefix(r.stderr, note) || strings.Count(r.stderr, "Note: using") != 1 {
			t.Errorf("%s: want exit 0 and, first on stderr, %q:\n%s", strings.Join(args, " "), note, r)
		}
	}
	// One cluster: the table has no CLUSTER column, as with -j.
	if r := run(nil, "list-groups"); !strings.HasPrefix(r.stdout, "GROUP ") {
		t.Errorf("list-groups of the default: want the one-cluster table:\n%s", r)
	}
	// -j, before or after the command, and the argument: no note.
	for _, args := range [][]string{
		{"list-nodes", "-j", "core"},
		{"-j", "core", "list-nodes"},
		{"describe", "core"},
	} {
		if r := run(nil, args...); r.code != 0 || strings.Contains(r.stderr, "Note: using") {
			t.Errorf("%s: want exit 0 and no note:\n%s", strings.Join(args, " "), r)
		}
	}
	// CLUSTERCTL_CLUSTER comes before the file, and is checked the same.
	if r := run([]string{"CLUSTERCTL_CLUSTER=cor"}, "list-groups"); r.code != 1 || !strings.HasPrefix(r.stderr, "Note: using cluster cor (from CLUSTERCTL_CLUSTER)\n") || !strings.Contains(r.stderr, "did you mean core?") {
		t.Errorf("CLUSTERCTL_CLUSTER=cor list-groups:\n%s", r)
	}
	// A deletion names the cluster it would delete from.
	if r := run(nil, "remove-group", "-n", "web"); r.code != 2 || !strings.HasPrefix(r.stderr, note) || !strings.Contains(r.stderr, `refusing to remove group "web" of cluster "core"`) {
		t.Errorf("remove-group -n web without a terminal:\n%s", r)
	}
	// The file's region serves when the environment names none.
	noRegion := []string{"AWS_REGION=", "AWS_DEFAULT_REGION="}
	if r := run(noRegion, "list-groups"); r.code != 0 || !strings.Contains(r.stdout, "web") {
		t.Errorf("list-groups without AWS_REGION: want the default's region:\n%s", r)
	}
	// A cluster looked for in another region is not found there; the
	// default stays.
	if r := run(nil, "use", "core", "--region", "eu-west-1"); r.code != 1 || !strings.Contains(r.stderr, `cluster "core" not found in eu-west-1`) {
		t.Errorf("use core --region eu-west-1:\n%s", r)
	}
	if r := run(nil, "use", "-o", "json", "--query", ".region"); r.stdout != "\"us-east-1\"\n" {
		t.Errorf("the default's region after a refused use:\n%s", r)
	}
	// --clear: every cluster again, no note.
	if r := run(nil, "use", "--clear"); r.code != 0 || r.stdout != "Cleared the default cluster (was core)\n" {
		t.Errorf("use --clear:\n%s", r)
	}
	if r := run(nil, "list-groups"); r.code != 0 || strings.Contains(r.stderr, "Note: using") || !strings.HasPrefix(r.stdout, "CLUSTER ") {
		t.Errorf("list-groups after --clear: want every cluster, no note:\n%s", r)
	}
	if r := run(noRegion, "list-groups"); r.code != 1 || !strings.Contains(r.stderr, "no AWS region configured") {
		t.Errorf("list-groups without a region: want exit 1:\n%s", r)
	}
	if names := c.stackNames(t); !sameSet(names, []string{"core", "core-web"}) {
		t.Errorf("stacks %v", names)
	}
}

// The examples of docs/default-cluster.md run in order, as a reader types
// them, each exiting as documented.
func TestDefaultClusterDocExamples(t *testing.T) {
	examples, err := readmeExamples("../docs/default-cluster.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(examples) < 6 {
		t.Fatalf("only %d examples in docs/default-cluster.md", len(examples))
	}
	resetMoto(t)
	dir := t.TempDir()
	shellEnv := useEnv(filepath.Join(dir, ".config"), "PATH="+filepath.Dir(binary)+":"+pathEnv(), "HOME="+dir)
	for _, ex := range examples {
		cmd := exec.Command("bash", "-c", ex.command)
		cmd.Dir, cmd.Env = dir, shellEnv
		r := runCommand(t, cmd)
		t.Logf("docs/default-cluster.md:%d: exit %d: %s", ex.line, r.code, ex.command)
		if r.code != ex.exit {
			t.Fatalf("docs/default-cluster.md:%d: %s\nwant exit %d, got %s", ex.line, ex.command, ex.exit, r)
		}
	}
}
