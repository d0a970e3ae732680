package node

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/clusterctl/clusterctl/internal/names"
)

// Placement rests on node labels (node.labels.…), which only managers
// write, never on engine labels, which a node sets itself. The leader
// labels each node it proves to be an instance with what Auto Scaling and
// EC2 say of that instance: the agent group whose Auto Scaling group holds
// it (clusterctl.group) and that group's labels (its clusterctl:label:
// tags, which the group's stack sets), the instance's type, lifecycle and
// zone as DescribeInstances gives them, and its id; a manager is of group
// control. A node it cannot prove has them taken away (unproven.go).

// placementLabels are the node labels the leader owns, its own names.
var placementLabels = []string{names.EngineLabelGroup, names.EngineLabelInstanceType, names.EngineLabelLifecycle,
	names.EngineLabelZone, names.EngineLabelInstanceID, names.NodeLabelKeys}

// declaredKeys are the keys of the group's labels the leader set on n, as
// n's node label NodeLabelKeys lists them.
func declaredKeys(n Node) []string {
	var out []string
	for _, k := range strings.Split(n.NodeLabels[names.NodeLabelKeys], ",") {
		if k = strings.TrimSpace(k); k != "" && !strings.HasPrefix(k, names.EngineLabelReserved) {
			out = append(out, k)
		}
	}
	return out
}

// placementKeys are the placement labels n carries, to be taken away.
func placementKeys(n Node) []string {
	var out []string
	for _, k := range append(slices.Clone(placementLabels), declaredKeys(n)...) {
		if _, ok := n.NodeLabels[k]; ok && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// wantedLabels are the node labels of a node proven to be instance, a
// manager or a member of group g (nil: none), with facts.
func wantedLabels(instance string, manager bool, g *ScalingGroup, f InstanceFacts) map[string]string {
	want := map[string]string{names.EngineLabelInstanceID: instance, names.EngineLabelInstanceType: f.Type,
		names.EngineLabelLifecycle: f.Lifecycle, names.EngineLabelZone: f.Zone}
	switch {
	case manager:
		want[names.EngineLabelGroup] = names.GroupControl
	case g != nil:
		want[names.EngineLabelGroup] = g.Group
		var keys []string
		for k, v := range g.Labels {
			if strings.HasPrefix(k, names.EngineLabelReserved) {
				continue // not a label a group may declare
			}
			want[k] = v
			keys = append(keys, k)
		}
		sort.Strings(keys)
		want[names.NodeLabelKeys] = strings.Join(keys, ",")
	}
	for k, v := range want {
		if v == "" {
			delete(want, k)
		}
	}
	return want
}

// labelDiff is what to set and remove so that n carries want of the
// placement labels; other node labels (an operator's) are left alone.
func labelDiff(n Node, want map[string]string) (map[string]string, []string) {
	set := map[string]string{}
	for k, v := range want {
		if cur, ok := n.NodeLabels[k]; !ok || cur != v {
			set[k] = v
		}
	}
	var remove []string
	for _, k := range placementKeys(n) {
		if _, ok := want[k]; !ok {
			remove = append(remove, k)
		}
	}
	return set, remove
}

// labelNodes sets the placement labels of the proven nodes: every
// LabelsEvery, and at once when a proven node does not carry its
// instance's id (a new node, or one proven again).
func (g *nodeGuard) labelNodes(ctx context.Context, nodes []Node, ids Identities) error {
	if g.Facts == nil || g.Groups == nil {
		return nil
	}
	var ask []string
	due := !g.Clock.Now().Before(g.nextLabels)
	for _, n := range nodes {
		if i := ids.Instance(n.ID); i != "" {
			ask = append(ask, i)
			due = due || n.NodeLabels[names.EngineLabelInstanceID] != i
		}
	}
	if !due || len(ask) == 0 {
		return nil
	}
	slices.Sort(ask)
	ask = slices.Compact(ask)
	groups, err := g.Groups.Groups(ctx, g.Cluster)
	if err != nil {
		return err
	}
	facts, err := g.Facts.Describe(ctx, ask)
	if err != nil {
		return fmt.Errorf("asking EC2 what the nodes' instances are: %w", err)
	}
	member := map[string]*ScalingGroup{}
	for i := range groups {
		for _, in := range groups[i].Instances {
			member[in] = &groups[i]
		}
	}
	for _, n := range nodes {
		instance := ids.Instance(n.ID)
		f, ok := facts[instance]
		if instance == "" || !ok {
			continue
		}
		set, remove := labelDiff(n, wantedLabels(instance, n.Role == "manager", member[instance], f))
		if len(set) == 0 && len(remove) == 0 {
			continue
		}
		if err := g.Engine.SetNodeLabels(ctx, n.ID, set, remove); err != nil {
			return fmt.Errorf("labelling node %s: %w", n.ID, err)
		}
		g.Log("labelled node %s, proven to be instance %s: %s", n.ID, instance, describeLabels(set, remove))
	}
	g.nextLabels = g.Clock.Now().Add(g.T.LabelsEvery)
	return nil
}

// describeLabels is set and remove for the log: k=v sorted, then -k.
func describeLabels(set map[string]string, remove []string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(set)) {
		out = append(out, k+"="+set[k])
	}
	for _, k := range remove {
		out = append(out, "-"+k)
	}
	return strings.Join(out, " ")
}
