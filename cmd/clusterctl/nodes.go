package main

import (
	"fmt"
	"io"
	"time"

	"github.com/clusterctl/clusterctl/internal/cluster"
)

// DrainNodeCmd is `clusterctl drain-node INSTANCE_ID [--undo]`.
type DrainNodeCmd struct {
	Instance string `arg:"" name:"instance-id" help:"EC2 instance id of the node (an agent or a manager), e.g. i-0123456789abcdef0."`
	Cluster  string `short:"j" name:"cluster" aliases:"join" predictor:"cluster" placeholder:"NAME" help:"Cluster the instance must be a node of (default: the one its tags name)."`
	Undo     bool   `help:"Make the node active again, so that it takes tasks."`
}

func (c *DrainNodeCmd) Run(app *App) error {
	out, svc, err := app.prepare(nodeInput(c.Instance, c.Cluster))
	if err != nil {
		return err
	}
	d, err := cluster.NewNodes(svc).DrainNode(app.Context(), cluster.DrainOptions{Instance: c.Instance, Cluster: c.Cluster, Undo: c.Undo, Progress: app.progress()})
	if err != nil {
		return err
	}
	node := fmt.Sprintf("%s (group %s of cluster %s)", d.InstanceID, d.Group, d.Cluster)
	var line string
	switch {
	case !d.Changed:
		line = fmt.Sprintf("%s is %s already; nothing sent", node, map[string]string{cluster.AvailabilityDrain: "drained", cluster.AvailabilityActive: "active"}[d.Availability])
	case d.Availability == cluster.AvailabilityDrain:
		line = fmt.Sprintf("Drained %s: it runs no tasks (%s)", node, took(d.DurationSeconds))
	default:
		line = fmt.Sprintf("%s is active again (%s)", node, took(d.DurationSeconds))
	}
	return writeResult(app, out, d, line)
}

// ReplaceNodeCmd is `clusterctl replace-node INSTANCE_ID`.
type ReplaceNodeCmd struct {
	Instance string `arg:"" name:"instance-id" help:"EC2 instance id of the node (an agent or a manager), e.g. i-0123456789abcdef0."`
	Cluster  string `short:"j" name:"cluster" aliases:"join" predictor:"cluster" placeholder:"NAME" help:"Cluster the instance must be a node of (default: the one its tags name)."`
	Yes      bool   `short:"y" help:"Replace the only manager without asking (needed when not on a terminal)."`
}

func (c *ReplaceNodeCmd) Run(app *App) error {
	out, svc, err := app.prepare(nodeInput(c.Instance, c.Cluster))
	if err != nil {
		return err
	}
	r, err := cluster.NewNodes(svc).ReplaceNode(app.Context(), cluster.ReplaceOptions{Instance: c.Instance, Cluster: c.Cluster, Yes: c.Yes, Progress: app.progress()})
	if err != nil {
		return err
	}
	return writeResult(app, out, r, fmt.Sprintf("Replaced %s (group %s of cluster %s) with %s, node %s in the swarm (%s)",
		r.InstanceID, r.Group, r.Cluster, r.Replacement, r.NodeID, took(r.DurationSeconds)))
}

// nodeInput checks an instance id and, when given, a cluster name, before
// any AWS call.
func nodeInput(instance, clusterName string) error {
	if err := cluster.CheckInstanceID(instance); err != nil {
		return err
	}
	if clusterName != "" {
		return checkCluster(clusterName, "-j/--cluster")
	}
	return nil
}

// progress is where a command says what it sees while it waits: stderr,
// unless -q.
func (a *App) progress() io.Writer {
	if a.Globals.Quiet {
		return nil
	}
	return a.IO.ErrOut
}

// took says how long something took, to the second.
func took(seconds float64) string {
	return time.Duration(seconds * float64(time.Second)).Round(time.Second).String()
}
