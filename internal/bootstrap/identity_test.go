package bootstrap

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
)

// A node says what it is from its instance metadata, checked for shape
// before it reaches daemon.json or a tag: a lifecycle of another shape is
// refused before anything is installed. A node whose instance cannot be
// tagged (a core whose agent role predates the permission) joins all the
// same.
func TestAgentIdentity(t *testing.T) {
	scenario(t)
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

// An agent whose metadata names another instance (as a compromised agent
// labels itself) joins, but the leader does not believe it: EC2 gives
// that instance the other node's address. The leader logs it once, marks
// it in the status snapshot and drains it; the real node of the instance
// is believed and gets the node labels of its group. So when the real
// node is drained, its services (one constrained on a node label, one
// not), with their secret, go nowhere rather than to the impostor; and
// once unproven for the bound, the impostor is removed from the swarm.
func TestImpostorNotBelieved(t *testing.T) {
	scenario(t)
	tc := deployCore(t, "impostor")
	g := tc.deployGroup(t, "g", 2, nil)
	const grace = 150 * time.Second // unproven this long, a node is removed
	control := tc.bootControl(t, fmt.Sprintf("CLUSTERCTL_UNPROVEN_GRACE=%d", int(grace.Seconds())))
	victim := g.bootAgent(t, 0)
	g.readyAgent(t, victim)
	liar := g.instances[1]
	liar.id = g.instances[0].id
	impostor := labNode(t, "g-impostor", liar, true)
	boot(t, impostor, g.userData)
	g.readyAgent(t, impostor)

	want := fmt.Sprintf("its label names instance %s, whose private IP is %s, but the swarm sees it at %s", g.instances[0].id, g.instances[0].ip, liar.ip)
	eventually(t, 2*time.Minute, "the impostor marked in the status snapshot", func() (bool, string) {
		b, err := tc.tryObject(names.StatusKey)
		if err != nil {
			return false, err.Error()
		}
		var snap query.Snapshot
		if err := json.Unmarshal(b, &snap); err != nil {
			return false, err.Error()
		}
		marked, believed := false, false
		for _, n := range snap.Nodes {
			switch n.Address {
			case liar.ip:
				marked = n.IdentityProblem == want
			case g.instances[0].ip:
				believed = n.IdentityProblem == "" && n.InstanceID == g.instances[0].id
			}
		}
		return marked && believed, fmt.Sprintf("%+v", snap.Nodes)
	})
	if logs := control.Logs(); strings.Count(logs, "is not believed: "+want) != 1 {
		t.Errorf("the leader does not log the impostor once:\n%s", logs)
	}

	var victimID, impostorID string
	eventually(t, 2*time.Minute, "the impostor drained and the victim labelled by the leader", func() (bool, string) {
		nodes, err := trySwarmNodes(control)
		if err != nil {
			return false, err.Error()
		}
		drained, labelled := false, false
		for _, n := range nodes {
			switch n.Status.Addr {
			case liar.ip:
				impostorID = n.ID
				drained = n.Spec.Availability == "drain" && n.Spec.Labels[names.NodeLabelDrainedUnproven] == "active" &&
					n.Spec.Labels[names.EngineLabelGroup] == ""
			case g.instances[0].ip:
				victimID = n.ID
				labelled = n.Spec.Availability == "active" && n.Spec.Labels[names.EngineLabelGroup] == "g" &&
					n.Spec.Labels[names.EngineLabelInstanceID] == g.instances[0].id
			}
		}
		return drained && labelled, fmt.Sprintf("%+v", nodes)
	})
	if logs := control.Logs(); !strings.Contains(logs, "drained node "+impostorID+", which is not proven: "+want) {
		t.Errorf("the leader does not log the drain:\n%s", logs)
	}

	dockerOn(t, control, "secret", "create", "token", "/etc/hostname")
	createService(t, control, "free", 1, "--secret", "token")
	createService(t, control, "placed", 1, "--secret", "token", "--constraint", "node.labels."+names.EngineLabelGroup+"==g")
	for _, s := range []string{"free", "placed"} {
		eventually(t, 2*time.Minute, s+" running on the victim", func() (bool, string) {
			tasks, err := tryServiceTasks(control, s)
			return err == nil && runningOn(tasks)[victimID] == 1, fmt.Sprintf("%+v %v", tasks, err)
		})
	}
	dockerOn(t, control, "node", "update", "--availability", "drain", victimID)
	// No node may take them now: their tasks wait, never on the impostor,
	// which therefore never receives the secret either.
	pending := func(s string) func() (bool, string) {
		return func() (bool, string) {
			tasks, err := tryServiceTasks(control, s)
			if err != nil {
				return false, err.Error()
			}
			waiting := false
			for _, tk := range tasks {
				if tk.NodeID == impostorID {
					t.Fatalf("a task of %s on the impostor: %+v", s, tasks)
				}
				waiting = waiting || tk.DesiredState == "running" && tk.NodeID == "" && tk.State == "pending"
			}
			return waiting, fmt.Sprintf("%+v", tasks)
		}
	}
	for _, s := range []string{"free", "placed"} {
		eventually(t, time.Minute, s+" pending", pending(s))
	}
	time.Sleep(15 * time.Second) // the scheduler had its chances
	for _, s := range []string{"free", "placed"} {
		eventually(t, time.Second, s+" still pending", pending(s))
	}
	if out := dockerOn(t, impostor, "ps", "-aq", "--filter", "label=com.docker.swarm.service.name"); out != "" {
		t.Errorf("the impostor ran service containers: %q", out)
	}

	// Still unproven after the bound, it is removed from the swarm. (The
	// unconstrained service goes first: the impostor's agent joins again
	// with the worker token, and until the leader's next round drains the
	// newcomer, only a node label keeps a service off it.)
	dockerOn(t, control, "service", "rm", "free")
	eventually(t, grace+time.Minute, "the impostor removed", func() (bool, string) {
		nodes, err := trySwarmNodes(control)
		if err != nil {
			return false, err.Error()
		}
		for _, n := range nodes {
			if n.ID == impostorID {
				return false, fmt.Sprintf("%+v", n)
			}
		}
		return true, ""
	})
	if logs := control.Logs(); !strings.Contains(logs, fmt.Sprintf("removed node %s from the swarm, unproven for %s: %s", impostorID, grace, want)) {
		t.Errorf("the leader does not log the removal:\n%s", logs)
	}
	time.Sleep(30 * time.Second) // the impostor's agent may join again meanwhile
	nodes := swarmNodes(t, control)
	for _, tk := range serviceTasks(t, control, "placed") {
		for _, n := range nodes {
			if n.ID == tk.NodeID && n.Status.Addr == liar.ip {
				t.Errorf("a task of placed on the impostor's new node: %+v", tk)
			}
		}
	}
}
