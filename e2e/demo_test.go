package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

// make demo walks what the README promises on the local AWS of
// scripts/moto.sh: groups, one behind a load balancer with its endpoint and
// healthy targets, an update said honestly where moto does not do what
// AWS does, the file workflow, and the teardown.
func TestDemo(t *testing.T) {
	parallel(t)
	cmd := exec.Command("bash", "../scripts/demo.sh")
	cmd.Env = append(envOf(t), "CLUSTERCTL="+binary)
	r := runCommand(t, cmd)
	if r.code != 0 {
		t.Fatalf("demo:\n%s", r)
	}
	for _, want := range []string{
		"$ clusterctl create-core core --network core",
		"add-agents -n front -t t3.small -j core -c 2 --publish 80",
		".elb.amazonaws.com   80 (2/2 healthy)",
		"where AWS shows r5.large",
		"$ clusterctl export core > core.yaml",
		"$ clusterctl apply -f core.yaml --dry-run",
		"core-batch       create      2 x c5.large",
		"Applied core.yaml to cluster core",
		"$ clusterctl upgrade -j core --dry-run",
		"Cluster core is current: nothing to upgrade.",
		"Deleted network core",
		"No clusters in us-east-1",
		"demo: done",
	} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("the demo does not show %q:\n%s", want, r)
		}
	}
}
