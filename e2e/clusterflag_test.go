package e2e

import (
	"strings"
	"testing"
)

// Every command that takes a cluster takes it as -j/--cluster (also
// --join), those that name it as an argument too; and each wrong guess
// gets one line saying which flag the word belongs to, exit 2, nothing
// created.
func TestClusterAsFlagOrArgument(t *testing.T) {
	parallel(t)
	c, _ := newCluster(t, "a")
	for _, args := range [][]string{
		{"describe", "-j", "core"},
		{"describe", "--cluster", "core"},
		{"export", "-j", "core"},
		{"events", "--join", "core", "-n", "a"},
		{"wait", "-j", "core"},
		{"list-nodes", "--cluster", "core"},
		{"list-groups", "--cluster", "core"},
		{"update-group", "-n", "a", "--cluster", "core", "--dry-run"},
		{"update-core", "-j", "core", "--dry-run"},
		{"create-core", "-j", "other", "--dry-run"},
		{"add-agents", "-n", "b", "-t", "t3.small", "--cluster", "core", "--dry-run"},
		{"render", "core", "-j", "other", "--parameters"},
		{"render", "group", "-n", "b", "-t", "t3.small", "--cluster", "core", "--parameters"},
	} {
		if r := clusterctl(t, append(args, "-q")...); r.code != 0 {
			t.Errorf("%s:\n%s", strings.Join(args, " "), r)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"list-nodes", "core"}, "unexpected argument core: the cluster is given with -j (clusterctl list-nodes -j core)"},
		{[]string{"list-groups", "-o", "json", "core"}, "the cluster is given with -j (clusterctl list-groups -o json -j core)"},
		{[]string{"add-agents", "-n", "b", "-t", "t3.small", "core"}, "the cluster is given with -j (clusterctl add-agents -n b -t t3.small -j core)"},
		{[]string{"remove-group", "core", "-n", "a"}, "the cluster is given with -j (clusterctl remove-group -j core -n a)"},
		{[]string{"drain-node", "i-0123456789abcdef0", "core"}, "the cluster is given with -j (clusterctl drain-node i-0123456789abcdef0 -j core)"},
		{[]string{"apply", "core.yaml"}, "unexpected argument core.yaml: the cluster file is given with -f (clusterctl apply -f core.yaml)"},
		{[]string{"events", "core", "a"}, "the group is given with -n (clusterctl events core -n a)"},
		{[]string{"remove-group", "a", "-j", "core"}, "the group is given with -n (clusterctl remove-group -n a -j core)"},
		{[]string{"update-group", "--cluster=core", "a", "-c", "2"}, "the group is given with -n (clusterctl update-group --cluster=core -n a -c 2)"},
		{[]string{"describe"}, "which cluster? clusterctl describe -j NAME (clusterctl list-clusters lists them)"},
		{[]string{"logs", "web"}, "which cluster? clusterctl logs -j NAME (clusterctl list-clusters lists them)"},
		{[]string{"add-agents", "-t", "t3.small"}, "which cluster? clusterctl add-agents -j NAME (clusterctl list-clusters lists them); missing flags too: --name=GROUP"},
		{[]string{"delete-core", "core", "-j", "other"}, "the cluster is given twice, as core and -j other"},
		// The suggested command is one that works.
		{[]string{"logs", "core", "web"}, "the cluster is given with -j (clusterctl logs -j core web)"},
		{[]string{"logs", "--since", "1h", "core", "web"}, "the cluster is given with -j (clusterctl logs --since 1h -j core web)"},
	} {
		r := clusterctl(t, tt.args...)
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%s: want exit 2 and one line with %q:\n%s", strings.Join(tt.args, " "), tt.want, r)
		}
	}
	// Each suggestion, run as given, is understood (logs reaches AWS); so
	// is the cluster flag before the command.
	for _, line := range [][]string{
		{"list-groups", "-j", "core"},
		{"list-nodes", "--cluster=core", "-o", "wide"},
		{"-j", "core", "list-groups"},
		{"--cluster=core", "list-nodes", "-o", "wide"},
		{"logs", "--since", "1h", "-j", "core", "web", "--help"},
	} {
		if r := clusterctl(t, line...); r.code != 0 {
			t.Errorf("suggested %s:\n%s", strings.Join(line, " "), r)
		}
	}
	if names := c.stackNames(t); !sameSet(names, []string{"core", "core-a"}) {
		t.Errorf("stacks %v", names)
	}
}
