package cluster

import (
	"context"

	"github.com/clusterctl/clusterctl/internal/preflight"
)

// checkPublicIPs checks nodes' public IPs against their subnets before a
// stack is created or updated: nodes without one in public subnets are
// refused (they could reach nothing), nodes given one there are said to
// have one, once per run.
func (s *Plans) checkPublicIPs(ctx context.Context, what, vpc string, subnets []string, public bool) error {
	note, err := preflight.CheckPublicIPs(ctx, s.EC2, preflight.PublicIPsRequest{
		What: what, Flag: "--public-ips", SubnetIDs: subnets, VpcID: vpc, PublicIPs: public,
	})
	if err != nil {
		return err
	}
	if note != "" {
		s.say.noteOnce(note)
	}
	return nil
}
