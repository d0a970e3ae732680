package main

import (
	"fmt"
	"strings"

	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/spec"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// nothingInProgress is wait's line when every stack it looked at was
// already settled: what each is, rather than a result "after 0s" of an
// operation that never was; "" when one was in progress.
func nothingInProgress(sts []*stacks.Stack, clusterName, group string) string {
	var states []string
	for _, st := range sts {
		if st == nil || !st.Settled {
			return ""
		}
		states = append(states, st.Name+" is "+st.Status)
	}
	what := "cluster " + clusterName
	if group != "" {
		what = "group " + group + " of cluster " + clusterName
	}
	return fmt.Sprintf("Nothing in progress on %s: %s", what, strings.Join(states, ", "))
}

// sayEndpoint says, on stderr beside the new group's nodes, where its load
// balancer answers: the name to point clients (or DNS) at.
func sayEndpoint(app *App, svc *cluster.Clients, clusterName string, g spec.Group) {
	if !g.Published() {
		return
	}
	st, err := svc.Stacks.Get(app.Context(), names.GroupStack(clusterName, g.Name))
	if err != nil {
		return
	}
	if dns := st.Outputs[names.OutputLoadBalancerDNSName]; dns != "" {
		fmt.Fprintf(app.IO.ErrOut, "Endpoint of group %s: %s (ports %s)\n", g.Name, dns, strings.Join(g.Publish, ","))
	}
}
