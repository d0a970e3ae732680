package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
	"github.com/clusterctl/clusterctl/internal/stacks"
)

// The swarm's status snapshot (names.StatusKey in the cluster bucket) is
// read by list-nodes, list-groups and describe: one GetObject per cluster,
// from the core stack's own bucket. What stops it — no bucket, no
// snapshot yet, one that is refused or cannot be read — leaves the swarm's
// state unknown and says why; inventory still lists what EC2 and
// CloudFormation say. Only an interruption fails the command.

// now is the moment a snapshot's age is measured against.
func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// swarmOf reads the swarm's status snapshot of a cluster whose core stack
// is read.
func (s *Service) swarmOf(ctx context.Context, core *stacks.Stack) (query.Swarm, error) {
	return s.swarmOfReusing(ctx, core, nil)
}

// swarmOfReusing is swarmOf where read, when not nil, is what was already
// read from one bucket (swarmByTag): if that is the core's bucket, it is
// not read again.
func (s *Service) swarmOfReusing(ctx context.Context, core *stacks.Stack, read *query.Swarm) (query.Swarm, error) {
	bucket, err := s.coreBucket(ctx, core)
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

// statusWhere is where a bucket's status snapshot is, as Swarm.Where says.
func statusWhere(bucket string) string { return fmt.Sprintf("s3://%s/%s", bucket, names.StatusKey) }

// swarmIn reads the swarm's status snapshot of cluster from its bucket.
func (s *Service) swarmIn(ctx context.Context, cluster, bucket string) (query.Swarm, error) {
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
func (s *Service) clusterSwarm(ctx context.Context, cluster string, read *query.Swarm) (query.Swarm, error) {
	core, err := s.getCore(ctx, cluster)
	switch {
	case err != nil && ctx.Err() != nil:
		return query.Swarm{}, err
	case err != nil:
		return query.Swarm{Cluster: cluster, Missing: err.Error(), Now: s.now()}, nil
	}
	return s.swarmOfReusing(ctx, core, read)
}

// taggedBucket is the bucket a cluster's instances name (names.TagNodeBucket),
// "" when none does or they disagree.
func taggedBucket(nodes []query.Node, cluster string) string {
	bucket := ""
	for _, n := range nodes {
		switch {
		case n.Cluster != cluster || n.Bucket == "":
		case bucket == "":
			bucket = n.Bucket
		case n.Bucket != bucket:
			return ""
		}
	}
	return bucket
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
func (s *Service) swarmByTag(ctx context.Context, cluster string, nodes []query.Node) (w query.Swarm, read *query.Swarm, ok bool, err error) {
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

// swarmReaders bounds the clusters whose snapshots are read at once.
const swarmReaders = 8

// clusterSwarms reads the snapshot of each cluster with read, several at
// once.
func clusterSwarms(ctx context.Context, clusters []string, read func(ctx context.Context, cluster string) (query.Swarm, error)) ([]query.Swarm, error) {
	out := make([]query.Swarm, len(clusters))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(swarmReaders)
	for i, c := range clusters {
		g.Go(func() (err error) {
			out[i], err = read(gctx, c)
			return err
		})
	}
	return out, g.Wait()
}

// ListNodes lists the nodes of a cluster (every cluster when cluster is
// ""), optionally of one group, with what the swarm's status snapshot
// says of each, and the swarm of each cluster listed. The snapshot is read
// from the bucket the instances name (swarmByTag): two calls for one
// cluster. Where they name none, or no snapshot of the cluster is there,
// it is read from the core stack's bucket. A named cluster or group that
// has no nodes is checked to exist, so a wrong name is "not found", not an
// empty cluster.
func (s *Service) ListNodes(ctx context.Context, cluster, group string) ([]query.Node, []query.Swarm, error) {
	if cluster == "" {
		nodes, err := query.ListNodes(ctx, s.EC2, "", group)
		if err != nil {
			return nil, nil, err
		}
		var clusters []string
		for _, n := range nodes {
			if len(clusters) == 0 || clusters[len(clusters)-1] != n.Cluster {
				clusters = append(clusters, n.Cluster) // nodes come sorted by cluster
			}
		}
		swarms, err := clusterSwarms(ctx, clusters, func(ctx context.Context, c string) (query.Swarm, error) {
			w, read, ok, err := s.swarmByTag(ctx, c, nodes)
			if err != nil || ok {
				return w, err
			}
			return s.clusterSwarm(ctx, c, read)
		})
		if err != nil {
			return nil, nil, err
		}
		for _, w := range swarms {
			nodes = query.WithSwarm(nodes, w, group)
		}
		return nodes, swarms, nil
	}
	nodes, err := query.ListNodes(ctx, s.EC2, cluster, group)
	if err != nil {
		return nil, nil, err
	}
	// The instances name the bucket: two calls in all.
	w, read, ok, err := s.swarmByTag(ctx, cluster, nodes)
	switch {
	case err != nil:
		return nil, nil, err
	case ok:
		return query.WithSwarm(nodes, w, group), []query.Swarm{w}, nil
	}
	// Instances launched before the tag, none, or no trusted snapshot where
	// they point: the core's own bucket, found through CloudFormation.
	return s.listNodesByCore(ctx, cluster, group, nodes, read)
}

// listNodesByCore is ListNodes reading the snapshot from the bucket of the
// core stack (DescribeStacks, ListStackResources, then GetObject unless
// read is of that bucket), for the nodes listed. A core that cannot be read
// leaves the swarm unknown while there are nodes to list.
func (s *Service) listNodesByCore(ctx context.Context, cluster, group string, nodes []query.Node, read *query.Swarm) ([]query.Node, []query.Swarm, error) {
	var w query.Swarm
	core, err := s.getCore(ctx, cluster)
	switch {
	case err != nil && (len(nodes) == 0 || ctx.Err() != nil):
		return nil, nil, err
	case err != nil:
		w = query.Swarm{Cluster: cluster, Missing: err.Error(), Now: s.now()}
	default:
		if w, err = s.swarmOfReusing(ctx, core, read); err != nil {
			return nil, nil, err
		}
	}
	nodes = query.WithSwarm(nodes, w, group)
	if len(nodes) == 0 {
		if err := s.checkGroup(ctx, cluster, group); err != nil {
			return nil, nil, err
		}
	}
	return nodes, []query.Swarm{w}, nil
}

// ListGroups lists the agent groups of a cluster (every cluster when
// cluster is ""), with the number of each group's nodes Ready in the swarm
// by the cluster's status snapshot, and the stacks that carry their tags
// under other names (conflicts); none for a named cluster is checked as
// ListNodes does. The snapshot of each cluster with groups is read: its
// core's bucket, then the one object.
func (s *Service) ListGroups(ctx context.Context, cluster string) (query.Inventory, error) {
	inv, err := query.ListInventory(ctx, s.CFN, s.ASG, cluster)
	if err != nil {
		return query.Inventory{}, err
	}
	if len(inv.Groups) == 0 && cluster != "" {
		return inv, s.checkExists(ctx, cluster, "")
	}
	var clusters []string
	for _, g := range inv.Groups {
		if len(clusters) == 0 || clusters[len(clusters)-1] != g.Cluster {
			clusters = append(clusters, g.Cluster) // groups come sorted by cluster
		}
	}
	if inv.Swarms, err = clusterSwarms(ctx, clusters, func(ctx context.Context, c string) (query.Swarm, error) {
		if core := inv.Cores[c]; core != nil {
			return s.swarmOf(ctx, core)
		}
		return s.clusterSwarm(ctx, c, nil)
	}); err != nil {
		return query.Inventory{}, err
	}
	byCluster := map[string]query.Swarm{}
	for _, w := range inv.Swarms {
		byCluster[w.Cluster] = w
	}
	query.WithReady(inv.Groups, byCluster)
	query.WithAutoscale(inv.Groups, byCluster)
	inv.Unread = query.WithLoadBalancers(ctx, s.ELB, inv.Groups)
	return inv, nil
}

// quorumLossProblem is what a manager without a quorum noted on the stale
// snapshot (no leader publishes meanwhile), when it noted it lately: why
// the swarm is stuck, or that it is being recovered.
func quorumLossProblem(w query.Swarm) *Problem {
	if w.Snapshot == nil || w.Snapshot.QuorumLoss == nil {
		return nil
	}
	ql := w.Snapshot.QuorumLoss
	if w.Now.Sub(ql.Checked) > query.StaleAfter {
		return nil
	}
	reason := fmt.Sprintf("the swarm has had no leader (no quorum) since %s, as manager %s says: %s",
		ql.Since.UTC().Format(time.RFC3339), ql.Observer, ql.Reason)
	repair := "nothing to do: the managers recover the swarm on their own once every lost manager is proven gone by EC2"
	if ql.Decision == "stuck" {
		repair = "terminate the lost managers' instances if they are gone for good (`clusterctl list-nodes -j " + w.Cluster +
			" -n control`), and the survivor recovers the swarm; or, on purpose, `docker swarm init --force-new-cluster --advertise-addr ITS-ADDRESS` on a surviving manager (through Session Manager)"
	}
	return &Problem{Broken: true, Reason: reason, Repair: repair}
}

// swarmProblems judges the swarm by its status snapshot. No snapshot, or
// a stale one, leaves the swarm's state unknown, which is never healthy;
// a fresh one tells the managers' quorum and, for a lone manager, its
// backup.
func swarmProblems(cluster string, w query.Swarm) []Problem {
	managers := fmt.Sprintf("`clusterctl list-nodes -j %s -n control` shows the managers", cluster)
	housekeeping := "the leader's housekeeping service publishes it: " + managers +
		", and the service's log on one of them is `journalctl -u clusterctl-housekeeping` (through Session Manager)"
	if !w.Fresh() {
		if ql := quorumLossProblem(w); ql != nil {
			return []Problem{*ql}
		}
		return []Problem{{Reason: w.Problem(), Repair: housekeeping}}
	}
	st := w.Status()
	var problems []Problem
	q := st.Quorum
	switch {
	case q.Lost:
		problems = append(problems, Problem{Broken: true,
			Reason: fmt.Sprintf("the swarm lost its quorum: %d of %d managers reachable, %d needed; it can neither schedule nor change anything", q.Reachable, q.Managers, q.Needed),
			Repair: managers + "; on a manager that runs, `docker swarm init --force-new-cluster --advertise-addr ITS-ADDRESS` (through Session Manager) makes it the swarm's only manager, and the Auto Scaling group's new managers join it"})
	case q.Reachable < q.Managers:
		problems = append(problems, Problem{
			Reason: fmt.Sprintf("%d of %d managers unreachable: the swarm tolerates %s more", q.Managers-q.Reachable, q.Managers, query.Plural(q.Tolerates, "failure")),
			Repair: "the managers' Auto Scaling group replaces a manager whose instance fails, and housekeeping removes its node from the swarm; " + managers})
	}
	if b := st.Backup; b.Overdue {
		reason := "no backup of the swarm state yet"
		if b.Last != nil {
			reason = fmt.Sprintf("the last backup of the swarm state is %s old (the managers back up every %s)", query.FormatAge(time.Duration(*b.AgeSeconds*float64(time.Second))), query.FormatAge(query.BackupEvery))
		}
		problems = append(problems, Problem{
			Reason: reason + ": were every manager lost, the services, secrets, configs and networks since would be lost",
			Repair: "the leader has the backups taken on its own (by a follower while every manager is reachable); its log on the manager says why none is taken: `journalctl -u clusterctl-housekeeping` (through Session Manager)"})
	}
	return problems
}
