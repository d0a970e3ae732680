package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// impostorLab is a leader with two agents of group web: the victim, busy,
// of instance iW1 at 10.0.2.1, and the impostor, idle, of instance iW2
// at 10.0.2.2, which labels itself with the victim's instance id. EC2
// knows both instances' private IPs.
func impostorLab(t *testing.T) (l *lab, victim, impostor *Node) {
	l = newLab(t)
	victim = l.e.add(Node{ID: nodeID("v1"), Addr: "10.0.2.1", NanoCPUs: 2e9, MemoryBytes: 1900 * mib, Arch: "x86_64",
		Labels: map[string]string{names.EngineLabelInstanceID: iW1, names.EngineLabelGroup: "web"}})
	impostor = l.e.add(Node{ID: nodeID("x1"), Addr: "10.0.2.2", NanoCPUs: 2e9, MemoryBytes: 1900 * mib, Arch: "x86_64",
		Labels: map[string]string{names.EngineLabelInstanceID: iW1, names.EngineLabelGroup: "web"}})
	l.ec2.ips = map[string]string{iW1: "10.0.2.1", iW2: "10.0.2.2", iM1: "10.0.1.1"}
	l.ec2.states = map[string]string{iW1: "running", iW2: "running", iM1: "running"}
	return l, victim, impostor
}

// Two swarm nodes claim one instance: the autoscaler neither terminates
// the busy victim's instance nor drains the victim, the impostor is
// drained as unproven (never scaled in), and the conflict is logged and in
// the snapshot.
func TestAutoscalerIgnoresAnImpostor(t *testing.T) {
	l, victim, impostor := impostorLab(t)
	g := grp("web", sizes(1, 2, 3))
	g.Instances = []string{iW1, iW2}
	l.m.Groups = &groups{c: l.c, groups: []ScalingGroup{g}}
	l.e.listed = []wire.SnapshotService{{ID: "s-api", Name: "api"}}
	l.e.tasks = []Task{running("r1", "s-api", victim.ID, 1500)}
	for range 30 {
		l.round()
		l.clock.now = l.clock.now.Add(time.Minute)
	}
	if l.c.index("terminate") >= 0 || l.c.index("docker node update --availability drain "+victim.ID) >= 0 {
		t.Errorf("acted on a node's word: %v", l.c.l)
	}
	if l.c.count("docker node update --availability drain "+impostor.ID) != 1 {
		t.Errorf("the impostor not drained once as unproven: %v", l.c.l)
	}
	if !l.logged("node " + impostor.ID + " is not believed: its label names instance " + iW1 + ", whose private IP is 10.0.2.1, but the swarm sees it at 10.0.2.2") {
		t.Errorf("conflict not logged: %q", l.logs)
	}
	n := 0
	for _, s := range l.logs {
		if strings.Contains(s, "not believed") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("conflict logged %d times, want once", n)
	}
	snap, err := wire.ParseSnapshot("x", l.b.objects[names.StatusKey], "core")
	if err != nil {
		t.Fatal(err)
	}
	for _, sn := range snap.Nodes {
		if want := sn.NodeID == impostor.ID; (sn.IdentityProblem != "") != want {
			t.Errorf("snapshot node %s: identity problem %q", sn.NodeID, sn.IdentityProblem)
		}
	}
}

// Without the impostor's label, the same idle node is scaled in as usual:
// the test above fails for the right reason.
func TestAutoscalerScalesInAProvenNode(t *testing.T) {
	l, victim, impostor := impostorLab(t)
	impostor.Labels[names.EngineLabelInstanceID] = iW2
	g := grp("web", sizes(1, 2, 3))
	g.Instances = []string{iW1, iW2}
	l.m.Groups = &groups{c: l.c, groups: []ScalingGroup{g}}
	l.e.listed = []wire.SnapshotService{{ID: "s-api", Name: "api"}}
	l.e.tasks = []Task{running("r1", "s-api", victim.ID, 1500)}
	for range 30 {
		l.round()
		l.clock.now = l.clock.now.Add(time.Minute)
	}
	if l.c.index("docker node update --availability drain "+impostor.ID) < 0 || l.c.index("terminate "+iW2) < 0 || l.c.index("terminate "+iW1) >= 0 {
		t.Errorf("calls %v", l.c.l)
	}
}

// A Ready impostor does not get the victim, Down for a moment, removed as
// replaced.
func TestDeadNodeNotReplacedByAnImpostor(t *testing.T) {
	l, victim, _ := impostorLab(t)
	victim.State = "down"
	ctx := context.Background()
	if err := l.m.parts().guard.clean(ctx); err != nil {
		t.Fatal(err)
	}
	l.clock.now = start.Add(l.m.T.DeadGrace + time.Minute)
	l.m.parts().guard.nextDead = time.Time{}
	if err := l.m.parts().guard.clean(ctx); err != nil {
		t.Fatal(err)
	}
	if l.c.index("docker node rm") >= 0 {
		t.Errorf("removed the victim: %v", l.c.l)
	}
}

// A spot interruption of the victim's instance drains the victim only;
// the termination of the victim's instance drains and removes the victim
// only.
func TestNoticesDrainProvenNodesOnly(t *testing.T) {
	l, victim, impostor := impostorLab(t)
	l.confirm(iW1, wire.InterruptionSpot, start.Add(2*time.Minute))
	l.q.put("n1", interruptionBody(wire.DetailSpot, iW1), start)
	l.round()
	l.round()
	// The impostor is drained as unproven, before the notice is read.
	if l.c.index("docker node update --availability drain "+victim.ID) < 0 || l.c.count("docker node update --availability drain "+impostor.ID) != 1 ||
		l.c.index("docker node update --availability drain "+impostor.ID) > l.c.index("sqs delete n1") {
		t.Errorf("interruption: calls %v", l.c.l)
	}

	l, victim, impostor = impostorLab(t)
	l.q.put("n1", terminationBody("core-web-Group-1", iW1, start), start)
	for range 5 {
		l.round()
		l.clock.now = l.clock.now.Add(time.Minute)
	}
	if l.c.index("docker node rm "+victim.ID) < 0 || l.c.count("docker node update --availability drain "+impostor.ID) != 1 || l.c.index("docker node rm "+impostor.ID) >= 0 {
		t.Errorf("termination: calls %v", l.c.l)
	}
}

// Identify, table-driven: what proves a node's instance and what is a
// problem.
func TestIdentify(t *testing.T) {
	node := func(id, addr, instance, state string) Node {
		n := Node{ID: id, Addr: addr, State: state, Labels: map[string]string{}}
		if instance != "" {
			n.Labels[names.EngineLabelInstanceID] = instance
		}
		return n
	}
	ips := map[string]string{iW1: "10.0.2.1", iW2: "10.0.2.2", iM1: "10.0.1.1"}
	mgr := Node{ID: "m", Addr: "0.0.0.0", ManagerAddr: "10.0.1.1:2377", Reachability: "reachable", State: "ready",
		Labels: map[string]string{names.EngineLabelInstanceID: iM1}}
	for _, tt := range []struct {
		name    string
		nodes   []Node
		proven  map[string]string
		problem []string
	}{
		{"agrees", []Node{node("a", "10.0.2.1", iW1, "ready")}, map[string]string{"a": iW1}, nil},
		{"manager at its manager address", []Node{mgr}, map[string]string{"m": iM1}, nil},
		{"another instance's id", []Node{node("a", "10.0.2.2", iW1, "ready")}, map[string]string{}, []string{"a"}},
		{"no address", []Node{node("a", "", iW1, "ready")}, map[string]string{}, []string{"a"}},
		{"no label", []Node{node("a", "10.0.2.1", "", "ready")}, map[string]string{}, nil},
		{"not an instance id", []Node{node("a", "10.0.2.1", "i-web1", "ready")}, map[string]string{}, []string{"a"}},
		{"instance gone", []Node{node("a", "10.0.2.9", "i-00000000000000d01", "down")}, map[string]string{}, nil},
		{"rejoined: old node down", []Node{node("a", "10.0.2.1", iW1, "down"), node("b", "10.0.2.1", iW1, "ready")},
			map[string]string{"a": iW1, "b": iW1}, nil},
		{"two live nodes at one address", []Node{node("a", "10.0.2.1", iW1, "ready"), node("b", "10.0.2.1", iW1, "ready")},
			map[string]string{}, []string{"a", "b"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ids := Identify(tt.nodes, ips)
			for _, n := range tt.nodes {
				if got := ids.Instance(n.ID); got != tt.proven[n.ID] {
					t.Errorf("node %s proven %q, want %q", n.ID, got, tt.proven[n.ID])
				}
				want := false
				for _, p := range tt.problem {
					want = want || p == n.ID
				}
				if (ids.Problem(n.ID) != "") != want {
					t.Errorf("node %s problem %q, want one: %v", n.ID, ids.Problem(n.ID), want)
				}
			}
		})
	}
}
