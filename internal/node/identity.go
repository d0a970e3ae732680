package node

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// Identities are the instances EC2 proves the swarm's nodes to be. A
// node's engine labels are its own word: any agent may label itself with
// another instance's id. The swarm sees a node at the address of its
// connection, which the VPC does not let an instance forge; so a node is
// the instance its label names only when the swarm sees it at that
// instance's private IP, as EC2 describes the instance. The autoscaler,
// the dead-node check and the drains on a notice or a request act only on
// proven nodes; a node whose label and address disagree is reported in
// the log and in the status snapshot, and, as every node the leader
// cannot prove, drained and in time removed (unproven.go).
type Identities struct {
	byNode   map[string]string // node id: the instance proven
	problems map[string]string // node id: why its label is not believed
}

// Instance is the instance node is proven to be ("" when it is not).
func (ids Identities) Instance(node string) string { return ids.byNode[node] }

// Problem says why node's instance label is not believed ("" when it is,
// or when EC2 cannot tell: an instance terminated or gone).
func (ids Identities) Problem(node string) string { return ids.problems[node] }

// Nodes are the ids of the nodes proven to be instance, sorted.
func (ids Identities) Nodes(instance string) []string {
	var out []string
	for n, i := range ids.byNode {
		if i == instance {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Unproven are the ids of the nodes whose label names instance but that
// are not proven to be it, sorted.
func (ids Identities) Unproven(nodes []Node, instance string) []string {
	var out []string
	for _, n := range nodes {
		if n.Labels[names.EngineLabelInstanceID] == instance && ids.byNode[n.ID] != instance {
			out = append(out, n.ID)
		}
	}
	sort.Strings(out)
	return out
}

// nodeAddr is the address the swarm sees n at ("" when unknown): a
// manager that reports none has its manager address.
func nodeAddr(n Node) string {
	addr := n.Addr
	if (addr == "" || addr == "0.0.0.0") && n.Manager() {
		addr = host(n.ManagerAddr)
	}
	if addr == "0.0.0.0" {
		return ""
	}
	return addr
}

// Identify proves nodes' instances with ips, the private IPs EC2 gives
// the instances their labels name (by instance id). A node is proven when
// its address is its instance's IP, and no other node that is not Down is
// proven to be the same instance (an instance runs one engine: two live
// nodes at one address are a puzzle, not an identity). A node whose
// instance EC2 gives no IP (terminated, gone) is neither proven nor a
// problem: EC2 cannot tell.
func Identify(nodes []Node, ips map[string]string) Identities {
	ids := Identities{byNode: map[string]string{}, problems: map[string]string{}}
	live := map[string][]string{} // instance: its proven nodes not Down
	for _, n := range nodes {
		claim := n.Labels[names.EngineLabelInstanceID]
		if claim == "" {
			continue
		}
		if !wire.ValidInstanceID(claim) {
			ids.problems[n.ID] = fmt.Sprintf("its label names %.40q, not an instance id", claim)
			continue
		}
		ip, ok := ips[claim]
		switch addr := nodeAddr(n); {
		case !ok:
		case addr != ip:
			ids.problems[n.ID] = fmt.Sprintf("its label names instance %s, whose private IP is %s, but the swarm sees it at %s", claim, ip, orQ(addr))
		default:
			ids.byNode[n.ID] = claim
			if n.State != "down" {
				live[claim] = append(live[claim], n.ID)
			}
		}
	}
	for instance, l := range live {
		if len(l) < 2 {
			continue
		}
		slices.Sort(l)
		for _, n := range l {
			delete(ids.byNode, n)
			ids.problems[n] = fmt.Sprintf("nodes %v all claim instance %s from its address", l, instance)
		}
	}
	return ids
}

// prover proves the swarm's nodes to be their instances (Identify) with
// what EC2 says of them now, for every part of housekeeping that acts on
// a node: the dead-node check, the guard, the autoscaler, the drains, the
// snapshot.
type prover struct {
	Engine    Engine
	Instances Instances
	Log       Logger

	// problems are the nodes whose instance label EC2 does not bear
	// out, with why, as last logged.
	problems map[string]string
}

// nodesIdentified lists the swarm's nodes with what EC2 proves of them.
func (p *prover) nodesIdentified(ctx context.Context) ([]Node, Identities, error) {
	nodes, err := p.Engine.Nodes(ctx)
	if err != nil {
		return nil, Identities{}, err
	}
	ids, err := p.identify(ctx, nodes)
	return nodes, ids, err
}

// identify proves the nodes' instances with what EC2 says of them now,
// and logs each node's problem once (again when it changes).
func (p *prover) identify(ctx context.Context, nodes []Node) (Identities, error) {
	var ask []string
	for _, n := range nodes {
		if c := n.Labels[names.EngineLabelInstanceID]; wire.ValidInstanceID(c) && !slices.Contains(ask, c) {
			ask = append(ask, c)
		}
	}
	ips := map[string]string{}
	if len(ask) > 0 {
		sort.Strings(ask)
		var err error
		if ips, err = p.Instances.PrivateIPs(ctx, ask); err != nil {
			return Identities{}, fmt.Errorf("asking EC2 for the nodes' instances: %w", err)
		}
	}
	ids := Identify(nodes, ips)
	if p.problems == nil {
		p.problems = map[string]string{}
	}
	present := map[string]bool{}
	for _, n := range nodes {
		present[n.ID] = true
		pr := ids.Problem(n.ID)
		if pr != "" && p.problems[n.ID] != pr {
			p.Log("node %s is not believed: %s", n.ID, pr)
		}
		if pr == "" {
			delete(p.problems, n.ID)
		} else {
			p.problems[n.ID] = pr
		}
	}
	for n := range p.problems {
		if !present[n] {
			delete(p.problems, n)
		}
	}
	return ids, nil
}

// setAvailability sets the swarm nodes EC2 proves to be instance that are
// not yet so to availability, for reason; changed are those it set.
func (p *prover) setAvailability(ctx context.Context, instance, availability, reason string) (changed []string, err error) {
	nodes, ids, err := p.nodesIdentified(ctx)
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if ids.Instance(n.ID) != instance || n.Availability == availability {
			continue
		}
		if err := p.Engine.SetAvailability(ctx, n.ID, availability); err != nil {
			return changed, err
		}
		changed = append(changed, n.ID)
		p.Log("set node %s of instance %s to %s: %s", n.ID, instance, availability, reason)
	}
	return changed, nil
}
