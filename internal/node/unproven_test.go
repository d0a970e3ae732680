package node

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// The impostor is drained at the first round, before anything else of
// the round, with the availability it had and the time recorded on the
// node; it is removed once unproven for UnprovenGrace, not before; the
// victim is never touched; all of it logged and in the snapshot.
func TestUnprovenNodeDrainedThenRemoved(t *testing.T) {
	l, victim, impostor := impostorLab(t)
	l.m.T.UnprovenGrace = 3 * time.Minute
	l.round()
	drain := "docker node update --availability drain " + impostor.ID
	if l.c.count(drain) != 1 || impostor.Availability != wire.AvailabilityDrain {
		t.Fatalf("the impostor is not drained: %v", l.c.l)
	}
	if impostor.NodeLabels[names.NodeLabelDrainedUnproven] != "active" || impostor.NodeLabels[names.NodeLabelUnprovenSince] != start.Format(time.RFC3339) {
		t.Errorf("the drain is not recorded on the node: %v", impostor.NodeLabels)
	}
	l.order("docker node update --label-add "+names.NodeLabelDrainedUnproven+"=active", drain, "s3 put "+names.StatusKey)
	if !l.logged("drained node " + impostor.ID + ", which is not proven: its label names instance " + iW1) {
		t.Errorf("logs %q", l.logs)
	}
	snap, err := l.m.parts().status.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range snap.Nodes {
		if want := n.NodeID == impostor.ID; (n.Unproven != "") != want {
			t.Errorf("snapshot node %s: unproven %q", n.NodeID, n.Unproven)
		}
		if n.NodeID == impostor.ID && n.NodeLabels[names.NodeLabelDrainedUnproven] != "active" {
			t.Errorf("snapshot node %s: node labels %v", n.NodeID, n.NodeLabels)
		}
	}
	for range 2 {
		l.clock.now = l.clock.now.Add(time.Minute)
		l.round()
	}
	if l.c.index("docker node rm") >= 0 || l.c.count(drain) != 1 {
		t.Fatalf("removed or drained again within the bound: %v", l.c.l)
	}
	l.clock.now = start.Add(3 * time.Minute)
	l.round()
	if l.c.index("docker node rm "+impostor.ID) < 0 || l.e.nodes[impostor.ID] != nil {
		t.Fatalf("the impostor is not removed after the bound: %v", l.c.l)
	}
	if !l.logged("removed node " + impostor.ID + " from the swarm, unproven for 3m0s") {
		t.Errorf("logs %q", l.logs)
	}
	if l.c.index("docker node update --availability drain "+victim.ID) >= 0 || l.c.index("docker node rm "+victim.ID) >= 0 || victim.NodeLabels != nil {
		t.Errorf("the victim was acted on: %v", l.c.l)
	}
}

// A new leader goes on where the last one stopped: the time recorded on
// the node, not its own memory, decides the removal.
func TestUnprovenClockOutlivesTheLeader(t *testing.T) {
	l, _, impostor := impostorLab(t)
	impostor.NodeLabels = map[string]string{names.NodeLabelUnprovenSince: start.Add(-time.Hour).Format(time.RFC3339)}
	impostor.Availability = wire.AvailabilityDrain
	l.round()
	if l.c.index("docker node rm "+impostor.ID) < 0 {
		t.Fatalf("calls %v", l.c.l)
	}
}

// An agent whose instance EC2 does not know yet is drained, and is made
// active again once proven; its records are removed.
func TestProvenAgainMadeActive(t *testing.T) {
	l := newLab(t)
	n := l.e.addWorker(nodeID("w1"), iW1)
	l.ec2.states[iW1] = "terminated" // EC2 gives it no address
	l.round()
	if n.Availability != wire.AvailabilityDrain || !l.logged("EC2 gives its instance "+iW1+" no private IP") {
		t.Fatalf("not drained: %v %q", l.c.l, l.logs)
	}
	delete(l.ec2.states, iW1)
	l.clock.now = l.clock.now.Add(time.Minute)
	l.round()
	if n.Availability != wire.AvailabilityActive || len(n.NodeLabels) != 0 {
		t.Fatalf("not active again: %s %v; calls %v", n.Availability, n.NodeLabels, l.c.l)
	}
	if !l.logged("node " + n.ID + " is proven to be instance " + iW1 + ": active again") {
		t.Errorf("logs %q", l.logs)
	}
}

// A node an operator drained (or a notice did) is never made active by
// the leader: it only records since when it is unproven, and clears that
// once proven.
func TestOperatorDrainNotUndone(t *testing.T) {
	l := newLab(t)
	n := l.e.addWorker(nodeID("w1"), iW1)
	n.Availability = wire.AvailabilityDrain
	l.ec2.states[iW1] = "terminated"
	l.round()
	if _, ok := n.NodeLabels[names.NodeLabelDrainedUnproven]; ok || n.NodeLabels[names.NodeLabelUnprovenSince] == "" {
		t.Fatalf("node labels %v", n.NodeLabels)
	}
	delete(l.ec2.states, iW1)
	l.clock.now = l.clock.now.Add(time.Minute)
	l.round()
	if n.Availability != wire.AvailabilityDrain || len(n.NodeLabels) != 0 || l.c.index("docker node update --availability active") >= 0 {
		t.Fatalf("the operator's drain undone: %s %v; calls %v", n.Availability, n.NodeLabels, l.c.l)
	}
}

// A node that names no instance at all is not proven either.
func TestNodeNamingNoInstanceDrained(t *testing.T) {
	l := newLab(t)
	n := l.e.add(Node{ID: nodeID("x1"), Addr: "10.0.2.7"})
	l.round()
	if n.Availability != wire.AvailabilityDrain || !l.logged("drained node "+n.ID+", which is not proven: it names no instance") {
		t.Fatalf("calls %v; logs %q", l.c.l, l.logs)
	}
}

// An unproven manager is demoted and removed only when the managers left
// keep a quorum without it.
func TestUnprovenManagerAndQuorum(t *testing.T) {
	for _, tt := range []struct {
		name     string
		other    string // the third manager's reachability
		removed  bool
		loggedAs string
	}{
		{"two reachable left", "reachable", true, "removed node"},
		{"one of two reachable left", "unreachable", false, "the swarm needs it for its quorum"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newLab(t)
			l.m.T.UnprovenGrace = time.Minute
			l.ec2.ips = map[string]string{iM1: "10.0.1.1", iM2: "10.0.1.2"}
			l.e.addManager(nodeID("m2"), iM2, "10.0.1.2", false).Reachability = tt.other
			x := l.e.addManager(nodeID("m3"), iM1, "10.0.1.3", false) // claims the leader's instance
			l.round()
			l.clock.now = l.clock.now.Add(2 * time.Minute)
			l.round()
			l.round()
			if removed := l.e.nodes[x.ID] == nil; removed != tt.removed {
				t.Fatalf("removed %v; calls %v", removed, l.c.l)
			}
			if tt.removed {
				l.order("docker node demote "+x.ID, "docker node rm "+x.ID)
			} else if l.c.index("docker node demote") >= 0 {
				t.Errorf("demoted: %v", l.c.l)
			}
			if !l.logged(tt.loggedAs) {
				t.Errorf("logs %q", l.logs)
			}
			n := 0
			for _, s := range l.logs {
				if strings.Contains(s, "needs it for its quorum") {
					n++
				}
			}
			if n > 1 {
				t.Errorf("the quorum logged %d times", n)
			}
		})
	}
}

// labelLab is a leader with agent w1 of instance iW1, in Auto Scaling
// group web (labels disk=ssd) and a spot m5.large as EC2 says; the
// agent's engine labels say otherwise.
func labelLab(t *testing.T) (*lab, *Node, *groups) {
	l := newLab(t)
	n := l.e.add(Node{ID: nodeID("w1"), Addr: "10.0.2.1", Labels: map[string]string{names.EngineLabelInstanceID: iW1,
		names.EngineLabelGroup: "gpu", names.EngineLabelLifecycle: "on-demand", "disk": "nvme"}})
	g := grp("web", labels("disk", "ssd"))
	g.Instances = []string{iW1}
	gs := &groups{c: l.c, groups: []ScalingGroup{g}}
	l.m.Groups, l.m.Facts = gs, l.ec2
	l.m.T.AutoscaleEvery = time.Hour
	l.ec2.facts = map[string]InstanceFacts{iW1: {Type: "m5.large", Lifecycle: "spot", Zone: "eu-west-1b"},
		iM1: {Type: "t3.small", Lifecycle: "on-demand", Zone: "eu-west-1a"}}
	return l, n, gs
}

// The proven nodes' node labels are what Auto Scaling and EC2 say, never
// what the node says; a change of the group's labels follows, an
// operator's label stays, and an unproven node carries none.
func TestNodeLabelsFromTrustedSources(t *testing.T) {
	l, n, gs := labelLab(t)
	l.round()
	want := map[string]string{names.EngineLabelInstanceID: iW1, names.EngineLabelGroup: "web", names.EngineLabelInstanceType: "m5.large",
		names.EngineLabelLifecycle: "spot", names.EngineLabelZone: "eu-west-1b", "disk": "ssd", names.NodeLabelKeys: "disk"}
	if !maps.Equal(n.NodeLabels, want) {
		t.Fatalf("node labels %v, want %v", n.NodeLabels, want)
	}
	leader := l.e.nodes[nodeID("m1")]
	if leader.NodeLabels[names.EngineLabelGroup] != names.GroupControl || leader.NodeLabels[names.EngineLabelInstanceID] != iM1 {
		t.Errorf("the leader's node labels %v", leader.NodeLabels)
	}
	if !l.logged("labelled node " + n.ID + ", proven to be instance " + iW1 + ": clusterctl.group=web") {
		t.Errorf("logs %q", l.logs)
	}

	// Not asked again before LabelsEvery, nor set again unchanged.
	asked := l.c.count("ec2 describe facts")
	n.NodeLabels["owner"] = "ops"
	gs.groups[0].Labels = map[string]string{"tier": "front"}
	l.round()
	if l.c.count("ec2 describe facts") != asked {
		t.Errorf("asked EC2 again within LabelsEvery: %v", l.c.l)
	}
	l.clock.now = l.clock.now.Add(l.m.T.LabelsEvery)
	l.round()
	if n.NodeLabels["tier"] != "front" || n.NodeLabels["disk"] != "" || n.NodeLabels["owner"] != "ops" || n.NodeLabels[names.NodeLabelKeys] != "tier" {
		t.Errorf("after the group's labels changed: %v", n.NodeLabels)
	}

	// Unproven (another node at its address claims it too), it loses them.
	l.e.add(Node{ID: nodeID("w2"), Addr: "10.0.2.1", Labels: map[string]string{names.EngineLabelInstanceID: iW1}})
	l.round()
	for _, k := range append(placementLabels, "tier") {
		if _, ok := n.NodeLabels[k]; ok {
			t.Errorf("unproven, it keeps %s: %v", k, n.NodeLabels)
		}
	}
	if n.NodeLabels["owner"] != "ops" || n.Availability != wire.AvailabilityDrain {
		t.Errorf("node %s: %s %v", n.ID, n.Availability, n.NodeLabels)
	}
}

// An impostor gets no node labels, whatever it names.
func TestImpostorGetsNoNodeLabels(t *testing.T) {
	l, victim, impostor := impostorLab(t)
	g := grp("web", labels("disk", "ssd"))
	g.Instances = []string{iW1, iW2}
	l.m.Groups, l.m.Facts = &groups{c: l.c, groups: []ScalingGroup{g}}, l.ec2
	l.m.T.AutoscaleEvery = time.Hour
	l.ec2.facts = map[string]InstanceFacts{iW1: {Type: "m5.large", Lifecycle: "on-demand", Zone: "eu-west-1a"},
		iW2: {Type: "m5.large", Lifecycle: "on-demand", Zone: "eu-west-1a"}}
	l.round()
	if victim.NodeLabels[names.EngineLabelGroup] != "web" {
		t.Errorf("the victim's node labels %v", victim.NodeLabels)
	}
	for k := range impostor.NodeLabels {
		if k != names.NodeLabelUnprovenSince && k != names.NodeLabelDrainedUnproven {
			t.Errorf("the impostor got node label %s", k)
		}
	}
}

// quorumWithout, table-driven.
func TestQuorumWithout(t *testing.T) {
	m := func(id, r string) Node { return Node{ID: id, Role: "manager", Reachability: r} }
	for _, tt := range []struct {
		nodes []Node
		want  bool
	}{
		{[]Node{m("a", "reachable"), m("x", "reachable")}, true},
		{[]Node{m("a", "reachable"), m("b", "reachable"), m("x", "reachable")}, true},
		{[]Node{m("a", "reachable"), m("b", "unreachable"), m("x", "reachable")}, false},
		{[]Node{m("a", "reachable"), m("b", "reachable"), m("c", "unreachable"), m("x", "unreachable")}, true},
		{[]Node{m("a", "reachable"), m("b", "unreachable"), m("c", "unreachable"), m("x", "reachable")}, false},
		{[]Node{m("x", "reachable")}, false},
	} {
		if got := quorumWithout(tt.nodes, Node{ID: "x"}); got != tt.want {
			t.Errorf("%v: %v, want %v", tt.nodes, got, tt.want)
		}
	}
}

// A new manager unproven for a moment, drained by the leader, stays
// drained once proven: managers run no workloads.
func TestProvenManagerStaysDrained(t *testing.T) {
	l := newLab(t)
	n := l.e.addManager(nodeID("m2"), iM2, "10.0.1.2", false)
	n.Availability = wire.AvailabilityActive
	l.ec2.states[iM2] = "terminated"
	l.ec2.ips = map[string]string{iM1: "10.0.1.1"}
	l.round()
	if n.Availability != wire.AvailabilityDrain || n.NodeLabels[names.NodeLabelDrainedUnproven] != "active" {
		t.Fatalf("not drained: %s %v", n.Availability, n.NodeLabels)
	}
	delete(l.ec2.states, iM2)
	l.ec2.ips[iM2] = "10.0.1.2"
	l.clock.now = l.clock.now.Add(time.Minute)
	l.round()
	if n.Availability != wire.AvailabilityDrain || n.NodeLabels[names.NodeLabelDrainedUnproven] != "" || !l.logged("node "+n.ID+" is proven to be instance "+iM2) {
		t.Fatalf("%s %v; logs %q", n.Availability, n.NodeLabels, l.logs)
	}
}
