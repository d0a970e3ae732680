package awsn

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/node"
)

// GroupScalingAPI is what the autoscaler needs of Auto Scaling.
type GroupScalingAPI interface {
	DescribeAutoScalingGroups(ctx context.Context, in *autoscaling.DescribeAutoScalingGroupsInput, opts ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error)
	SetDesiredCapacity(ctx context.Context, in *autoscaling.SetDesiredCapacityInput, opts ...func(*autoscaling.Options)) (*autoscaling.SetDesiredCapacityOutput, error)
	TerminateInstanceInAutoScalingGroup(ctx context.Context, in *autoscaling.TerminateInstanceInAutoScalingGroupInput, opts ...func(*autoscaling.Options)) (*autoscaling.TerminateInstanceInAutoScalingGroupOutput, error)
}

// InstanceTypesAPI is what the autoscaler needs of EC2.
type InstanceTypesAPI interface {
	DescribeInstanceTypes(ctx context.Context, in *ec2.DescribeInstanceTypesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
}

// StacksAPI is what the autoscaler needs of CloudFormation.
type StacksAPI interface {
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, opts ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
}

// Groups satisfies node.GroupScaling.
type Groups struct {
	AutoScaling GroupScalingAPI
	EC2         InstanceTypesAPI
	Stacks      StacksAPI
}

// Groups are the Auto Scaling groups whose tags make them agents of
// cluster, checked on each group (the filter is AWS's; ownership is ours to
// prove), with the status of an autoscaled group's stack.
func (g Groups) Groups(ctx context.Context, cluster string) ([]node.ScalingGroup, error) {
	var out []node.ScalingGroup
	p := autoscaling.NewDescribeAutoScalingGroupsPaginator(g.AutoScaling, &autoscaling.DescribeAutoScalingGroupsInput{
		Filters: []astypes.Filter{{Name: aws.String("tag:" + names.TagCluster), Values: []string{cluster}}}})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing the cluster's Auto Scaling groups: %w", err)
		}
		for _, a := range page.AutoScalingGroups {
			sg, ok := scalingGroup(a, cluster)
			if !ok {
				continue
			}
			if sg.Autoscale {
				if sg.Busy, err = g.busy(ctx, names.GroupStack(cluster, sg.Group)); err != nil {
					return nil, err
				}
			}
			out = append(out, sg)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out, nil
}

// scalingGroup reads a group's tags; ok false when they do not make it
// an agent group of cluster.
func scalingGroup(a astypes.AutoScalingGroup, cluster string) (node.ScalingGroup, bool) {
	tags := groupTags(a)
	sg := node.ScalingGroup{Name: aws.ToString(a.AutoScalingGroupName), Min: int(aws.ToInt32(a.MinSize)), Max: int(aws.ToInt32(a.MaxSize)),
		Desired: int(aws.ToInt32(a.DesiredCapacity)), Zones: a.AvailabilityZones, Labels: map[string]string{}}
	for k, v := range tags {
		if l, ok := strings.CutPrefix(k, names.TagLabelPrefix); ok {
			sg.Labels[l] = v
		}
	}
	if tags[names.TagCluster] != cluster || tags[names.TagRole] != names.RoleAgents || tags[names.TagGroup] == "" {
		return sg, false
	}
	sg.Group = tags[names.TagGroup]
	if v, ok := tags[names.TagAutoscale]; ok {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			sg.Autoscale, sg.ScaleDownAfter = true, d
		}
	}
	for _, t := range strings.Split(tags[names.TagInstanceTypes], ",") {
		if t = strings.TrimSpace(t); t != "" {
			sg.InstanceTypes = append(sg.InstanceTypes, t)
		}
	}
	sg.Lifecycles = []string{"on-demand"}
	if m := a.MixedInstancesPolicy; m != nil && m.InstancesDistribution != nil {
		d := m.InstancesDistribution
		pct := aws.ToInt32(d.OnDemandPercentageAboveBaseCapacity)
		switch {
		case d.OnDemandPercentageAboveBaseCapacity != nil && pct >= 100:
		case aws.ToInt32(d.OnDemandBaseCapacity) > 0 || pct > 0:
			sg.Lifecycles = []string{"on-demand", "spot"}
		default:
			sg.Lifecycles = []string{"spot"}
		}
	}
	for _, i := range a.Instances {
		sg.Instances = append(sg.Instances, aws.ToString(i.InstanceId))
	}
	return sg, true
}

// groupTags are the tags of the group itself, by key.
func groupTags(a astypes.AutoScalingGroup) map[string]string {
	tags := map[string]string{}
	for _, t := range a.Tags {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return tags
}

// busy says why the stack must not be changed under CloudFormation: an
// operation of its in progress (a rolling update among them).
func (g Groups) busy(ctx context.Context, stack string) (string, error) {
	out, err := g.Stacks.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
	var ae smithy.APIError
	if errors.As(err, &ae) && strings.Contains(ae.ErrorMessage(), "does not exist") {
		return fmt.Sprintf("its stack %s does not exist", stack), nil
	}
	if err != nil {
		return "", fmt.Errorf("describing stack %s: %w", stack, err)
	}
	for _, s := range out.Stacks {
		if st := string(s.StackStatus); strings.HasSuffix(st, "_IN_PROGRESS") {
			return fmt.Sprintf("its stack %s is %s", stack, st), nil
		}
	}
	return "", nil
}

// InstanceTypes are what EC2 says of the types.
func (g Groups) InstanceTypes(ctx context.Context, types []string) (map[string]node.InstanceType, error) {
	in := &ec2.DescribeInstanceTypesInput{}
	for _, t := range types {
		in.InstanceTypes = append(in.InstanceTypes, ec2types.InstanceType(t))
	}
	out := map[string]node.InstanceType{}
	p := ec2.NewDescribeInstanceTypesPaginator(g.EC2, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instance types %s: %w", strings.Join(types, ", "), err)
		}
		for _, t := range page.InstanceTypes {
			var it node.InstanceType
			if t.VCpuInfo != nil {
				it.VCPUs = int(aws.ToInt32(t.VCpuInfo.DefaultVCpus))
			}
			if t.MemoryInfo != nil {
				it.MemoryMiB = aws.ToInt64(t.MemoryInfo.SizeInMiB)
			}
			if t.ProcessorInfo != nil {
				for _, a := range t.ProcessorInfo.SupportedArchitectures {
					it.Archs = append(it.Archs, string(a))
				}
			}
			out[string(t.InstanceType)] = it
		}
	}
	return out, nil
}

// SetDesired sets the group's desired capacity, cooldowns aside: the
// autoscaler waits for the nodes itself.
func (g Groups) SetDesired(ctx context.Context, group string, n int) error {
	_, err := g.AutoScaling.SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{
		AutoScalingGroupName: aws.String(group), DesiredCapacity: aws.Int32(int32(n)), HonorCooldown: aws.Bool(false)})
	if err != nil {
		return fmt.Errorf("setting the desired capacity of %s to %d: %w", group, n, err)
	}
	return nil
}

// Terminate terminates the instance through its group, decrementing the
// desired capacity; the group's lifecycle hook runs as for any
// termination.
func (g Groups) Terminate(ctx context.Context, instance string) error {
	_, err := g.AutoScaling.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{
		InstanceId: aws.String(instance), ShouldDecrementDesiredCapacity: aws.Bool(true)})
	if err != nil {
		return fmt.Errorf("terminating %s: %w", instance, err)
	}
	return nil
}
