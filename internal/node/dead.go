package node

import (
	"context"
	"path"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

const downDir = "down"

// clean removes, every DeadEvery, nodes that have been Down for
// DeadGrace (as this manager saw them) and whose instance is terminated or
// gone, or that have a Ready successor with the same instance (the node
// rejoined under another node id). A manager is demoted first.
func (g *nodeGuard) clean(ctx context.Context) error {
	now := g.Clock.Now()
	if now.Before(g.nextDead) {
		return nil
	}
	g.nextDead = now.Add(g.T.DeadEvery)
	nodes, err := g.Engine.Nodes(ctx)
	if err != nil {
		return err
	}
	down := map[string]bool{}
	for _, n := range nodes {
		if n.State == "down" && ValidNodeID(n.ID) {
			down[n.ID] = true
		}
	}
	kept, err := g.State.List(downDir)
	if err != nil {
		return err
	}
	for _, f := range kept {
		if !down[path.Base(f)] {
			if err := g.State.Remove(f); err != nil {
				return err
			}
		}
	}
	type candidate struct {
		n        Node
		instance string
		replaced bool
	}
	var due []candidate
	for _, n := range nodes {
		if !down[n.ID] {
			continue
		}
		var since time.Time
		ok, err := g.State.Load(downDir+"/"+n.ID, &since)
		if err != nil {
			return err
		}
		if !ok {
			since = now
			if err := g.State.Save(downDir+"/"+n.ID, since); err != nil {
				return err
			}
		}
		if now.Sub(since) >= g.T.DeadGrace {
			due = append(due, candidate{n: n, instance: n.Labels[names.EngineLabelInstanceID]})
		}
	}
	if len(due) == 0 {
		return nil
	}
	// A Ready node replaces a Down one only when EC2 proves it the same
	// instance: another node's label alone would let any agent have a
	// node that is down for a moment removed. A Down node whose label and
	// address disagree is left alone (and reported).
	ids, err := g.prover.identify(ctx, nodes)
	if err != nil {
		return err
	}
	var ask []string
	for i := range due {
		c := &due[i]
		for _, o := range nodes {
			if c.instance != "" && o.ID != c.n.ID && o.State == "ready" && ids.Instance(o.ID) == c.instance {
				c.replaced = true
			}
		}
		if !c.replaced && wire.ValidInstanceID(c.instance) && ids.Problem(c.n.ID) == "" {
			ask = append(ask, c.instance)
		}
	}
	states := map[string]string{}
	if len(ask) > 0 {
		if states, err = g.Instances.States(ctx, ask); err != nil {
			return err
		}
	}
	for _, c := range due {
		why := "replaced"
		if !c.replaced {
			if !wire.ValidInstanceID(c.instance) || ids.Problem(c.n.ID) != "" {
				continue
			}
			switch st := states[c.instance]; st {
			case "":
				why = "gone"
			case "terminated", "shutting-down":
				why = st
			default:
				continue
			}
		}
		if err := removeNode(ctx, g.Engine, c.n); err != nil {
			g.Log("removing Down node %s: %v", c.n.ID, err)
			continue
		}
		_ = g.State.Remove(downDir + "/" + c.n.ID)
		g.Log("removed Down node %s of instance %s (%s)", c.n.ID, orQ(c.instance), why)
	}
	return nil
}

// removeNode removes a node from the swarm, demoting a manager first.
func removeNode(ctx context.Context, e Engine, n Node) error {
	if n.Role == "manager" {
		if err := e.Demote(ctx, n.ID); err != nil {
			return err
		}
	}
	return e.RemoveNode(ctx, n.ID)
}

func orQ(s string) string {
	if s == "" {
		return "?"
	}
	return s
}
