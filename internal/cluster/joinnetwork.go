package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/clusterctl/clusterctl/internal/errs"
	"github.com/clusterctl/clusterctl/internal/network"
	"github.com/clusterctl/clusterctl/internal/spec"
)

// joinNetwork fills in the VPC and subnets of a core that joins a network
// (core.Network) from the network's outputs, as a group joins its core:
// the nodes in its private subnets, internet-facing load balancers in its
// public ones. What the operator gave as well must be the network's.
func (s *Core) joinNetwork(ctx context.Context, core *spec.Core) error {
	if core.Network == "" {
		return nil
	}
	n, err := network.Read(ctx, s.Stacks, core.Network)
	if errors.Is(err, network.ErrRefused) {
		return refused("%s", errs.Message(err))
	}
	if err != nil {
		return err
	}
	if core.VpcID != "" && core.VpcID != n.VpcID {
		return errs.Usage("--vpc-id %s is not the VPC of network %s (%s): give one or the other", core.VpcID, n.Name, n.VpcID)
	}
	if bad := notIn(core.SubnetIDs, n.PrivateSubnetIDs); bad != "" {
		return errs.Usage("--subnet-ids: %s is not a private subnet of network %s (%s)", bad, n.Name, strings.Join(n.PrivateSubnetIDs, ", "))
	}
	if bad := notIn(core.PublicSubnetIDs, n.PublicSubnetIDs); bad != "" {
		return errs.Usage("--public-subnet-ids: %s is not a public subnet of network %s (%s)", bad, n.Name, strings.Join(n.PublicSubnetIDs, ", "))
	}
	core.VpcID = n.VpcID
	if len(core.SubnetIDs) == 0 {
		core.SubnetIDs = n.PrivateSubnetIDs
	}
	if len(core.PublicSubnetIDs) == 0 {
		core.PublicSubnetIDs = n.PublicSubnetIDs
	}
	return nil
}

// notIn is the first of ids that is not in of ("" when all are).
func notIn(ids, of []string) string {
	for _, id := range ids {
		if !slices.Contains(of, id) {
			return id
		}
	}
	return ""
}
