package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A mistyped cluster or group is told the close name, never to create
// the cluster it only mistyped, in every command that names one; exit 1,
// nothing changed.
func TestDidYouMean(t *testing.T) {
	parallel(t)
	c, _ := newCluster(t, "web")
	cluster := [][]string{
		{"list-nodes", "-j", "cor"},
		{"list-groups", "-j", "cor"},
		{"describe", "cor"},
		{"events", "cor"},
		{"wait", "cor"},
		{"export", "cor"},
		{"update-core", "cor", "--managers", "3", "--yes"},
		{"delete-core", "cor", "--yes"},
		{"add-agents", "-n", "b", "-t", "t3.small", "-j", "cor"},
		{"update-group", "-n", "web", "-j", "cor", "-c", "2"},
		{"remove-group", "-n", "web", "-j", "cor", "--yes"},
		{"render", "group", "-n", "b", "-t", "t3.small", "-j", "cor"},
		{"render", "node-config", "-n", "b", "-t", "t3.small", "-j", "cor"},
		{"unlock", "cor", "--id", "0123456789ab"},
	}
	for _, args := range cluster {
		r := clusterctl(t, append(args, "-q")...)
		if r.code != 1 || !strings.Contains(r.stderr, "did you mean core?") || strings.Contains(r.stderr, "create-core") {
			t.Errorf("%s: want exit 1 and \"did you mean core?\", no advice to create it:\n%s", strings.Join(args, " "), r)
		}
	}
	group := [][]string{
		{"list-nodes", "-j", "core", "-n", "wbe"},
		{"events", "core", "-n", "wbe"},
		{"wait", "core", "-n", "wbe"},
		{"update-group", "-n", "wbe", "-j", "core", "-c", "2"},
		{"remove-group", "-n", "wbe", "-j", "core", "--yes"},
	}
	for _, args := range group {
		r := clusterctl(t, append(args, "-q")...)
		if r.code != 1 || !strings.Contains(r.stderr, "did you mean web?") {
			t.Errorf("%s: want exit 1 and \"did you mean web?\":\n%s", strings.Join(args, " "), r)
		}
	}
	// A file naming a new cluster close to a live one: the plan asks.
	file := filepath.Join(t.TempDir(), "cor.yaml")
	if err := os.WriteFile(file, []byte("apiVersion: clusterctl/v1\nkind: Cluster\nname: cor\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"table", "json"} {
		if r := must(t, "apply", "-f", file, "--dry-run", "-o", format); !strings.Contains(r.stdout, "a new cluster: did you mean core?") {
			t.Errorf("apply -o %s of cluster cor:\n%s", format, r)
		}
	}
	// An instance id with one character wrong.
	id := instancesOf(t, "web")[0]
	typo := id[:len(id)-1] + map[bool]string{true: "0", false: "1"}[id[len(id)-1] != '0']
	for _, args := range [][]string{{"drain-node", typo}, {"replace-node", typo, "-j", "core", "--yes"}} {
		if r := clusterctl(t, append(args, "-q")...); r.code != 2 || !strings.Contains(r.stderr, "did you mean "+id+"?") {
			t.Errorf("%s: want exit 2 and \"did you mean %s?\":\n%s", strings.Join(args, " "), id, r)
		}
	}
	// Nothing close: no suggestion.
	if r := clusterctl(t, "describe", "payments"); r.code != 1 || strings.Contains(r.stderr, "did you mean") {
		t.Errorf("describe payments:\n%s", r)
	}
	if names := c.stackNames(t); !sameSet(names, []string{"core", "core-web"}) {
		t.Errorf("stacks %v", names)
	}
}
