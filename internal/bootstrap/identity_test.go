package bootstrap

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// A node says what it is from its instance metadata, checked for shape
// before it reaches daemon.json or a tag: a lifecycle of another shape is
// refused before anything is installed. A node whose instance cannot be
// tagged (a core whose agent role predates the permission) joins all the
// same.
func TestAgentIdentity(t *testing.T) {
	t.Parallel()
	tc := deployCore(t, "identity")
	g := tc.deployGroup(t, "g", 2, nil)

	odd := g.instances[0]
	odd.lifecycle = `spot","x=1`
	agent := labNode(t, "g-odd", odd, true)
	code, out := wait(t, boot(t, agent, g.userData))
	if code == 0 || !strings.Contains(out, "refusing lifecycle") {
		t.Fatalf("agent with odd metadata exited %d, want a refusal:\n%s", code, out)
	}
	want := fmt.Sprintf("--exit-code 1 --reason clusterctl:\\ failed\\ while\\ setting\\ up\\ the\\ node --stack %s --resource AutoScalingGroup --region %s", g.stack, region)
	if calls := agent.Calls("cfn-signal"); !slices.Equal(calls, []string{want}) {
		t.Errorf("signals %q, want %q", calls, want)
	}
	if calls := agent.Calls("systemctl"); len(calls) != 0 {
		t.Errorf("systemctl %q: something was installed", calls)
	}

	tc.bootControl(t)
	untagged := g.instances[1]
	lab.AWS.Deny(netip.MustParseAddr(untagged.ip), "CreateTags")
	agent = labNode(t, "g-untagged", untagged, true)
	boot(t, agent, g.userData)
	g.readyAgent(t, agent)
	if logs := agent.Logs(); !strings.Contains(logs, "could not tag instance "+untagged.id+", carrying on without the tags: ") || !strings.Contains(logs, "UnauthorizedOperation") {
		t.Errorf("the agent does not say it runs without its tags:\n%s", logs)
	}
}
