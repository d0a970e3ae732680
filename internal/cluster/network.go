package cluster

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/clusterctl/clusterctl/internal/errs"
)

// resolveNetwork completes the VPC and subnets a core runs in: the account's
// default VPC and its default subnets when nothing is given, the VPC's
// subnets when only --vpc-id is given, and the subnets' VPC when only
// --subnet-ids are given. Subnets are ordered by zone so the control node's
// placement (first subnet) is stable
// when the operator names none.
func (s *Core) resolveNetwork(ctx context.Context, vpcID string, subnetIDs []string) (string, []string, error) {
	if vpcID == "" && len(subnetIDs) == 0 {
		out, err := s.EC2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: []ec2types.Filter{{Name: aws.String("is-default"), Values: []string{"true"}}}})
		if err != nil {
			return "", nil, fmt.Errorf("looking up the default VPC: %w", err)
		}
		if len(out.Vpcs) == 0 {
			return "", nil, fmt.Errorf("this region has no default VPC: pass --vpc-id and --subnet-ids")
		}
		vpcID = aws.ToString(out.Vpcs[0].VpcId)
	}
	// Filters rather than SubnetIds: a subnet that does not exist is then
	// missing from the answer, not an API error, and named below.
	in := &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("vpc-id"), Values: []string{vpcID}}}}
	if len(subnetIDs) > 0 {
		in.Filters = []ec2types.Filter{{Name: aws.String("subnet-id"), Values: subnetIDs}}
	}
	var subnets []ec2types.Subnet
	p := ec2.NewDescribeSubnetsPaginator(s.EC2, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return "", nil, fmt.Errorf("describing subnets: %w", err)
		}
		subnets = append(subnets, page.Subnets...)
	}
	if len(subnetIDs) == 0 {
		// In a default VPC use the default subnets (one per zone); in
		// another VPC every subnet is a candidate.
		var defaults []ec2types.Subnet
		for _, sn := range subnets {
			if aws.ToBool(sn.DefaultForAz) {
				defaults = append(defaults, sn)
			}
		}
		if len(defaults) > 0 {
			subnets = defaults
		}
	}
	for _, id := range subnetIDs {
		if !slices.ContainsFunc(subnets, func(sn ec2types.Subnet) bool { return aws.ToString(sn.SubnetId) == id }) {
			return "", nil, errs.Usage("pre-flight: subnet %s does not exist", id)
		}
	}
	if len(subnets) == 0 {
		return "", nil, errs.Usage("VPC %s has no subnets: pass --subnet-ids", vpcID)
	}
	for _, sn := range subnets {
		v := aws.ToString(sn.VpcId)
		if vpcID == "" {
			vpcID = v
		}
		if v != vpcID {
			return "", nil, errs.Usage("subnet %s is in %s, not in %s: all subnets must be in one VPC", aws.ToString(sn.SubnetId), v, vpcID)
		}
	}
	if len(subnetIDs) > 0 {
		// The operator's order stands: the first subnet holds the control node.
		return vpcID, subnetIDs, nil
	}
	sort.Slice(subnets, func(i, j int) bool {
		a, b := aws.ToString(subnets[i].AvailabilityZone), aws.ToString(subnets[j].AvailabilityZone)
		if a != b {
			return a < b
		}
		return aws.ToString(subnets[i].SubnetId) < aws.ToString(subnets[j].SubnetId)
	})
	ids := make([]string, len(subnets))
	for i, sn := range subnets {
		ids[i] = aws.ToString(sn.SubnetId)
	}
	return vpcID, ids, nil
}
