package awsn

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/node"
)

// ProofAutoScalingAPI is what the proof of a lost manager needs of Auto
// Scaling.
type ProofAutoScalingAPI interface {
	DescribeAutoScalingGroups(ctx context.Context, in *autoscaling.DescribeAutoScalingGroupsInput, opts ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error)
	TerminateInstanceInAutoScalingGroup(ctx context.Context, in *autoscaling.TerminateInstanceInAutoScalingGroupInput, opts ...func(*autoscaling.Options)) (*autoscaling.TerminateInstanceInAutoScalingGroupOutput, error)
}

// Proof satisfies node.ManagerProof: what EC2 and Auto Scaling say, never
// the swarm.
type Proof struct {
	EC2         EC2API
	AutoScaling ProofAutoScalingAPI
	// VPC is the cluster's: only its instances are its managers ("":
	// every VPC).
	VPC string
}

// At lists the instances at each private IPv4 address, in every state.
func (p Proof) At(ctx context.Context, addrs []string) (map[string][]node.InstanceAt, error) {
	out := map[string][]node.InstanceAt{}
	pg := ec2.NewDescribeInstancesPaginator(p.EC2, &ec2.DescribeInstancesInput{
		Filters: inVPC(p.VPC, ec2types.Filter{Name: aws.String("private-ip-address"), Values: addrs})})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Reservations {
			for _, in := range r.Instances {
				if in.State == nil || p.VPC != "" && aws.ToString(in.VpcId) != p.VPC {
					continue
				}
				a := aws.ToString(in.PrivateIpAddress)
				out[a] = append(out[a], node.InstanceAt{ID: aws.ToString(in.InstanceId), State: string(in.State.Name)})
			}
		}
	}
	return out, nil
}

// ManagerGroup lists the instances of the cluster's managers' Auto
// Scaling group: the one whose tags say it is the core of cluster.
func (p Proof) ManagerGroup(ctx context.Context, cluster string) ([]string, error) {
	var out []string
	found := false
	pg := autoscaling.NewDescribeAutoScalingGroupsPaginator(p.AutoScaling, &autoscaling.DescribeAutoScalingGroupsInput{
		Filters: []astypes.Filter{{Name: aws.String("tag:" + names.TagCluster), Values: []string{cluster}}}})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, a := range page.AutoScalingGroups {
			tags := groupTags(a)
			if tags[names.TagCluster] != cluster || tags[names.TagRole] != names.RoleCore {
				continue
			}
			found = true
			for _, i := range a.Instances {
				out = append(out, aws.ToString(i.InstanceId))
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("no Auto Scaling group of cluster %s is tagged %s=%s", cluster, names.TagRole, names.RoleCore)
	}
	return out, nil
}

// Fence terminates a lost manager's instance through its Auto Scaling
// group without decrementing the desired capacity: the group launches its
// replacement, and the instance never starts again with its old state.
func (p Proof) Fence(ctx context.Context, instance string) error {
	_, err := p.AutoScaling.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{
		InstanceId: aws.String(instance), ShouldDecrementDesiredCapacity: aws.Bool(false)})
	if err != nil {
		return fmt.Errorf("terminating %s through its Auto Scaling group: %w", instance, err)
	}
	return nil
}
