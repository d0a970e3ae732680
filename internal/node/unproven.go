package node

import (
	"context"
	"fmt"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// A node the leader cannot prove to be its instance (identity.go) gets no
// task, hence no secret: the swarm places tasks on any active node whose
// engine labels fit, and an impostor's engine labels are its own word.
// So every round the leader drains each Ready node it cannot prove, and
// removes from the swarm one still unproven after UnprovenGrace.
//
// What the leader did is recorded on the node itself, in node labels,
// which only managers write and which every manager reads, so that a new
// leader goes on where the last one stopped: since when the node is
// unproven (the removal's clock), and the availability it had when the
// leader drained it. A node that is proven again gets that availability
// back only if it is still drained; a node the leader did not drain (an
// operator's drain, a drain on a notice) is never made active by it.

// unprovenReason says why node n is not proven ("" when it is).
func unprovenReason(ids Identities, n Node) string {
	if ids.Instance(n.ID) != "" {
		return ""
	}
	if p := ids.Problem(n.ID); p != "" {
		return p
	}
	claim := n.Labels[names.EngineLabelInstanceID]
	if claim == "" {
		return "it names no instance"
	}
	return fmt.Sprintf("EC2 gives its instance %s no private IP (unknown to EC2, or terminated)", claim)
}

// unprovenSince is when the leader first found n unproven, as n's node
// label says (ok false when it does not, or not as a time).
func unprovenSince(n Node) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339, n.NodeLabels[names.NodeLabelUnprovenSince])
	return t, err == nil
}

// nodeGuard keeps the swarm to the nodes it should have: it removes the
// nodes gone for good (dead.go), keeps the nodes the leader cannot prove
// from tasks, and labels those it proves (labels.go).
type nodeGuard struct {
	Cluster   string
	Engine    Engine
	Instances Instances
	// Facts says what the proven nodes' instances are, Groups which
	// groups hold them, for their node labels; either nil: none is set.
	Facts  Describer
	Groups GroupScaling
	State  State
	Clock  Clock
	Log    Logger
	// T: UnprovenGrace, LabelsEvery, DeadEvery, DeadGrace.
	T Timings

	prover *prover

	// nextDead: when the Down nodes are checked again.
	nextDead time.Time

	// noted: the unproven nodes, with why, as last logged; quorumKept:
	// the unproven managers kept for the quorum (logged).
	noted      map[string]string
	quorumKept map[string]bool
	// nextLabels: when the proven nodes' labels are read again.
	nextLabels time.Time
}

// round drains the Ready nodes the leader cannot prove and takes
// their placement labels away, removes those unproven for UnprovenGrace,
// gives a node proven again the availability the leader took from it,
// and labels the proven nodes (labelNodes). Nothing is done when EC2
// cannot be asked: a node is never judged on the swarm's word alone.
// self is what the engine said of itself at the start of the round.
func (g *nodeGuard) round(ctx context.Context, self Self) error {
	nodes, ids, err := g.prover.nodesIdentified(ctx)
	if err != nil {
		return err
	}
	if g.noted == nil {
		g.noted, g.quorumKept = map[string]string{}, map[string]bool{}
	}
	present := map[string]bool{}
	for _, n := range nodes {
		present[n.ID] = true
		if n.ID == self.NodeID {
			continue // the leader proves itself by leading
		}
		why := unprovenReason(ids, n)
		if why == "" {
			g.Log.failed("giving proven node "+n.ID+" back its availability", g.proven(ctx, n, ids.Instance(n.ID)))
			continue
		}
		g.Log.failed("guarding unproven node "+n.ID, g.unproven(ctx, n, nodes, why))
	}
	for id := range g.noted {
		if !present[id] {
			delete(g.noted, id)
			delete(g.quorumKept, id)
		}
	}
	g.Log.failed("labelling the proven nodes", g.labelNodes(ctx, nodes, ids))
	return nil
}

// proven clears what the leader recorded of n while it was unproven, and
// makes a worker active (or paused) again when the leader drained it and
// it is still drained.
func (g *nodeGuard) proven(ctx context.Context, n Node, instance string) error {
	was, drained := n.NodeLabels[names.NodeLabelDrainedUnproven]
	_, noted := n.NodeLabels[names.NodeLabelUnprovenSince]
	if !drained && !noted {
		return nil
	}
	delete(g.noted, n.ID)
	// A manager stays drained: managers run no workloads, and drain
	// themselves once Reachable (a new one may be unproven for a moment
	// before that).
	if drained && n.Role != "manager" && n.Availability == wire.AvailabilityDrain && (was == wire.AvailabilityActive || was == "pause") {
		if err := g.Engine.SetAvailability(ctx, n.ID, was); err != nil {
			return err
		}
		g.Log("node %s is proven to be instance %s: %s again (the leader had drained it while unproven)", n.ID, instance, was)
	} else {
		g.Log("node %s is proven to be instance %s", n.ID, instance)
	}
	return g.Engine.SetNodeLabels(ctx, n.ID, nil, []string{names.NodeLabelUnprovenSince, names.NodeLabelDrainedUnproven})
}

// unproven records since when n is unproven, drains it when it is Ready
// and not drained (recording the availability it had first, so that a
// crash in between leaves no drain unrecorded), takes its placement
// labels away, and removes it once unproven for UnprovenGrace.
func (g *nodeGuard) unproven(ctx context.Context, n Node, nodes []Node, why string) error {
	now := g.Clock.Now()
	set := map[string]string{}
	since, ok := unprovenSince(n)
	if !ok {
		since = now
		set[names.NodeLabelUnprovenSince] = now.UTC().Format(time.RFC3339)
	}
	drain := n.State == "ready" && n.Availability != wire.AvailabilityDrain
	if drain {
		set[names.NodeLabelDrainedUnproven] = n.Availability
	}
	remove := placementKeys(n)
	if len(set) > 0 || len(remove) > 0 {
		if err := g.Engine.SetNodeLabels(ctx, n.ID, set, remove); err != nil {
			return err
		}
	}
	until := since.Add(g.T.UnprovenGrace)
	if drain {
		if err := g.Engine.SetAvailability(ctx, n.ID, wire.AvailabilityDrain); err != nil {
			return err
		}
		g.Log("drained node %s, which is not proven: %s (removed from the swarm if still unproven at %s)", n.ID, why, until.UTC().Format(time.RFC3339))
	} else if g.noted[n.ID] != why {
		g.Log("node %s is not proven: %s (removed from the swarm if still unproven at %s)", n.ID, why, until.UTC().Format(time.RFC3339))
	}
	g.noted[n.ID] = why
	if now.Before(until) {
		return nil
	}
	return g.removeUnproven(ctx, n, nodes, why)
}

// removeUnproven removes n from the swarm, as docker node rm --force does;
// a manager is demoted first, and only when the managers left without it
// still make a quorum: demoting a reachable manager of three leaves two of
// which both must answer; one of two would leave the swarm without one.
func (g *nodeGuard) removeUnproven(ctx context.Context, n Node, nodes []Node, why string) error {
	if n.Role == "manager" {
		if !quorumWithout(nodes, n) {
			if !g.quorumKept[n.ID] {
				g.Log("not removing manager %s, unproven for %s: the swarm needs it for its quorum", n.ID, g.T.UnprovenGrace)
				g.quorumKept[n.ID] = true
			}
			return nil
		}
		if err := g.Engine.Demote(ctx, n.ID); err != nil {
			return err
		}
	}
	if err := g.Engine.RemoveNode(ctx, n.ID); err != nil {
		return err
	}
	delete(g.noted, n.ID)
	delete(g.quorumKept, n.ID)
	g.Log("removed node %s from the swarm, unproven for %s: %s", n.ID, g.T.UnprovenGrace, why)
	return nil
}

// quorumWithout tells whether the swarm's managers but n, once n is
// demoted, still have a majority of them reachable.
func quorumWithout(nodes []Node, n Node) bool {
	managers, reachable := 0, 0
	for _, o := range nodes {
		if o.Role != "manager" || o.ID == n.ID {
			continue
		}
		managers++
		if o.Reachability == "reachable" {
			reachable++
		}
	}
	return managers > 0 && 2*reachable > managers
}
