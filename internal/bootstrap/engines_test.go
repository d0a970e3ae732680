package bootstrap

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/enginetest"
	"github.com/clusterctl/clusterctl/internal/render"
)

// One control node and two agents, one of which boots before the control
// node, form one swarm from the rendered scripts; the agents carry their
// labels, and a service constrained to their group runs on both.
func TestSwarmForms(t *testing.T) {
	tc := deployCore(t, "forms")
	g := tc.deployGroup(t, "g", 2, render.Label{Key: "role", Value: "worker"})

	early := labNode(t, "g-0", g.instances[0], true)
	boot(t, early, g.userData)
	// The early agent has looked for the join material before there was any.
	eventually(t, 90*time.Second, "the early agent looks for the join material", func() (bool, string) {
		for _, c := range lab.AWS.Calls() {
			if c.From.String() == g.instances[0].ip && strings.HasSuffix(c.Action, "/"+render.SwarmPrefix+"/worker-token") {
				return true, ""
			}
		}
		return false, "no request for the worker token"
	})

	control := labNode(t, "control", tc.control, false)
	boot(t, control, tc.controlUserData)
	if calls := signalled(t, control, 2*time.Minute); !slices.Equal(calls, []string{
		fmt.Sprintf("--exit-code 0 --reason control\\ node\\ ready --stack %s --resource ControlInstance --region %s", tc.name, region),
	}) {
		t.Fatalf("control node signals %q", calls)
	}
	late := labNode(t, "g-1", g.instances[1], true)
	boot(t, late, g.userData)
	for _, agent := range []*enginetest.Node{early, late} {
		calls := signalled(t, agent, 2*time.Minute)
		want := fmt.Sprintf("--exit-code 0 --reason agent\\ ready --stack %s --resource AutoScalingGroup --region %s", g.stack, region)
		if !slices.Equal(calls, []string{want}) {
			t.Errorf("%s signals %q, want %q", agent.Spec.Name, calls, want)
		}
	}

	nodes := swarmNodes(t, control)
	if len(nodes) != 3 {
		t.Fatalf("%d swarm nodes, want 3", len(nodes))
	}
	agentIDs := map[string]bool{}
	for _, n := range nodes {
		if n.Status.State != "ready" {
			t.Errorf("node %s (%s) is %s", n.ID, n.Status.Addr, n.Status.State)
		}
		labels := n.Description.Engine.Labels
		if n.Spec.Role == "manager" {
			if labels["clusterctl.group"] != "control" || n.Status.Addr != tc.control.ip {
				t.Errorf("manager %s at %s has labels %v", n.ID, n.Status.Addr, labels)
			}
			continue
		}
		if labels["clusterctl.group"] != "g" || labels["role"] != "worker" || labels["clusterctl.instance-type"] != "m5.large" {
			t.Errorf("agent %s at %s has labels %v", n.ID, n.Status.Addr, labels)
		}
		agentIDs[n.ID] = true
	}

	createService(t, control, "web", 2, "--constraint", "engine.labels.clusterctl.group==g")
	eventually(t, time.Minute, "two replicas of web run on the two agents", func() (bool, string) {
		on := runningOn(serviceTasks(t, control, "web"))
		for id, n := range on {
			if !agentIDs[id] || n != 1 {
				return false, fmt.Sprintf("running per node: %v", on)
			}
		}
		return len(on) == 2, fmt.Sprintf("running per node: %v", on)
	})
}
