package cluster

import (
	"context"
	"time"

	"github.com/clusterctl/clusterctl/internal/query"
)

// swarmStatus is the swarm's status snapshot, read as inventory reads it
// (query.ReadSnapshot: the cluster's own, trusted), with what the node
// commands ask of it.
type swarmStatus struct{ query.Snapshot }

// SwarmNode is one node of the swarm as the status snapshot shows it.
type SwarmNode = query.SwarmNode

// readStatus reads the status snapshot of cluster's swarm from bucket;
// nil when there is none (no manager has published one).
func (s *Service) readStatus(ctx context.Context, bucket, cluster string) (*swarmStatus, error) {
	snap, err := query.ReadSnapshot(ctx, s.S3, bucket, cluster)
	if err != nil || snap == nil {
		return nil, err
	}
	return &swarmStatus{Snapshot: *snap}, nil
}

// at is the snapshot judged at now, as inventory judges it.
func (st *swarmStatus) at(now time.Time) query.Swarm {
	return query.Swarm{Snapshot: &st.Snapshot, Now: now}
}

// age is how old the snapshot is at now.
func (st *swarmStatus) age(now time.Time) time.Duration { return max(st.at(now).Age(), 0) }

// stale says whether no leader has published the snapshot for a while (or
// its publisher's clock is wrong).
func (st *swarmStatus) stale(now time.Time) bool { return st.at(now).Stale() }

// nodesOf returns the swarm nodes of an instance (more than one while a
// node that rejoined under another id is still listed): those whose label
// names it, that the managers found no problem with, and that the swarm
// sees at ip, the instance's private IP as EC2 gives it ("": not known
// here). A node's label alone proves nothing: an agent may claim any
// instance's id.
func (st *swarmStatus) nodesOf(instance, ip string) []SwarmNode {
	var out []SwarmNode
	for _, n := range st.Nodes {
		if n.InstanceID == instance && n.IdentityProblem == "" && (ip == "" || n.Address == ip) {
			out = append(out, n)
		}
	}
	return out
}

// managers returns the managers of the swarm.
func (st *swarmStatus) managers() []SwarmNode {
	var out []SwarmNode
	for _, n := range st.Nodes {
		if n.Role == "manager" {
			out = append(out, n)
		}
	}
	return out
}

// reachable says whether a manager takes part in the swarm's quorum.
func inQuorum(n SwarmNode) bool {
	return n.ManagerStatus == "leader" || n.ManagerStatus == "reachable"
}
