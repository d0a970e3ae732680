package cluster

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
)

// ServiceList is what `clusterctl services` shows: the swarm's services
// from its status snapshot, and a note when that snapshot is stale.
type ServiceList struct {
	Services []query.Service
	Note     string
}

// Services lists the swarm's services of a cluster (only the one named
// when name is given) from the leader's status snapshot: the core stack,
// its bucket, then one GetObject; nothing reaches the managers. A stale
// snapshot still answers, with a note; no snapshot, or one that lists no
// services (managers of an older clusterctl), is refused.
func (s *Inspector) Services(ctx context.Context, cluster, name string) (*ServiceList, error) {
	core, err := s.find.getCore(ctx, cluster)
	if err != nil {
		return nil, err
	}
	bucket, err := s.find.bucketOf(ctx, core)
	if err != nil {
		return nil, err
	}
	w, err := s.status.swarmIn(ctx, cluster, bucket)
	if err != nil {
		return nil, err
	}
	if w.Snapshot == nil {
		return nil, refused("cluster %q: %s", cluster, w.Problem())
	}
	if w.Snapshot.Services == nil {
		return nil, refused("cluster %q: its managers' status snapshot lists no services: they run an older clusterctl; `clusterctl update-core %s` brings them this one", cluster, cluster)
	}
	all := query.ServicesOf(w.Snapshot)
	list := &ServiceList{Services: all, Note: w.Problem()}
	if name == "" {
		return list, nil
	}
	for _, sv := range all {
		if sv.Name == name || sv.ID == name {
			list.Services = []query.Service{sv}
			return list, nil
		}
	}
	return nil, refused("no service %q in the swarm of cluster %q (status of %s ago; `clusterctl services -j %s` lists them)", name, cluster, query.FormatAge(w.Age()), cluster)
}

// ListClusters summarises every cluster of the region: its core stack's
// status, its groups, and what its swarm's status snapshot says (one read
// per cluster, several at once). The snapshot is read from the bucket the
// core's BucketName output names: a listing decides nothing, and the
// snapshot read is the cluster's own or refused (query.ReadSnapshot). The
// stacks that carry a cluster's tags under a name they do not give come
// back apart, as conflicts.
func (s *Inspector) ListClusters(ctx context.Context) ([]query.ClusterSummary, []query.Conflict, error) {
	cores, err := query.ListCores(ctx, s.CFN)
	if err != nil {
		return nil, nil, err
	}
	out := make([]query.ClusterSummary, len(cores.Cores))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(swarmReaders)
	for i, core := range cores.Cores {
		out[i] = query.ClusterSummary{Cluster: core.Name, Status: core.Status, Managers: query.ManagersOf(core), Groups: cores.Groups[core.Name],
			Network: core.Parameters[names.ParamNetwork]}
		g.Go(func() error {
			w := query.Swarm{Cluster: core.Name, Now: s.status.now(), Missing: fmt.Sprintf("the core has no %s output to find its bucket by (stack %s)", names.OutputBucketName, core.Status)}
			if bucket := core.Outputs[names.OutputBucketName]; bucket != "" {
				// Read only once its tags prove it the cluster's: a stack
				// with copied tags names whatever bucket it likes.
				err := s.find.provenBucket(gctx, bucket, core.Name)
				switch {
				case err != nil && gctx.Err() != nil:
					return err
				case err != nil:
					w.Missing = err.Error()
				default:
					if w, err = s.status.swarmIn(gctx, core.Name, bucket); err != nil {
						return err
					}
				}
			}
			out[i].Summarise(w)
			out[i].Health = healthOf(core.Status, true, swarmProblems(core.Name, w))
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	return out, cores.Conflicts, nil
}
