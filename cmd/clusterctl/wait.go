package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/cluster"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
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

// WaitCmd is `clusterctl wait CLUSTER [-n GROUP]`.
type WaitCmd struct {
	Cluster string `arg:"" optional:"" predictor:"cluster" help:"Cluster name."`
	ClusterFlag
	Group string `short:"n" name:"name" predictor:"group" help:"A group of the cluster (default: the core stack)."`
}

func (c *WaitCmd) Run(app *App) error {
	check := c.ClusterFlag.into(&c.Cluster, "wait", true)
	if check == nil {
		check = checkNames(c.Cluster, "", c.Group)
	}
	out, svc, err := app.prepare(check)
	if err != nil {
		return err
	}
	start := time.Now()
	sts, err := cluster.NewInspector(svc).Wait(app.Context(), c.Cluster, c.Group)
	var outcomes []stacks.Outcome
	for _, st := range sts {
		if st != nil {
			outcomes = append(outcomes, stacks.Outcome{Stack: st.Name, Status: st.Status, Duration: time.Since(start)})
		}
	}
	if len(outcomes) == 0 {
		return err
	}
	if line := nothingInProgress(sts, c.Cluster, c.Group); err == nil && line != "" && out.TableForm() {
		_, werr := fmt.Fprintln(app.IO.Out, line)
		return werr
	}
	// One group: its result. The cluster: the core's (last) with the
	// groups it waited for, as delete-core reports them.
	var v any
	var lines []string
	if c.Group != "" {
		r := query.ResultFrom(outcomes[0])
		v, lines = r, []string{r.String()}
	} else {
		d := query.DeletionFrom(outcomes[len(outcomes)-1], outcomes[:len(outcomes)-1])
		for _, g := range d.Groups {
			lines = append(lines, g.String())
		}
		v, lines = d, append(lines, d.Result.String())
	}
	if err != nil {
		// A failed outcome is still an outcome: scripts get the object,
		// the error says why and the exit code is 1.
		if !out.TableForm() {
			if werr := out.Write(app.IO.Out, v, nil); werr != nil {
				return werr
			}
		}
		return err
	}
	return writeResult(app, out, v, strings.Join(lines, "\n"))
}
