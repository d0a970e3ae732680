package cluster

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
)

// The swarm's status snapshot (names.StatusKey in the cluster bucket) is
// read by list-nodes, list-groups and describe: one GetObject per cluster,
// from the core stack's own bucket. What stops it — no bucket, no
// snapshot yet, one that is refused or cannot be read — leaves the swarm's
// state unknown and says why; inventory still lists what EC2 and
// CloudFormation say. Only an interruption fails the command.

// statusWhere is where a bucket's status snapshot is, as Swarm.Where says.
func statusWhere(bucket string) string { return fmt.Sprintf("s3://%s/%s", bucket, names.StatusKey) }

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
func (s *Inspector) ListNodes(ctx context.Context, cluster, group string) ([]query.Node, []query.Swarm, error) {
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
			w, read, ok, err := s.status.swarmByTag(ctx, c, nodes)
			if err != nil || ok {
				return w, err
			}
			return s.status.clusterSwarm(ctx, c, read)
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
	w, read, ok, err := s.status.swarmByTag(ctx, cluster, nodes)
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
func (s *Inspector) listNodesByCore(ctx context.Context, cluster, group string, nodes []query.Node, read *query.Swarm) ([]query.Node, []query.Swarm, error) {
	var w query.Swarm
	core, err := s.find.getCore(ctx, cluster)
	switch {
	case err != nil && (len(nodes) == 0 || ctx.Err() != nil):
		return nil, nil, err
	case err != nil:
		w = query.Swarm{Cluster: cluster, Missing: err.Error(), Now: s.status.now()}
	default:
		if w, err = s.status.swarmOfReusing(ctx, core, read); err != nil {
			return nil, nil, err
		}
	}
	nodes = query.WithSwarm(nodes, w, group)
	if len(nodes) == 0 {
		if err := s.find.checkGroup(ctx, cluster, group); err != nil {
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
func (s *Inspector) ListGroups(ctx context.Context, cluster string) (query.Inventory, error) {
	inv, err := query.ListInventory(ctx, s.CFN, s.ASG, cluster)
	if err != nil {
		return query.Inventory{}, err
	}
	if len(inv.Groups) == 0 && cluster != "" {
		return inv, s.find.checkExists(ctx, cluster, "")
	}
	var clusters []string
	for _, g := range inv.Groups {
		if len(clusters) == 0 || clusters[len(clusters)-1] != g.Cluster {
			clusters = append(clusters, g.Cluster) // groups come sorted by cluster
		}
	}
	if inv.Swarms, err = clusterSwarms(ctx, clusters, func(ctx context.Context, c string) (query.Swarm, error) {
		if core := inv.Cores[c]; core != nil {
			return s.status.swarmOf(ctx, core)
		}
		return s.status.clusterSwarm(ctx, c, nil)
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
