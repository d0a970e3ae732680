package node

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clusterctl/clusterctl/internal/lease"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

const mib = 1 << 20

var types = map[string]InstanceType{
	"t3.small":  {VCPUs: 2, MemoryMiB: 2048, Archs: []string{"x86_64"}}, // offers 1792 MiB
	"m5.large":  {VCPUs: 2, MemoryMiB: 8192, Archs: []string{"x86_64"}},
	"r5.large":  {VCPUs: 2, MemoryMiB: 16384, Archs: []string{"x86_64"}},
	"m6g.large": {VCPUs: 2, MemoryMiB: 8192, Archs: []string{"arm64"}},
}

// grp is an autoscaled group "<name>" of cluster core: min 1, max 3, one
// node, of the types given (t3.small by default).
func grp(name string, opts ...func(*ScalingGroup)) ScalingGroup {
	g := ScalingGroup{Name: "core-" + name + "-Group-1", Group: name, Min: 1, Max: 3, Desired: 1, Autoscale: true,
		ScaleDownAfter: 10 * time.Minute, InstanceTypes: []string{"t3.small"}, Lifecycles: []string{"on-demand"}, Zones: []string{"eu-west-1a"},
		Instances: []string{"i-" + name + "1"}}
	for _, o := range opts {
		o(&g)
	}
	return g
}

func typesOf(t ...string) func(*ScalingGroup) { return func(g *ScalingGroup) { g.InstanceTypes = t } }
func sizes(min, desired, max int) func(*ScalingGroup) {
	return func(g *ScalingGroup) { g.Min, g.Desired, g.Max = min, desired, max }
}
func labels(kv ...string) func(*ScalingGroup) {
	return func(g *ScalingGroup) {
		g.Labels = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			g.Labels[kv[i]] = kv[i+1]
		}
	}
}
func spot(g *ScalingGroup)   { g.Lifecycles = []string{"spot"} }
func manual(g *ScalingGroup) { g.Autoscale = false }
func updating(g *ScalingGroup) {
	g.Busy = "its stack is UPDATE_IN_PROGRESS"
}

// pend is a pending task of service reserving memMiB and cpu (CPUs).
func pend(id, service string, memMiB int64, cpu float64, constraints ...string) Task {
	return Task{ID: id, ServiceID: service, DesiredState: "running", State: "pending", Err: "no suitable node (insufficient resources on 1 node)",
		MemoryBytes: memMiB * mib, NanoCPUs: int64(cpu * 1e9), Constraints: constraints}
}

// onPlatform gives a task the platforms of its image.
func onPlatform(t Task, arch ...string) Task {
	for _, a := range arch {
		t.Platforms = append(t.Platforms, Platform{Architecture: a, OS: "linux"})
	}
	return t
}

// worker is a ready worker node of group with instance, offering a
// t3.small's 1.9 GiB.
func worker(id, group, instance string) Node {
	return Node{ID: id, Role: "worker", State: "ready", Availability: "active", NanoCPUs: 2e9, MemoryBytes: 1900 * mib, Arch: "x86_64",
		Labels: map[string]string{names.EngineLabelGroup: group, names.EngineLabelInstanceID: instance, names.EngineLabelInstanceType: "t3.small"}}
}

// running is a task of service running on node, reserving memMiB.
func running(id, service, node string, memMiB int64) Task {
	return Task{ID: id, ServiceID: service, NodeID: node, DesiredState: "running", State: "running", MemoryBytes: memMiB * mib}
}

// input is the autoscaler's input where every node is proven to be the
// instance it names.
func input(groups []ScalingGroup, nodes []Node, tasks ...Task) ScaleInput {
	proven := map[string]string{}
	for _, n := range nodes {
		proven[n.ID] = n.Labels[names.EngineLabelInstanceID]
	}
	return ScaleInput{Now: start, Groups: groups, Types: types, Nodes: nodes, Tasks: tasks,
		Global: map[string]bool{"logs": true}, Names: map[string]string{}, Leased: map[string]bool{}, Instances: proven}
}

func describe(p ScalePlan) string {
	var l []string
	for _, a := range p.Actions {
		s := fmt.Sprintf("%s %s %d→%d", a.Kind, a.Group, a.From, a.To)
		if a.Node != "" {
			s += " " + a.Node
		}
		l = append(l, s+": "+a.Reason)
	}
	for _, u := range p.Unplaceable {
		l = append(l, fmt.Sprintf("unplaceable %s ×%d: %s", u.Service, u.Tasks, u.Reason))
	}
	return strings.Join(l, "\n")
}

// One round: pending tasks × groups × instance types → decision.
func TestScaleOutDecision(t *testing.T) {
	// The web node has 1 GiB reserved of its 1.9: a task of 1.5 GiB does
	// not fit on it.
	busy := []Node{worker("w1", "web", "i-web1")}
	used := running("r1", "old", "w1", 1024)
	used.NanoCPUs = 5e8
	for _, tt := range []struct {
		name   string
		groups []ScalingGroup
		tasks  []Task
		leased string
		want   string
	}{
		{"memory", []ScalingGroup{grp("web")}, []Task{pend("a1", "api", 1500, 0), pend("a2", "api", 1500, 0)},
			"", "scale-out web 1→3: 2 tasks of api pending: insufficient memory"},
		{"CPU", []ScalingGroup{grp("web")}, []Task{pend("a1", "api", 0, 2)},
			"", "scale-out web 1→2: 1 task of api pending: insufficient CPU"},
		{"never above max", []ScalingGroup{grp("web", sizes(1, 1, 2))}, []Task{pend("a1", "api", 1500, 0), pend("a2", "api", 1500, 0)},
			"", "scale-out web 1→2: 1 task of api pending: insufficient memory"},
		{"at max", []ScalingGroup{grp("web", sizes(1, 3, 3))}, []Task{pend("a1", "api", 1500, 0)}, "", ""},
		{"first-fit packing", []ScalingGroup{grp("web", sizes(1, 1, 9))},
			[]Task{pend("a1", "api", 1000, 0), pend("a2", "api", 700, 0), pend("a3", "api", 1000, 0), pend("a4", "api", 700, 0)},
			"", "scale-out web 1→3: 4 tasks of api pending: insufficient memory"},
		{"services by their tasks", []ScalingGroup{grp("web", sizes(1, 1, 9))},
			[]Task{pend("a1", "api", 1500, 0), pend("b1", "batch", 1500, 0), pend("b2", "batch", 1500, 0)},
			"", "scale-out web 1→4: 2 tasks of batch, 1 of api pending: insufficient memory"},
		{"least waste", []ScalingGroup{grp("big", typesOf("r5.large")), grp("web")}, []Task{pend("a1", "api", 1500, 0)},
			"", "scale-out web 1→2: 1 task of api pending: insufficient memory"},
		{"least waste, the other way", []ScalingGroup{grp("big", typesOf("r5.large")), grp("web")}, []Task{pend("a1", "api", 6000, 0)},
			"", "scale-out big 1→2: 1 task of api pending: insufficient memory"},
		{"spot before on-demand at equal waste", []ScalingGroup{grp("a-od"), grp("b-spot", spot)}, []Task{pend("a1", "api", 1500, 0)},
			"", "scale-out b-spot 1→2: 1 task of api pending: insufficient memory"},
		{"group labels", []ScalingGroup{grp("plain"), grp("ssd", labels("disk", "ssd"))}, []Task{pend("a1", "api", 10, 0, "engine.labels.disk==ssd")},
			"", "scale-out ssd 1→2: 1 task of api pending: no node satisfies its placement"},
		{"label excluded", []ScalingGroup{grp("plain"), grp("ssd", labels("disk", "ssd"))}, []Task{pend("a1", "api", 1500, 0, "engine.labels.disk!=ssd")},
			"", "scale-out plain 1→2: 1 task of api pending: insufficient memory"},
		{"tasks without reservations: one node for a constraint", []ScalingGroup{grp("ssd", labels("disk", "ssd"), sizes(1, 1, 9))},
			[]Task{pend("a1", "api", 0, 0, "engine.labels.disk==ssd"), pend("a2", "api", 0, 0, "engine.labels.disk==ssd"), pend("a3", "api", 0, 0, "engine.labels.disk==ssd")},
			"", "scale-out ssd 1→2: 3 tasks of api pending: no node satisfies its placement"},
		{"instance type of every type the group launches", []ScalingGroup{grp("mixed", typesOf("t3.small", "m5.large")), grp("m5", typesOf("m5.large"))},
			[]Task{pend("a1", "api", 10, 0, "engine.labels.clusterctl.instance-type==m5.large")},
			"", "scale-out m5 1→2: 1 task of api pending: no node satisfies its placement"},
		{"lifecycle", []ScalingGroup{grp("od"), grp("sp", spot)}, []Task{pend("a1", "api", 10, 0, "engine.labels.clusterctl.lifecycle==spot")},
			"", "scale-out sp 1→2: 1 task of api pending: no node satisfies its placement"},
		{"zone", []ScalingGroup{grp("web")}, []Task{pend("a1", "api", 10, 0, "engine.labels.clusterctl.zone==eu-west-1b")},
			"", "unplaceable api ×1: no group's nodes satisfy its placement"},
		{"group name", []ScalingGroup{grp("web"), grp("db")}, []Task{pend("a1", "api", 10, 0, "engine.labels.clusterctl.group==db")},
			"", "scale-out db 1→2: 1 task of api pending: insufficient memory"},
		{"workers only", []ScalingGroup{grp("web")}, []Task{pend("a1", "api", 10, 0, "node.role==manager")},
			"", "unplaceable api ×1: no group's nodes satisfy its placement"},
		{"node.role==worker", []ScalingGroup{grp("web")}, []Task{pend("a1", "api", 1500, 0, "node.role==worker")},
			"", "scale-out web 1→2: 1 task of api pending: insufficient memory"},
		{"a new node has no node labels but the leader's", []ScalingGroup{grp("web")}, []Task{pend("a1", "api", 10, 0, "node.labels.zone==x")},
			"", "unplaceable api ×1: no group's nodes satisfy its placement"},
		{"node labels the leader sets: the group's", []ScalingGroup{grp("plain"), grp("ssd", labels("disk", "ssd"))}, []Task{pend("a1", "api", 10, 0, "node.labels.disk==ssd")},
			"", "scale-out ssd 1→2: 1 task of api pending: no node satisfies its placement"},
		{"node labels the leader sets: the group name", []ScalingGroup{grp("web"), grp("db")}, []Task{pend("a1", "api", 10, 0, "node.labels.clusterctl.group==db")},
			"", "scale-out db 1→2: 1 task of api pending: no node satisfies its placement"},
		{"node labels the leader sets: the lifecycle", []ScalingGroup{grp("od"), grp("sp", spot)}, []Task{pend("a1", "api", 10, 0, "node.labels.clusterctl.lifecycle==spot")},
			"", "scale-out sp 1→2: 1 task of api pending: no node satisfies its placement"},
		{"architecture of the image", []ScalingGroup{grp("x86", typesOf("m5.large")), grp("arm", typesOf("m6g.large"))},
			[]Task{onPlatform(pend("a1", "api", 6000, 0), "arm64")},
			"", "scale-out arm 1→2: 1 task of api pending: no node satisfies its placement"},
		{"architecture constraint", []ScalingGroup{grp("x86", typesOf("m5.large")), grp("arm", typesOf("m6g.large"))},
			[]Task{pend("a1", "api", 6000, 0, "node.platform.arch==x86_64")},
			"", "scale-out x86 1→2: 1 task of api pending: insufficient memory"},
		{"multi-arch image", []ScalingGroup{grp("arm", typesOf("m6g.large"))},
			[]Task{onPlatform(pend("a1", "api", 6000, 0), "amd64", "arm64")},
			"", "scale-out arm 1→2: 1 task of api pending: insufficient memory"},
		{"no group can ever hold it", []ScalingGroup{grp("web"), grp("big", typesOf("r5.large"))}, []Task{pend("a1", "huge", 32000, 0), pend("a2", "huge", 32000, 0)},
			"", "unplaceable huge ×2: reserves more than a node of any group offers (0 CPU, 32000 MiB)"},
		{"the engine's reserve", []ScalingGroup{grp("web")}, []Task{pend("a1", "api", 1800, 0)},
			"", "unplaceable api ×1: reserves more than a node of any group offers (0 CPU, 1800 MiB)"},
		{"held by a group without autoscaling: not scaled, not unplaceable", []ScalingGroup{grp("web"), grp("fixed", manual, typesOf("r5.large"))},
			[]Task{pend("a1", "api", 6000, 0)}, "", ""},
		{"a group without autoscaling never changes", []ScalingGroup{grp("web", manual)}, []Task{pend("a1", "api", 1500, 0)}, "", ""},
		{"rolling update", []ScalingGroup{grp("web", updating)}, []Task{pend("a1", "api", 1500, 0)}, "", ""},
		{"rolling update of one group, another takes it", []ScalingGroup{grp("web", updating), grp("web2")}, []Task{pend("a1", "api", 1500, 0)},
			"", "scale-out web2 1→2: 1 task of api pending: insufficient memory"},
		{"lease held", []ScalingGroup{grp("web")}, []Task{pend("a1", "api", 1500, 0)}, "web", ""},
		{"not pending: scheduling", []ScalingGroup{grp("web")}, []Task{{ID: "a1", ServiceID: "api", DesiredState: "running", State: "pending", MemoryBytes: 1500 * mib}}, "", ""},
		{"types EC2 did not describe", []ScalingGroup{grp("web", typesOf("x9.unknown"))}, []Task{pend("a1", "api", 1500, 0)},
			"", "unplaceable api ×1: no group's nodes satisfy its placement"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Every group's node is in the swarm, full but web's.
			nodes, tasks := append([]Node(nil), busy...), append(tt.tasks, used)
			for _, g := range tt.groups {
				if g.Group != "web" {
					nodes = append(nodes, worker(g.Group+"1", g.Group, g.Instances[0]))
					full := running("f-"+g.Group, "old", g.Group+"1", 1900)
					full.NanoCPUs = 2e9
					tasks = append(tasks, full)
				}
			}
			in := input(tt.groups, nodes, tasks...)
			in.Names["api"], in.Names["batch"], in.Names["huge"] = "api", "batch", "huge"
			if tt.leased != "" {
				in.Leased[tt.leased] = true
			}
			a := &Autoscaler{JoinWait: 10 * time.Minute, DrainTimeout: time.Minute}
			if got := describe(a.Decide(in)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// rounds drives an autoscaler over rounds, carrying its actions out on
// the input as AWS and the swarm would.
type rounds struct {
	t  *testing.T
	a  *Autoscaler
	in ScaleInput
}

func (r *rounds) step(d time.Duration) string {
	r.in.Now = r.in.Now.Add(d)
	p := r.a.Decide(r.in)
	for _, act := range p.Actions {
		r.a.Done(act, r.in.Now, nil)
		g := &r.in.Groups[0]
		for i := range r.in.Groups {
			if r.in.Groups[i].Name == act.ASG {
				g = &r.in.Groups[i]
			}
		}
		switch act.Kind {
		case ScaleOut, ScaleIn:
			g.Desired = act.To
		}
		for i := range r.in.Nodes {
			if r.in.Nodes[i].ID == act.Node {
				switch act.Kind {
				case Drain:
					r.in.Nodes[i].Availability = "drain"
				case Undrain:
					r.in.Nodes[i].Availability = "active"
				}
			}
		}
	}
	return describe(p)
}

func (r *rounds) expect(d time.Duration, want string) {
	r.t.Helper()
	if got := r.step(d); got != want {
		r.t.Fatalf("after %s: got\n%s\nwant\n%s", d, got, want)
	}
}

// A group with fewer nodes in the swarm than its desired capacity (nodes
// booting, launched before this leader led) is not scaled out for pending
// tasks, which those nodes may take, until JoinWait has passed.
func TestScaleOutWaitsForBootingNodes(t *testing.T) {
	g := grp("web", sizes(1, 2, 5))
	g.Instances = []string{"i-web1", "i-web2"}
	r := &rounds{t: t, a: &Autoscaler{JoinWait: 10 * time.Minute, DrainTimeout: time.Minute},
		in: input([]ScalingGroup{g}, []Node{worker("w1", "web", "i-web1")}, running("r1", "old", "w1", 1024), pend("a1", "api", 1500, 0))}
	r.in.Names["api"] = "api"
	r.expect(0, "")
	r.expect(9*time.Minute, "")
	r.expect(time.Minute, "scale-out web 2→3: 1 task of api pending: insufficient memory")
}

// After a scale-out the group waits for its nodes before it is decided
// on again; then it goes on.
func TestScaleOutWaitsForNodes(t *testing.T) {
	r := &rounds{t: t, a: &Autoscaler{JoinWait: 10 * time.Minute, DrainTimeout: time.Minute},
		in: input([]ScalingGroup{grp("web", sizes(1, 1, 5))}, []Node{worker("w1", "web", "i-web1")}, running("r1", "old", "w1", 1024), pend("a1", "api", 1500, 0))}
	r.in.Names["api"] = "api"
	r.expect(0, "scale-out web 1→2: 1 task of api pending: insufficient memory")
	r.expect(10*time.Second, "")
	r.expect(time.Minute, "")
	// The new node joins: the task goes there, another is pending.
	r.in.Groups[0].Instances = append(r.in.Groups[0].Instances, "i-web2")
	r.in.Nodes = append(r.in.Nodes, worker("w2", "web", "i-web2"))
	r.in.Instances["w2"] = "i-web2"
	r.in.Tasks = []Task{running("r1", "old", "w1", 1024), running("a1", "api", "w2", 1500), pend("a2", "api", 1500, 0)}
	r.expect(10*time.Second, "scale-out web 2→3: 1 task of api pending: insufficient memory")
	// No node comes: after JoinWait the group is decided on again.
	r.expect(9*time.Minute, "")
	r.expect(2*time.Minute, "scale-out web 3→4: 1 task of api pending: insufficient memory")
}

// A node idle for scaleDownAfter, global services aside, is drained,
// then terminated with the capacity decremented; one node at a time, never
// below min, never a manager.
func TestScaleIn(t *testing.T) {
	nodes := []Node{worker("w1", "web", "i-web1"), worker("w2", "web", "i-web2"), worker("w3", "web", "i-web3")}
	mgr := worker("m1", "web", "i-web9")
	mgr.Role, mgr.ManagerAddr = "manager", "10.0.1.1:2377"
	nodes = append(nodes, mgr)
	g := grp("web", sizes(1, 3, 3))
	g.Instances = []string{"i-web1", "i-web2", "i-web3", "i-web9"}
	r := &rounds{t: t, a: &Autoscaler{JoinWait: 10 * time.Minute, DrainTimeout: time.Minute},
		in: input([]ScalingGroup{g}, nodes, running("r1", "api", "w1", 100), running("g2", "logs", "w2", 10), running("g3", "logs", "w3", 10))}
	r.expect(0, "")
	r.expect(9*time.Minute, "")
	r.expect(time.Minute, "drain web 3→3 w2: node w2 idle for 10m0s")
	// The global task on it stops.
	r.in.Tasks = r.in.Tasks[:2]
	r.in.Tasks[1].State, r.in.Tasks[1].DesiredState = "shutdown", "shutdown"
	r.expect(10*time.Second, "scale-in web 3→2 w2: node w2 (i-web2) idle for 10m10s, drained")
	// One at a time: w3 waits until i-web2 has left the group.
	r.expect(10*time.Second, "")
	r.in.Groups[0].Instances = []string{"i-web1", "i-web3", "i-web9"}
	r.in.Nodes = []Node{nodes[0], nodes[2], mgr}
	r.expect(10*time.Second, "drain web 2→2 w3: node w3 idle for 10m30s")
	r.in.Tasks = r.in.Tasks[:1]
	r.expect(10*time.Second, "scale-in web 2→1 w3: node w3 (i-web3) idle for 10m40s, drained")
	r.in.Groups[0].Instances = []string{"i-web1", "i-web9"}
	r.in.Nodes = []Node{nodes[0], mgr}
	// At min: w1 idle forever stays, and so does the manager.
	r.in.Tasks = nil
	r.expect(time.Hour, "")
	r.expect(time.Hour, "")
}

// A drain is undone when the group is needed again or may not shrink; no
// scale-in while the group is updated or leased.
func TestScaleInUndone(t *testing.T) {
	setup := func() *rounds {
		g := grp("web", sizes(1, 2, 3))
		g.Instances = []string{"i-web1", "i-web2"}
		r := &rounds{t: t, a: &Autoscaler{JoinWait: 10 * time.Minute, DrainTimeout: time.Minute},
			in: input([]ScalingGroup{g}, []Node{worker("w1", "web", "i-web1"), worker("w2", "web", "i-web2")},
				running("r1", "api", "w1", 100), running("r2", "api", "w2", 100))}
		r.in.Names["api"] = "api"
		r.expect(0, "")
		r.in.Tasks = r.in.Tasks[:1]
		r.expect(time.Second, "")
		return r
	}
	t.Run("needed", func(t *testing.T) {
		r := setup()
		r.expect(10*time.Minute, "drain web 2→2 w2: node w2 idle for 10m0s")
		r.in.Tasks = append(r.in.Tasks, pend("p1", "api", 1500, 0))
		r.expect(time.Second, "undrain web 0→0 w2: pending tasks need it")
	})
	t.Run("at min", func(t *testing.T) {
		r := setup()
		r.expect(10*time.Minute, "drain web 2→2 w2: node w2 idle for 10m0s")
		r.in.Groups[0].Desired = 1
		r.expect(time.Second, "undrain web 0→0 w2: the group is at its minimum (1)")
	})
	t.Run("rolling update", func(t *testing.T) {
		r := setup()
		r.in.Groups[0].Busy = "its stack is UPDATE_IN_PROGRESS"
		r.expect(10*time.Minute, "")
		r.in.Groups[0].Busy = ""
		r.expect(time.Second, "drain web 2→2 w2: node w2 idle for 10m1s")
		r.in.Groups[0].Busy = "its stack is UPDATE_IN_PROGRESS"
		r.expect(time.Second, "undrain web 0→0 w2: its stack is UPDATE_IN_PROGRESS")
	})
	t.Run("lease", func(t *testing.T) {
		r := setup()
		r.in.Leased["web"] = true
		r.expect(10*time.Minute, "")
	})
	t.Run("busy again", func(t *testing.T) {
		r := setup()
		r.expect(9*time.Minute, "")
		r.in.Tasks = append(r.in.Tasks, running("r3", "api", "w2", 100))
		r.expect(time.Minute, "")
		r.in.Tasks = r.in.Tasks[:1]
		r.expect(time.Second, "")
		r.expect(9*time.Minute, "")
		r.expect(time.Minute, "drain web 2→2 w2: node w2 idle for 10m0s")
	})
	t.Run("a drain that does not end", func(t *testing.T) {
		r := setup()
		r.in.Tasks = append(r.in.Tasks, running("g2", "logs", "w2", 10))
		r.expect(10*time.Minute, "drain web 2→2 w2: node w2 idle for 10m0s")
		r.expect(30*time.Second, "")
		r.expect(31*time.Second, "scale-in web 2→1 w2: node w2 (i-web2) idle for 11m1s, drained")
	})
}

// groups is a fake of Auto Scaling for the autoscaler.
type groups struct {
	c      *calls
	groups []ScalingGroup
	asked  []string
}

func (g *groups) Groups(context.Context, string) ([]ScalingGroup, error) { return g.groups, nil }
func (g *groups) InstanceTypes(_ context.Context, t []string) (map[string]InstanceType, error) {
	g.asked = append(g.asked, t...)
	out := map[string]InstanceType{}
	for _, n := range t {
		if it, ok := types[n]; ok {
			out[n] = it
		}
	}
	return out, nil
}
func (g *groups) SetDesired(_ context.Context, asg string, n int) error {
	g.c.add("set desired %s %d", asg, n)
	for i := range g.groups {
		if g.groups[i].Name == asg {
			g.groups[i].Desired = n
		}
	}
	return nil
}
func (g *groups) Terminate(_ context.Context, i string) error {
	g.c.add("terminate %s", i)
	return nil
}

// The leader's round: decide, set the capacity, log one line, keep the
// decision in the snapshot; a lease on the group holds it back.
func TestAutoscaleRound(t *testing.T) {
	l := newLab(t)
	web := grp("web")
	web.Instances = []string{iW1}
	gs := &groups{c: l.c, groups: []ScalingGroup{web, grp("fixed", manual)}}
	l.m.Groups = gs
	w := l.e.addWorker(nodeID("w1"), iW1)
	w.NanoCPUs, w.MemoryBytes, w.Arch = 2e9, 1900*mib, "x86_64"
	l.e.listed = []wire.SnapshotService{{ID: "s-api", Name: "api"}, {ID: "s-huge", Name: "huge"}}
	for i := range 4 {
		l.e.tasks = append(l.e.tasks, pend(fmt.Sprint("a", i), "s-api", 800, 0))
	}
	l.e.tasks = append(l.e.tasks, pend("h1", "s-huge", 64000, 0), running("r1", "s-api", w.ID, 1500))

	// A clusterctl run holds the group's lease.
	rec, _ := json.Marshal(lease.Record{Kind: lease.KindGroup, Group: "web", TTLSeconds: 90})
	l.b.set(lease.Group("web").Key(), rec)
	l.round()
	if n := l.c.count("set desired"); n != 0 {
		t.Fatalf("scaled while leased: %v", l.c.l)
	}
	// The lease expires.
	l.clock.now = l.clock.now.Add(2 * time.Minute)
	l.round()
	if i := l.c.index("set desired core-web-Group-1 3"); i < 0 || l.c.count("set desired") != 1 {
		t.Fatalf("calls %v", l.c.l)
	}
	want := "group web: desired 1 → 3: 4 tasks of api pending: insufficient memory"
	if !l.logged(want) {
		t.Errorf("logs %q, want %q", l.logs, want)
	}
	l.round() // publishes the snapshot
	snap, err := wire.ParseSnapshot("x", l.b.objects[names.StatusKey], "core")
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Autoscale) != 1 || snap.Autoscale[0].String() != want || len(snap.Unplaceable) != 1 || snap.Unplaceable[0].Service != "huge" {
		t.Errorf("snapshot %+v %+v", snap.Autoscale, snap.Unplaceable)
	}
	if len(gs.asked) != 1 || gs.asked[0] != "t3.small" {
		t.Errorf("instance types asked %v, want t3.small once", gs.asked)
	}
	// Waiting for the nodes: no more calls.
	for range 5 {
		l.clock.now = l.clock.now.Add(10 * time.Second)
		l.round()
	}
	if n := l.c.count("set desired"); n != 1 {
		t.Errorf("%d scale-outs while waiting", n)
	}
}

// A new leader carries the last 20 decisions on from the snapshot.
func TestAutoscaleDecisionsCarriedOn(t *testing.T) {
	l := newLab(t)
	web := grp("web")
	web.Instances = []string{iW1}
	l.m.Groups = &groups{c: l.c, groups: []ScalingGroup{web}}
	var old []wire.ScalingDecision
	for i := range wire.MaxDecisions {
		old = append(old, wire.ScalingDecision{Time: start, Group: "web", From: i, To: i + 1, Reason: "r"})
	}
	b, _ := wire.Snapshot{Version: 1, Cluster: "core", Time: start, Autoscale: old}.Marshal()
	l.b.set(names.StatusKey, b)
	l.e.addWorker(nodeID("w1"), iW1)
	l.e.listed = []wire.SnapshotService{{ID: "s-api", Name: "api"}}
	l.e.tasks = []Task{pend("a1", "s-api", 1500, 0)}
	l.round()
	l.round()
	snap, err := wire.ParseSnapshot("x", l.b.objects[names.StatusKey], "core")
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Autoscale) != wire.MaxDecisions || snap.Autoscale[0].From != 1 || snap.Autoscale[wire.MaxDecisions-1].To != 2 {
		t.Errorf("decisions %+v", snap.Autoscale)
	}
}

// A leader that lost the lead and got it back starts its idle times
// afresh: the node may have worked meanwhile.
func TestAutoscaleLeadLost(t *testing.T) {
	l := newLab(t)
	g := grp("web", sizes(1, 2, 3))
	g.Instances = []string{iW1, iW2}
	l.m.Groups = &groups{c: l.c, groups: []ScalingGroup{g}}
	for id, instance := range map[string]string{"w1": iW1, "w2": iW2} {
		w := l.e.addWorker(nodeID(id), instance)
		w.NanoCPUs, w.MemoryBytes, w.Arch = 2e9, 1900*mib, "x86_64"
	}
	l.e.tasks = []Task{running("r1", "s-api", nodeID("w1"), 100)}
	l.e.listed = []wire.SnapshotService{{ID: "s-api", Name: "api"}}
	leader := l.e.nodes[l.e.self.NodeID]
	l.round()
	l.clock.now = l.clock.now.Add(9 * time.Minute)
	l.round()
	leader.Leader = false
	l.clock.now = l.clock.now.Add(2 * time.Minute)
	l.round()
	leader.Leader = true
	l.round()
	if n := l.c.count("docker node update --availability drain"); n != 0 {
		t.Fatalf("drained at once on leading again: %v", l.c.l)
	}
	l.clock.now = l.clock.now.Add(10 * time.Minute)
	l.round()
	if i := l.c.index("docker node update --availability drain " + nodeID("w2")); i < 0 {
		t.Errorf("not drained after 10 minutes idle under this lead: %v", l.c.l)
	}
}
