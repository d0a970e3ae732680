package cluster

import (
	"fmt"
	"strings"

	"github.com/clusterctl/clusterctl/internal/errs"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// What update-core, update-group and apply ask before they change a
// stack, decided in one place so that apply asks exactly when the
// commands of one stack would. Each question is asked on its own;
// without a terminal each needs --yes.

// coreAsk is asked before any update of a core: a core's changes take
// the control plane through a rolling update or delete data (a shorter
// log retention deletes the older logs).
func coreAsk(cluster string) string {
	return fmt.Sprintf("update the control plane of cluster %q", cluster)
}

// groupAsks are asked before a group's planned update: removing or
// replacing its load balancer (its clients' endpoint goes), replacing
// nodes (their tasks move), and fewer nodes than run now (the nodes
// terminated take their tasks and data with them).
func groupAsks(cluster string, deployed *ObservedGroup, desired spec.Group, plan *Plan) []string {
	var out []string
	if deployed.Stack != nil {
		if what := lbRemoval(deployed.Spec, desired, deployed.Stack.Outputs[names.OutputLoadBalancerDNSName]); what != "" {
			out = append(out, what)
		}
	}
	if plan != nil && plan.NodesReplaced > 0 {
		out = append(out, fmt.Sprintf("replace %s of group %q of cluster %q", query.Plural(plan.NodesReplaced, "node"), desired.Name, cluster))
	}
	if from, to := shrink(deployed, desired); to < from {
		out = append(out, fmt.Sprintf("terminate %s of group %q of cluster %q (%d → %d)", query.Plural(from-to, "node"), desired.Name, cluster, from, to))
	}
	return out
}

// shrink says how many nodes the group runs and how many it keeps once
// desired is deployed. An autoscaled group keeps its capacity within its
// new bounds (its stack sets no desired capacity); a fixed one is set to
// its count.
func shrink(deployed *ObservedGroup, desired spec.Group) (from, to int) {
	from = deployed.Nodes
	if from < 0 {
		from = deployed.Spec.Desired()
	}
	if desired.Autoscale.Enabled {
		return from, min(max(from, desired.MinSize()), desired.MaxSize())
	}
	return from, desired.Desired()
}

// refuseUnasked is apply's refusal, off a terminal without --yes, of the
// group stacks it would delete and the load balancers it would remove;
// nil when there is nothing to ask or it may.
func (s *Applier) refuseUnasked(yes bool, deletes, lbChanges []string) error {
	switch {
	case yes || s.IO.InTTY:
		return nil
	case len(deletes) > 0:
		return errs.Usage("refusing to delete %s (%s) without confirmation: pass --yes when not on a terminal", query.Plural(len(deletes), "group stack"), strings.Join(deletes, ", "))
	case len(lbChanges) > 0:
		return errs.Usage("refusing to %s without confirmation: pass --yes when not on a terminal", strings.Join(lbChanges, "; "))
	}
	return nil
}
