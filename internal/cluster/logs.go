package cluster

import (
	"context"

	"github.com/clusterctl/clusterctl/internal/logs"
	"github.com/clusterctl/clusterctl/internal/names"
)

// Logs reads the events of a cluster's log group that req asks for (its
// Group is the core's), handing them to emit in time order.
func (s *Service) Logs(ctx context.Context, cluster string, req logs.Request, emit func(logs.Event) error) error {
	core, err := s.getCore(ctx, cluster)
	if err != nil {
		return err
	}
	group := core.Outputs[names.OutputLogGroupName]
	if group == "" {
		return refused("cluster %q has no log group yet: add it with `clusterctl update-core %s`, then roll the groups' nodes onto it with `clusterctl update-group -n GROUP -j %s`", cluster, cluster, cluster)
	}
	if group != names.LogGroup(cluster) {
		return refused("core %q names log group %q, not its own %s", cluster, group, names.LogGroup(cluster))
	}
	req.Group = group
	return logs.Read(ctx, s.CWLogs, req, emit)
}
