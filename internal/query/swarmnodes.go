package query

import (
	"slices"
	"strings"
	"time"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/wire"
)

// Words of the SWARM column and of NodeSwarm.Status besides the swarm's own
// node states (down, unknown, disconnected).
const (
	SwarmReady     = "ready"
	SwarmDrain     = "drain"
	SwarmPause     = "pause"
	SwarmNotJoined = "not joined"
	SwarmStale     = "stale"
	swarmUnknown   = "?"
)

// NodeSwarm is what the swarm's status snapshot says of one node. The JSON
// keys are a public interface.
type NodeSwarm struct {
	// Status is the SWARM column: ready, drain, pause, down (or another
	// state of the swarm's), "not joined" (the snapshot has no node of this
	// instance) or stale (the snapshot is too old to tell); a manager's
	// status follows in parentheses, "ready (leader)", and so does a mark
	// on a swarm node without an instance, "down (no instance)".
	Status        string `json:"status"`
	NodeID        string `json:"nodeId"`
	State         string `json:"state"`
	Availability  string `json:"availability"`
	Role          string `json:"role"`
	ManagerStatus string `json:"managerStatus"`
	RunningTasks  int    `json:"runningTasks"`
	EngineVersion string `json:"engineVersion"`
	// Agent is the SHA-256 of the node agent the node says it runs (its
	// engine label), "" when it says none (an agent of before the label).
	Agent        string    `json:"agent"`
	SnapshotTime time.Time `json:"snapshotTime"`
	Stale        bool      `json:"stale"`
}

func (s *NodeSwarm) word() string {
	if s == nil {
		return swarmUnknown
	}
	return s.Status
}

// nodeState is the word of a swarm node's state and availability: drain
// (or pause) wins over ready, a node that is not ready says its state.
// Managers are drained from the start (they run no workloads): theirs is
// not news.
func nodeState(n SwarmNode) string {
	switch {
	case n.State != "ready":
		return n.State
	case n.Availability == "drain" && n.Role != "manager":
		return SwarmDrain
	case n.Availability == "pause":
		return SwarmPause
	}
	return SwarmReady
}

// rank orders the swarm nodes of one instance: the one it runs now first
// (an agent that left and joined again leaves its old node behind, Down).
func rank(n SwarmNode) int {
	switch n.State {
	case "ready":
		return 0
	case "down":
		return 2
	}
	return 1
}

// better says whether swarm node a is the one its instance runs now
// rather than b (see rank).
func better(a, b SwarmNode) bool { return rank(a) < rank(b) }

// bestByInstance maps each instance id the swarm nodes name to the index
// of its best node: the first of those no other is better than. One pass,
// one comparison per node after an instance's first, whatever the number
// of nodes naming one instance (anyone who may write the snapshot decides
// that number: merging must stay linear in it).
func bestByInstance(nodes []SwarmNode, better func(a, b SwarmNode) bool) map[string]int {
	best := make(map[string]int, len(nodes))
	for i, sn := range nodes {
		if sn.InstanceID == "" {
			continue
		}
		if at, ok := best[sn.InstanceID]; !ok || better(sn, nodes[at]) {
			best[sn.InstanceID] = i
		}
	}
	return best
}

// nodeSwarm is what the snapshot says of swarm node n (nil: the instance
// has none); marks follow the status in parentheses.
func (w Swarm) nodeSwarm(n *SwarmNode, marks ...string) *NodeSwarm {
	ns := &NodeSwarm{SnapshotTime: w.Snapshot.Time, Stale: w.Stale(), Status: SwarmNotJoined}
	if n != nil {
		ns.NodeID, ns.State, ns.Availability, ns.Role = n.NodeID, n.State, n.Availability, n.Role
		ns.ManagerStatus, ns.RunningTasks, ns.EngineVersion = n.ManagerStatus, n.RunningTasks, n.EngineVersion
		ns.Agent = n.EngineLabels[names.EngineLabelAgent]
		ns.Status = nodeState(*n)
		if n.ManagerStatus != "" && !ns.Stale {
			marks = append([]string{n.ManagerStatus}, marks...)
		}
	}
	if ns.Stale {
		// What the swarm said then is in the other fields; the status never
		// says ready of a swarm nobody has seen lately.
		ns.Status = SwarmStale
	}
	if len(marks) > 0 {
		ns.Status += " (" + strings.Join(marks, ", ") + ")"
	}
	return ns
}

// WithSwarm merges what cluster w.Cluster's swarm says into its nodes:
// each gets its swarm node (by the instance id engine label), or "not
// joined"; the swarm's nodes that match no listed instance are appended,
// flagged SwarmOnly (only those of group when a group is given). Without a
// snapshot the nodes are left as they are (Swarm nil). Other clusters'
// nodes are untouched.
func WithSwarm(nodes []Node, w Swarm, group string) []Node {
	if w.Snapshot == nil {
		return nodes
	}
	// A swarm node is an instance's only when its label names the
	// instance and the swarm sees it at the instance's private IP, as EC2
	// says, and the managers found no problem with it: an agent may label
	// itself with any instance's id.
	ips := map[string]string{}
	for _, n := range nodes {
		if n.Cluster == w.Cluster && !n.SwarmOnly && n.PrivateIP != "" {
			ips[n.InstanceID] = n.PrivateIP
		}
	}
	claims := make([]SwarmNode, len(w.Snapshot.Nodes))
	unproven := make([]bool, len(w.Snapshot.Nodes))
	for i, sn := range w.Snapshot.Nodes {
		ip, ok := ips[sn.InstanceID]
		if sn.IdentityProblem != "" || ok && sn.Address != ip {
			unproven[i] = true
			sn.InstanceID = ""
		}
		claims[i] = sn
	}
	best := bestByInstance(claims, better)
	used := make([]bool, len(w.Snapshot.Nodes))
	listed := map[string]bool{}
	for i := range nodes {
		n := &nodes[i]
		if n.Cluster != w.Cluster || n.SwarmOnly {
			continue
		}
		listed[n.InstanceID] = true
		if at, ok := best[n.InstanceID]; ok {
			used[at] = true
			n.Swarm = w.nodeSwarm(&w.Snapshot.Nodes[at])
		} else {
			n.Swarm = w.nodeSwarm(nil)
		}
	}
	nodes = slices.Grow(nodes, len(w.Snapshot.Nodes)-len(best))
	for i, sn := range w.Snapshot.Nodes {
		g := sn.EngineLabels[names.EngineLabelGroup]
		if used[i] || group != "" && g != group {
			continue
		}
		mark := "no instance"
		switch {
		case unproven[i]:
			// Its label is not believed: no instance is shown as its.
			mark = "claims another instance, not proven"
			if wire.ValidInstanceID(sn.InstanceID) {
				mark = "claims " + sn.InstanceID + ", not proven"
			}
			sn.InstanceID = ""
		case listed[sn.InstanceID]:
			mark = "duplicate" // an earlier node of an instance listed above
		}
		labels := map[string]string{}
		for k, v := range sn.EngineLabels {
			if !strings.HasPrefix(k, names.EngineLabelReserved) {
				labels[k] = v
			}
		}
		nodes = append(nodes, Node{
			Cluster: w.Cluster, Group: g, InstanceID: sn.InstanceID,
			InstanceType: sn.EngineLabels[names.EngineLabelInstanceType],
			Lifecycle:    sn.EngineLabels[names.EngineLabelLifecycle],
			Zone:         sn.EngineLabels[names.EngineLabelZone],
			PrivateIP:    sn.Address, Labels: labels,
			Swarm: w.nodeSwarm(&w.Snapshot.Nodes[i], mark), SwarmOnly: true,
		})
	}
	sortNodes(nodes)
	return nodes
}

// Ready counts the nodes of group that are Ready and active in a fresh
// snapshot (nil without one: unknown).
func (w Swarm) Ready(group string) *int {
	if !w.Fresh() {
		return nil
	}
	n := 0
	for _, sn := range w.Snapshot.Nodes {
		if sn.EngineLabels[names.EngineLabelGroup] == group && nodeState(sn) == SwarmReady {
			n++
		}
	}
	return &n
}

// WithReady sets each group's Ready from its cluster's swarm.
func WithReady(groups []Group, swarms map[string]Swarm) {
	for i := range groups {
		groups[i].Ready = swarms[groups[i].Cluster].Ready(groups[i].Group)
	}
}
