package query

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// Cores is every cluster of the region as its stacks show it: the core
// stacks by cluster, how many groups each has, and the stacks that carry
// the tags under names they do not give.
type Cores struct {
	Cores     []stacks.Stack
	Groups    map[string]int
	Conflicts []Conflict
}

// ListCores reads every stack of the region (DescribeStacks, one page per
// 100 stacks) and keeps the cores and the count of each one's groups.
func ListCores(ctx context.Context, cfn CFNAPI) (Cores, error) {
	all, err := describeAllStacks(ctx, cfn)
	if err != nil {
		return Cores{}, err
	}
	out := Cores{Groups: map[string]int{}, Conflicts: []Conflict{}}
	for _, s := range all {
		if s.Tags[names.TagCluster] == "" || s.Status == string(cfntypes.StackStatusDeleteComplete) {
			continue
		}
		role, conflict := Ownership(s)
		switch {
		case conflict != nil:
			out.Conflicts = append(out.Conflicts, *conflict)
		case role == names.RoleCore:
			out.Cores = append(out.Cores, s)
		case role == names.RoleAgents:
			out.Groups[s.Tags[names.TagCluster]]++
		}
	}
	sort.Slice(out.Cores, func(i, j int) bool { return out.Cores[i].Name < out.Cores[j].Name })
	return out, nil
}

// ClusterSummary is one cluster as list-clusters shows it. The JSON keys
// are a public interface.
type ClusterSummary struct {
	Cluster string `json:"cluster"`
	Status  string `json:"status"` // the core stack's
	// Health is healthy, degraded, broken, busy, ... from the core's
	// status and the swarm's snapshot (the quorum; unknown without one).
	Health string `json:"health"`
	// Managers is what the core asks for; ManagersReachable how many the
	// swarm counts in its quorum (null: unknown, no fresh snapshot).
	Managers          int  `json:"managers"`
	ManagersReachable *int `json:"managersReachable"`
	Groups            int  `json:"groups"`
	// Nodes and NodesReady count the swarm's nodes (null: unknown).
	Nodes      *int `json:"nodes"`
	NodesReady *int `json:"nodesReady"`
	// Services counts the swarm's services (null: unknown).
	Services *int `json:"services"`
	// Swarm says why the counts are unknown or stale ("" when fresh).
	Swarm string `json:"swarm"`
	// Alarms counts the core's alarms in ALARM (null: not read).
	Alarms *int `json:"alarms"`
	// Network is the network the core joined ("" for a VPC of the
	// operator's).
	Network string `json:"network"`
}

// Summarise fills the swarm's part of a summary from its snapshot.
func (c *ClusterSummary) Summarise(w Swarm) {
	c.Swarm = w.Problem()
	if !w.Fresh() {
		return
	}
	st := w.Status()
	reach := st.Quorum.Reachable
	nodes, ready := len(w.Snapshot.Nodes), 0
	for _, n := range w.Snapshot.Nodes {
		if n.State == "ready" {
			ready++
		}
	}
	c.ManagersReachable, c.Nodes, c.NodesReady = &reach, &nodes, &ready
	if w.Snapshot.Services != nil {
		n := len(w.Snapshot.Services)
		c.Services = &n
	}
}

// ManagersOf is the number of managers a core asks for (0 when it does not
// say).
func ManagersOf(core stacks.Stack) int {
	n, _ := strconv.Atoi(core.Parameters[names.ParamManagers])
	return n
}

// ClustersTable is the table of list-clusters; wide adds why the swarm's
// counts are unknown.
func ClustersTable(clusters []ClusterSummary, wide bool) Table {
	t := Table{Header: []string{"CLUSTER", "STATUS", "HEALTH", "MANAGERS", "GROUPS", "NODES", "SERVICES", "ALARMS"}}
	if wide {
		t.Header = append(t.Header, "NETWORK", "SWARM")
	}
	opt := func(p *int) string {
		if p == nil {
			return "?"
		}
		return strconv.Itoa(*p)
	}
	for _, c := range clusters {
		managers := fmt.Sprintf("%s/%d", opt(c.ManagersReachable), c.Managers)
		nodes := fmt.Sprintf("%s/%s", opt(c.NodesReady), opt(c.Nodes))
		row := []string{c.Cluster, c.Status, c.Health, managers, strconv.Itoa(c.Groups), nodes, opt(c.Services), opt(c.Alarms)}
		if wide {
			row = append(row, dash(c.Network), dash(c.Swarm))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}
