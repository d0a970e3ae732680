package node

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// The engine's reserve: what of an instance type's memory a task can
// never reserve. The engine reports the memory the kernel leaves (a few
// percent below the type's), and the engine, the agent and the kernel's
// buffers live there too: 10% of the type's memory, at least 256 MiB. No
// CPU is held back: the swarm lets tasks reserve every CPU the engine
// reports, which is every vCPU of the type.
const (
	ReserveMemoryMin     = 256 << 20
	ReserveMemoryPercent = 10
)

// Capacity is what one node of an instance type offers tasks.
func Capacity(t InstanceType) (nanoCPUs, memoryBytes int64) {
	mem := t.MemoryMiB << 20
	reserve := mem * ReserveMemoryPercent / 100
	if reserve < ReserveMemoryMin {
		reserve = ReserveMemoryMin
	}
	if mem -= reserve; mem < 0 {
		mem = 0
	}
	return int64(t.VCPUs) * 1e9, mem
}

// ScaleInput is what the autoscaler decides on: the cluster's groups (all
// of them: a task one group without autoscaling can hold is not
// unplaceable), their instance types, and the swarm.
type ScaleInput struct {
	Now    time.Time
	Groups []ScalingGroup
	Types  map[string]InstanceType
	Nodes  []Node
	Tasks  []Task
	// Global are the ids of the global services, Names every service's
	// name by id.
	Global map[string]bool
	Names  map[string]string
	// Leased are the groups (clusterctl names) a clusterctl run holds a
	// lease on.
	Leased map[string]bool
	// Instances are the instances EC2 proves the nodes to be, by node id
	// (see Identities): a node not there is no group's member, never
	// drained nor terminated, whatever its labels say.
	Instances map[string]string
}

// Kinds of ScaleAction.
const (
	ScaleOut = "scale-out" // raise the desired capacity to To
	Drain    = "drain"     // drain the idle Node
	Undrain  = "undrain"   // make the Node active again: it is needed
	ScaleIn  = "scale-in"  // terminate Instance, decrementing the capacity
)

// ScaleAction is one thing the autoscaler decided to do.
type ScaleAction struct {
	Kind           string
	Group, ASG     string
	From, To       int
	Node, Instance string
	Reason         string
}

// Decision is the action as the snapshot keeps it.
func (a ScaleAction) Decision(at time.Time) wire.ScalingDecision {
	return wire.ScalingDecision{Time: at, Group: a.Group, From: a.From, To: a.To, Instance: a.Instance, Reason: a.Reason}
}

// Autoscaler holds what the decisions remember from round to round: the
// nodes' idle times, the scale-outs waiting for their nodes, and the
// scale-ins under way. It does no I/O: Manager.autoscale reads the input
// and carries the actions out.
type Autoscaler struct {
	// JoinWait bounds the wait for new nodes (and for a terminated one
	// to leave its group) before the group is decided on again.
	JoinWait time.Duration
	// DrainTimeout bounds the drain of an idle node before its
	// termination.
	DrainTimeout time.Duration

	idleSince map[string]time.Time // by node id
	waits     map[string]waitFor   // by Auto Scaling group
	drains    map[string]drainOf   // by Auto Scaling group
	// short: since when a group has had fewer Ready nodes in the swarm
	// than its desired capacity (nodes still booting, launched by
	// someone else or before this leader), by Auto Scaling group.
	short map[string]time.Time
}

// waitFor: after a scale-out, until want nodes of the group are in the
// swarm; after a scale-in, until instance has left the group.
type waitFor struct {
	want     int
	instance string
	until    time.Time
}

type drainOf struct {
	node, instance string
	until          time.Time
}

// pendingTask is a task no node took, with what it asks.
type pendingTask struct {
	Task
	service string // its name
	reason  string // why no node of the swarm takes it
}

// ScalePlan is the autoscaler's answer for one round.
type ScalePlan struct {
	Actions     []ScaleAction
	Unplaceable []wire.Unplaceable
}

// Decide decides one round. The caller carries the actions out and tells
// Done each outcome.
func (a *Autoscaler) Decide(in ScaleInput) ScalePlan {
	if a.idleSince == nil {
		a.idleSince, a.waits, a.drains, a.short = map[string]time.Time{}, map[string]waitFor{}, map[string]drainOf{}, map[string]time.Time{}
	}
	var plan ScalePlan
	pending := a.pending(in)
	a.trackIdle(in)

	// Tasks no group can ever hold are reported, never scaled for.
	var placeable []pendingTask
	unplaceable := map[string]*wire.Unplaceable{}
	var order []string
	for _, t := range pending {
		if why := neverHeld(in, t); why != "" {
			u := unplaceable[t.service]
			if u == nil {
				u = &wire.Unplaceable{Service: t.service, Reason: why}
				unplaceable[t.service] = u
				order = append(order, t.service)
			}
			u.Tasks++
			continue
		}
		placeable = append(placeable, t)
	}
	sort.Strings(order)
	for _, s := range order {
		plan.Unplaceable = append(plan.Unplaceable, *unplaceable[s])
	}

	// needed: the autoscaled groups a pending task fits, bounds aside;
	// such a group is not scaled in.
	needed := map[string]bool{}
	for _, g := range in.Groups {
		for _, t := range placeable {
			if g.Autoscale && fits(in, g, t.Task) {
				needed[g.Name] = true
			}
		}
	}

	free := map[string]bool{} // groups that may be changed this round
	for _, g := range in.Groups {
		if !g.Autoscale {
			continue
		}
		if a.waiting(in, g) {
			continue
		}
		if d, ok := a.drains[g.Name]; ok {
			plan.Actions = append(plan.Actions, a.drainNext(in, g, d, needed[g.Name])...)
			continue
		}
		if g.Busy != "" || in.Leased[g.Group] || a.booting(in, g) {
			continue
		}
		free[g.Name] = true
	}

	plan.Actions = append(plan.Actions, a.scaleOut(in, placeable, free)...)
	for _, g := range in.Groups {
		if free[g.Name] && !needed[g.Name] && !a.scaledOut(plan, g.Name) {
			if act, ok := a.scaleIn(in, g); ok {
				plan.Actions = append(plan.Actions, act)
			}
		}
	}
	return plan
}

func (a *Autoscaler) scaledOut(p ScalePlan, asg string) bool {
	for _, act := range p.Actions {
		if act.ASG == asg {
			return true
		}
	}
	return false
}

// Done records the outcome of an action the caller carried out.
func (a *Autoscaler) Done(act ScaleAction, now time.Time, err error) {
	if err != nil {
		// Decided again next round, from what AWS and the swarm say then.
		if act.Kind == Drain {
			delete(a.drains, act.ASG)
		}
		return
	}
	switch act.Kind {
	case ScaleOut:
		a.waits[act.ASG] = waitFor{want: act.To, until: now.Add(a.JoinWait)}
		// The group is short of nodes from now: once the wait is over,
		// booting does not wait again for the same nodes.
		if _, ok := a.short[act.ASG]; !ok {
			a.short[act.ASG] = now
		}
	case Drain:
		a.drains[act.ASG] = drainOf{node: act.Node, instance: act.Instance, until: now.Add(a.DrainTimeout)}
	case Undrain:
		delete(a.drains, act.ASG)
		delete(a.idleSince, act.Node)
	case ScaleIn:
		delete(a.drains, act.ASG)
		delete(a.idleSince, act.Node)
		a.waits[act.ASG] = waitFor{instance: act.Instance, until: now.Add(a.JoinWait)}
	}
}

// pending are the tasks the swarm could not place: desired running, no
// node, and the scheduler's "no suitable node".
func (a *Autoscaler) pending(in ScaleInput) []pendingTask {
	var out []pendingTask
	for _, t := range in.Tasks {
		if t.NodeID != "" || t.DesiredState != "running" || t.State != "pending" || !strings.Contains(t.Err, "no suitable node") {
			continue
		}
		name := in.Names[t.ServiceID]
		if name == "" {
			name = t.ServiceID
		}
		out = append(out, pendingTask{Task: t, service: name, reason: shortOf(in, t)})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].service != out[j].service {
			return out[i].service < out[j].service
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// shortOf says why no node of the swarm takes t: none satisfies its
// placement, or those that do lack the memory or CPU it reserves.
func shortOf(in ScaleInput, t Task) string {
	used := usedBy(in)
	placed, cpu, mem := false, false, false
	for _, n := range in.Nodes {
		if n.State != "ready" || n.Availability != "active" || !placementHolds(t, nodeAttrs(n), n.Arch) {
			continue
		}
		placed = true
		u := used[n.ID]
		cpu = cpu || n.NanoCPUs-u[0] >= t.NanoCPUs
		mem = mem || n.MemoryBytes-u[1] >= t.MemoryBytes
	}
	switch {
	case !placed:
		return "no node satisfies its placement"
	case !cpu && !mem:
		return "insufficient CPU and memory"
	case !mem:
		return "insufficient memory"
	case !cpu:
		return "insufficient CPU"
	}
	return "insufficient resources"
}

// usedBy is what the tasks on each node reserve (CPU, memory).
func usedBy(in ScaleInput) map[string][2]int64 {
	used := map[string][2]int64{}
	for _, t := range in.Tasks {
		if t.NodeID == "" || t.DesiredState != "running" && t.State != "running" {
			continue
		}
		u := used[t.NodeID]
		used[t.NodeID] = [2]int64{u[0] + t.NanoCPUs, u[1] + t.MemoryBytes}
	}
	return used
}

// trackIdle notes since when each node of an autoscaled group has run no
// task but those of global services.
func (a *Autoscaler) trackIdle(in ScaleInput) {
	busy := map[string]bool{}
	for _, t := range in.Tasks {
		if t.NodeID != "" && (t.DesiredState == "running" || t.State == "running") && !in.Global[t.ServiceID] {
			busy[t.NodeID] = true
		}
	}
	seen := map[string]bool{}
	for _, n := range in.Nodes {
		seen[n.ID] = true
		if busy[n.ID] || n.State != "ready" {
			delete(a.idleSince, n.ID)
		} else if _, ok := a.idleSince[n.ID]; !ok {
			a.idleSince[n.ID] = in.Now
		}
	}
	for id := range a.idleSince {
		if !seen[id] {
			delete(a.idleSince, id)
		}
	}
}

// groupMembers are the swarm's worker nodes of g: labelled with its name and
// proven to be an instance of its Auto Scaling group.
func groupMembers(in ScaleInput, g ScalingGroup) []Node {
	inGroup := map[string]bool{}
	for _, i := range g.Instances {
		inGroup[i] = true
	}
	var out []Node
	for _, n := range in.Nodes {
		if n.Role == "worker" && !n.Manager() && n.Labels[names.EngineLabelGroup] == g.Group && inGroup[in.Instances[n.ID]] {
			out = append(out, n)
		}
	}
	return out
}

// waiting tells whether g still waits for the nodes of its last
// scale-out to join, or for the node of its last scale-in to leave.
func (a *Autoscaler) waiting(in ScaleInput, g ScalingGroup) bool {
	w, ok := a.waits[g.Name]
	if !ok {
		return false
	}
	done := in.Now.After(w.until)
	if w.instance != "" {
		done = done || !slices.Contains(g.Instances, w.instance)
	} else {
		ready := 0
		for _, n := range groupMembers(in, g) {
			if n.State == "ready" {
				ready++
			}
		}
		// Someone else lowered the capacity: nothing more will come.
		done = done || ready >= w.want || g.Desired < w.want
	}
	if done {
		delete(a.waits, g.Name)
	}
	return !done
}

// booting tells whether g has fewer Ready nodes in the swarm than its
// desired capacity, for less than JoinWait: nodes are on their way, and
// pending tasks may be theirs. Past JoinWait the group is decided on
// again (a node that never joins is no reason to stop).
func (a *Autoscaler) booting(in ScaleInput, g ScalingGroup) bool {
	ready := 0
	for _, n := range groupMembers(in, g) {
		if n.State == "ready" {
			ready++
		}
	}
	if ready >= g.Desired {
		delete(a.short, g.Name)
		return false
	}
	since, ok := a.short[g.Name]
	if !ok {
		since = in.Now
		a.short[g.Name] = since
	}
	return in.Now.Sub(since) < a.JoinWait
}

// drainNext goes on with the drain of g's idle node: terminated once its
// tasks have stopped (or the drain timed out), made active again when it
// is needed, the group may no longer shrink, or the group is being
// changed by someone else.
func (a *Autoscaler) drainNext(in ScaleInput, g ScalingGroup, d drainOf, needed bool) []ScaleAction {
	var n *Node
	for _, m := range in.Nodes {
		if m.ID == d.node {
			m := m
			n = &m
		}
	}
	undo := func(why string) []ScaleAction {
		if n == nil {
			delete(a.drains, g.Name)
			return nil
		}
		return []ScaleAction{{Kind: Undrain, Group: g.Group, ASG: g.Name, Node: d.node, Instance: d.instance, Reason: why}}
	}
	switch {
	case needed:
		return undo("pending tasks need it")
	case g.Desired <= g.Min:
		return undo(fmt.Sprintf("the group is at its minimum (%d)", g.Min))
	case g.Busy != "":
		return undo(g.Busy)
	case in.Leased[g.Group]:
		return undo("a clusterctl run holds the group's lease")
	case !slices.Contains(g.Instances, d.instance):
		delete(a.drains, g.Name)
		return nil
	}
	running := 0
	for _, t := range in.Tasks {
		if t.NodeID == d.node && t.State == "running" {
			running++
		}
	}
	if running > 0 && !in.Now.After(d.until) {
		return nil
	}
	idle := in.Now.Sub(a.idleSinceOr(d.node, in.Now)).Round(time.Second)
	return []ScaleAction{{Kind: ScaleIn, Group: g.Group, ASG: g.Name, From: g.Desired, To: g.Desired - 1, Node: d.node, Instance: d.instance,
		Reason: fmt.Sprintf("node %s (%s) idle for %s, drained", d.node, d.instance, idle)}}
}

func (a *Autoscaler) idleSinceOr(node string, now time.Time) time.Time {
	if t, ok := a.idleSince[node]; ok {
		return t
	}
	return now
}

// scaleIn picks the node of g idle the longest for at least
// ScaleDownAfter, when g is above its minimum: it is drained first.
func (a *Autoscaler) scaleIn(in ScaleInput, g ScalingGroup) (ScaleAction, bool) {
	if g.Desired <= g.Min || g.ScaleDownAfter <= 0 {
		return ScaleAction{}, false
	}
	var best *Node
	var since time.Time
	for _, n := range groupMembers(in, g) {
		s, ok := a.idleSince[n.ID]
		if !ok || n.Availability != "active" || in.Now.Sub(s) < g.ScaleDownAfter {
			continue
		}
		if best == nil || s.Before(since) || s.Equal(since) && n.ID < best.ID {
			n := n
			best, since = &n, s
		}
	}
	if best == nil {
		return ScaleAction{}, false
	}
	return ScaleAction{Kind: Drain, Group: g.Group, ASG: g.Name, From: g.Desired, To: g.Desired, Node: best.ID,
		Instance: in.Instances[best.ID],
		Reason:   fmt.Sprintf("node %s idle for %s", best.ID, in.Now.Sub(since).Round(time.Second))}, true
}

// scaleOut places the pending tasks on new nodes: of the free groups a
// task fits, the one that wastes least (spot before on-demand at equal
// waste), as many nodes as first-fit packing needs, up to the group's
// maximum; the tasks left over go to the next group.
func (a *Autoscaler) scaleOut(in ScaleInput, tasks []pendingTask, free map[string]bool) []ScaleAction {
	var out []ScaleAction
	chosen := map[string]bool{}
	for len(tasks) > 0 {
		type option struct {
			g     ScalingGroup
			bins  [][]pendingTask
			waste float64
			spot  bool
		}
		var best *option
		for _, g := range in.Groups {
			if !free[g.Name] || chosen[g.Name] || g.Desired >= g.Max {
				continue
			}
			var mine []pendingTask
			for _, t := range tasks {
				if fits(in, g, t.Task) {
					mine = append(mine, t)
				}
			}
			if len(mine) == 0 {
				continue
			}
			cpu, mem := groupCapacity(in, g)
			bins := pack(mine, cpu, mem)
			o := option{g: g, bins: bins, waste: waste(bins, cpu, mem), spot: slices.Contains(g.Lifecycles, "spot")}
			if best == nil || o.waste < best.waste-1e-9 ||
				o.waste < best.waste+1e-9 && (o.spot && !best.spot || o.spot == best.spot && o.g.Group < best.g.Group) {
				best = &o
			}
		}
		if best == nil {
			break
		}
		g := best.g
		chosen[g.Name] = true
		n := len(best.bins)
		if n > g.Max-g.Desired {
			n = g.Max - g.Desired
		}
		var placed []pendingTask
		for _, b := range best.bins[:n] {
			placed = append(placed, b...)
		}
		out = append(out, ScaleAction{Kind: ScaleOut, Group: g.Group, ASG: g.Name, From: g.Desired, To: g.Desired + n, Reason: pendingReason(placed)})
		left := tasks[:0:0]
		for _, t := range tasks {
			if !containsTask(placed, t.ID) {
				left = append(left, t)
			}
		}
		tasks = left
	}
	return out
}

func containsTask(l []pendingTask, id string) bool {
	for _, t := range l {
		if t.ID == id {
			return true
		}
	}
	return false
}

// pendingReason is "4 tasks of api pending: insufficient memory", the
// services by their number of tasks, the reason of the first.
func pendingReason(ts []pendingTask) string {
	count := map[string]int{}
	var order []string
	for _, t := range ts {
		if count[t.service] == 0 {
			order = append(order, t.service)
		}
		count[t.service]++
	}
	sort.SliceStable(order, func(i, j int) bool { return count[order[i]] > count[order[j]] })
	var parts []string
	for i, s := range order {
		n := count[s]
		switch {
		case i > 0:
			parts = append(parts, fmt.Sprintf("%d of %s", n, s))
		case n == 1:
			parts = append(parts, "1 task of "+s)
		default:
			parts = append(parts, fmt.Sprintf("%d tasks of %s", n, s))
		}
	}
	return strings.Join(parts, ", ") + " pending: " + ts[0].reason
}
