package cluster

import (
	"context"
	"fmt"

	"github.com/clusterctl/clusterctl/internal/logs"
	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/query"
)

// Logs reads the events of a cluster's log group that req asks for (its
// Group is the core's), handing them to emit in time order.
func (s *Inspector) Logs(ctx context.Context, cluster string, req logs.Request, emit func(logs.Event) error) error {
	core, err := s.find.getCore(ctx, cluster)
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

// sizeText says a size in bytes, with its binary multiple beside it from
// 1 KiB on: "512 bytes", "1536 bytes, 1.5 KiB".
func sizeText(n int64) string {
	text := query.Plural(int(n), "byte")
	const unit = 1024
	if n < unit {
		return text
	}
	f, i := float64(n)/unit, 0
	for f >= unit && i < 4 {
		f, i = f/unit, i+1
	}
	return fmt.Sprintf("%s, %.1f %ciB", text, f, "KMGTP"[i])
}
