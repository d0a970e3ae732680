package awsn

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/clusterctl/clusterctl/internal/node"
)

// Describe says what EC2 knows the instances of ids to be: type,
// lifecycle (spot, or on-demand for any other), availability zone. The
// leader labels the nodes with it, never with what a node says.
func (i Instances) Describe(ctx context.Context, ids []string) (map[string]node.InstanceFacts, error) {
	out := map[string]node.InstanceFacts{}
	p := ec2.NewDescribeInstancesPaginator(i.API, &ec2.DescribeInstancesInput{
		Filters: []ec2types.Filter{{Name: aws.String("instance-id"), Values: ids}}})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instances: %w", err)
		}
		for _, r := range page.Reservations {
			for _, in := range r.Instances {
				f := node.InstanceFacts{Type: string(in.InstanceType), Lifecycle: "on-demand"}
				if in.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
					f.Lifecycle = "spot"
				}
				if in.Placement != nil {
					f.Zone = aws.ToString(in.Placement.AvailabilityZone)
				}
				out[aws.ToString(in.InstanceId)] = f
			}
		}
	}
	return out, nil
}
