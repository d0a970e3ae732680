package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// swarmStatus is the swarm's status snapshot, read as inventory reads it
// (query.ReadSnapshot: the cluster's own, trusted), with what the node
// commands ask of it.
type swarmStatus struct{ query.Snapshot }

// SwarmNode is one node of the swarm as the status snapshot shows it.
type SwarmNode = query.SwarmNode

// Status reads the swarm status the managers publish in the bucket.
type Status struct {
	find *Finder
	S3   S3API
	Now  func() time.Time
}

// readStatus reads the status snapshot of cluster's swarm from bucket;
// nil when there is none (no manager has published one).
func (s *Status) readStatus(ctx context.Context, bucket, cluster string) (*swarmStatus, error) {
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

// now is the moment a snapshot's age is measured against.
func (s *Status) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// swarmOf reads the swarm's status snapshot of a cluster whose core stack
// is read.
func (s *Status) swarmOf(ctx context.Context, core *stacks.Stack) (query.Swarm, error) {
	return s.swarmOfReusing(ctx, core, nil)
}

// swarmOfReusing is swarmOf where read, when not nil, is what was already
// read from one bucket (swarmByTag): if that is the core's bucket, it is
// not read again.
func (s *Status) swarmOfReusing(ctx context.Context, core *stacks.Stack, read *query.Swarm) (query.Swarm, error) {
	bucket, err := s.find.coreBucket(ctx, core)
	switch {
	case err != nil && ctx.Err() != nil:
		return query.Swarm{}, err
	case err != nil:
		return query.Swarm{Cluster: core.Name, Missing: err.Error(), Now: s.now()}, nil
	case bucket == "":
		return query.Swarm{Cluster: core.Name, Missing: fmt.Sprintf("the core owns no bucket to read its status from (stack %s)", core.Status), Now: s.now()}, nil
	case read != nil && read.Where == statusWhere(bucket):
		return *read, nil
	}
	return s.swarmIn(ctx, core.Name, bucket)
}

// swarmIn reads the swarm's status snapshot of cluster from its bucket.
func (s *Status) swarmIn(ctx context.Context, cluster, bucket string) (query.Swarm, error) {
	w := query.Swarm{Cluster: cluster, Where: statusWhere(bucket)}
	snap, err := query.ReadSnapshot(ctx, s.S3, bucket, cluster)
	w.Now = s.now()
	switch {
	case err != nil && ctx.Err() != nil:
		return query.Swarm{}, err
	case errors.Is(err, query.ErrUntrusted):
		w.Missing = "refused: " + err.Error()
	case err != nil:
		w.Missing = err.Error()
	case snap == nil:
		w.Missing = query.NoSnapshotYet(w.Where)
	}
	w.Snapshot = snap
	return w, nil
}

// clusterSwarm reads a cluster's core stack and its swarm's snapshot; a
// cluster without a core (or whose core cannot be read) has an unknown
// swarm. read is as in swarmOfReusing.
func (s *Status) clusterSwarm(ctx context.Context, cluster string, read *query.Swarm) (query.Swarm, error) {
	core, err := s.find.getCore(ctx, cluster)
	switch {
	case err != nil && ctx.Err() != nil:
		return query.Swarm{}, err
	case err != nil:
		return query.Swarm{Cluster: cluster, Missing: err.Error(), Now: s.now()}, nil
	}
	return s.swarmOfReusing(ctx, core, read)
}

// swarmByTag reads a cluster's snapshot from the bucket its instances name,
// without CloudFormation: list-nodes' calls are then DescribeInstances and
// GetObject. ok is false, and the core's own bucket is to be found and
// read, unless that bucket holds a snapshot ReadSnapshot trusts: one that
// names this cluster. A tag can be wrong (or written by someone else); a
// snapshot that names the cluster it was read for is what the managers
// publish. Anything else (no snapshot there yet, refused, unreadable) is
// only what that bucket says: read is then what was read, if anything, so
// that the core's bucket is not read twice when it is the same.
func (s *Status) swarmByTag(ctx context.Context, cluster string, nodes []query.Node) (w query.Swarm, read *query.Swarm, ok bool, err error) {
	bucket := taggedBucket(nodes, cluster)
	if bucket == "" {
		return query.Swarm{}, nil, false, nil
	}
	got, err := s.swarmIn(ctx, cluster, bucket)
	switch {
	case err != nil:
		return query.Swarm{}, nil, false, err
	case got.Snapshot != nil:
		return got, nil, true, nil
	}
	return query.Swarm{}, &got, false, nil
}

// currentStatus reads the status snapshot and refuses when there is none
// or it is stale: no leader would act on a request, nor show its effect.
func (s *Status) currentStatus(ctx context.Context, n *clusterNode, bucket string) (*swarmStatus, error) {
	st, err := s.readStatus(ctx, bucket, n.Cluster)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, refused("cluster %q has no swarm status in its bucket: its managers have never published one (is the control plane up? clusterctl describe %s)", n.Cluster, n.Cluster)
	}
	if now := time.Now(); st.stale(now) {
		return nil, refused("the swarm status of cluster %q is %s old: no manager leads the swarm or its housekeeping is stopped, so nothing would act on the request (clusterctl describe %s)",
			n.Cluster, query.FormatAge(st.age(now)), n.Cluster)
	}
	return st, nil
}
