package e2e

import (
	"strings"
	"testing"
	"time"
)

// A cluster not found is not found in a region, which is said; creating
// it is never the only advice, as it may live in another region; an empty
// region says so; a region that does not exist is bad input, at once.
func TestRegionIsNamed(t *testing.T) {
	parallel(t)
	resetMoto(t)
	must(t, "create-core", "apps", "-q")
	for _, tt := range []struct {
		args      []string
		code      int
		stdout    string
		stderr    string
		notStderr string
	}{
		{[]string{"list-nodes", "-j", "apps", "--region", "eu-west-1"}, 1, "",
			`clusterctl: cluster "apps" not found in eu-west-1: no core stack of that name (in another region? give --region; a new cluster here: clusterctl create-core apps --region eu-west-1)`, ""},
		{[]string{"add-agents", "-n", "web", "-t", "t3.small", "-j", "apps", "--region", "eu-west-1"}, 1, "", `not found in eu-west-1`, ""},
		{[]string{"describe", "aps"}, 1, "", `cluster "aps" not found in us-east-1: no core stack of that name; did you mean apps?`, "create-core"},
		{[]string{"list-clusters", "--region", "eu-west-1"}, 0, "", "No clusters in eu-west-1\n", ""},
		{[]string{"list-clusters", "--region", "us-east-9"}, 2, "", "clusterctl: unknown AWS region us-east-9: did you mean us-east-1?\n", ""},
		{[]string{"create-core", "lab", "--region", "mars-north-1"}, 2, "", "clusterctl: unknown AWS region mars-north-1: not a region of any AWS partition", ""},
	} {
		start := time.Now()
		r := clusterctl(t, tt.args...)
		if r.code != tt.code || r.stdout != tt.stdout || !strings.Contains(r.stderr, tt.stderr) || strings.Count(r.stderr, "\n") != 1 ||
			(tt.notStderr != "" && strings.Contains(r.stderr, tt.notStderr)) {
			t.Errorf("%s: want exit %d, stdout %q, one line with %q; got %s", strings.Join(tt.args, " "), tt.code, tt.stdout, tt.stderr, r)
		}
		if tt.code == 2 && time.Since(start) > 3*time.Second {
			t.Errorf("%s: bad input took %s", strings.Join(tt.args, " "), time.Since(start))
		}
	}
	if names := newClients(t).stackNames(t); !sameSet(names, []string{"apps"}) {
		t.Errorf("stacks: %v", names)
	}
}
