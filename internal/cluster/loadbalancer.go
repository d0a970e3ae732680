package cluster

import (
	"fmt"
	"io"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// lbRemoval says, when an update removes a group's load balancer, what
// clients lose: its endpoint changes (a new load balancer gets a new DNS
// name) or goes. "" when the update keeps it.
func lbRemoval(deployed, desired spec.Group, endpoint string) string {
	if !deployed.Published() {
		return ""
	}
	where := ""
	if endpoint != "" {
		where = " " + endpoint
	}
	switch {
	case !desired.Published():
		return fmt.Sprintf("remove group %q's load balancer%s (ports %s) and the endpoint its clients use", desired.Name, where, deployed.Publish)
	case desired.Scheme() != deployed.Scheme():
		return fmt.Sprintf("replace group %q's load balancer%s with an %s one, at a new endpoint", desired.Name, where, desired.Scheme())
	}
	return ""
}

// writeLoadBalancers prints, under describe's groups, each group's load
// balancer: its endpoint and each port with its healthy targets.
func writeLoadBalancers(w io.Writer, groups []GroupHealth) {
	for _, g := range groups {
		if lb := g.LoadBalancer; lb != nil {
			fmt.Fprintf(w, "%s: load balancer %s (%s): %s\n", g.Group.Group, lb.EndpointText(), lb.Scheme, lb.PortsText())
		}
	}
}

// lbRemovals says, for each group the plan updates, what removing or
// replacing its load balancer takes from its clients (lbRemoval): apply
// asks before it, as update-group does.
func lbRemovals(p *ClusterPlan, obs *Observed) []string {
	if obs == nil {
		return nil
	}
	var out []string
	for _, sp := range p.Stacks {
		og := obs.Groups[sp.Group]
		if sp.Action != ActionUpdate || sp.group == nil || og == nil || og.Stack == nil {
			continue
		}
		desired := *sp.group
		desired.Default()
		if what := lbRemoval(og.Spec, desired, og.Stack.Outputs[names.OutputLoadBalancerDNSName]); what != "" {
			out = append(out, what)
		}
	}
	return out
}
