package cluster

import "context"

// CheckCluster refuses a cluster without its core stack, proven by the
// stack's tags (role core, this cluster): what `clusterctl use` checks
// before making it the default. Suggest adds a close name.
func (s *Finder) CheckCluster(ctx context.Context, cluster string) error {
	_, err := s.getCore(ctx, cluster)
	return err
}
