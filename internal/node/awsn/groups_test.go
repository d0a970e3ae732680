package awsn

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/clusterctl/clusterctl/internal/node"
)

type fakeGroups struct {
	asgs      []astypes.AutoScalingGroup
	filter    []astypes.Filter
	stacks    map[string]cfntypes.StackStatus
	desired   *autoscaling.SetDesiredCapacityInput
	terminate *autoscaling.TerminateInstanceInAutoScalingGroupInput
	typesIn   []ec2types.InstanceType
}

func (f *fakeGroups) DescribeAutoScalingGroups(_ context.Context, in *autoscaling.DescribeAutoScalingGroupsInput, _ ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error) {
	f.filter = in.Filters
	return &autoscaling.DescribeAutoScalingGroupsOutput{AutoScalingGroups: f.asgs}, nil
}
func (f *fakeGroups) SetDesiredCapacity(_ context.Context, in *autoscaling.SetDesiredCapacityInput, _ ...func(*autoscaling.Options)) (*autoscaling.SetDesiredCapacityOutput, error) {
	f.desired = in
	return &autoscaling.SetDesiredCapacityOutput{}, nil
}
func (f *fakeGroups) TerminateInstanceInAutoScalingGroup(_ context.Context, in *autoscaling.TerminateInstanceInAutoScalingGroupInput, _ ...func(*autoscaling.Options)) (*autoscaling.TerminateInstanceInAutoScalingGroupOutput, error) {
	f.terminate = in
	return &autoscaling.TerminateInstanceInAutoScalingGroupOutput{}, nil
}
func (f *fakeGroups) DescribeStacks(_ context.Context, in *cloudformation.DescribeStacksInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error) {
	st, ok := f.stacks[aws.ToString(in.StackName)]
	if !ok {
		return nil, &smithy.GenericAPIError{Code: "ValidationError", Message: "Stack with id " + aws.ToString(in.StackName) + " does not exist"}
	}
	return &cloudformation.DescribeStacksOutput{Stacks: []cfntypes.Stack{{StackStatus: st}}}, nil
}
func (f *fakeGroups) DescribeInstanceTypes(_ context.Context, in *ec2.DescribeInstanceTypesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error) {
	f.typesIn = in.InstanceTypes
	return &ec2.DescribeInstanceTypesOutput{InstanceTypes: []ec2types.InstanceTypeInfo{{InstanceType: "m6g.large",
		VCpuInfo: &ec2types.VCpuInfo{DefaultVCpus: aws.Int32(2)}, MemoryInfo: &ec2types.MemoryInfo{SizeInMiB: aws.Int64(8192)},
		ProcessorInfo: &ec2types.ProcessorInfo{SupportedArchitectures: []ec2types.ArchitectureType{"arm64"}}}}}, nil
}

func asg(name string, tags ...string) astypes.AutoScalingGroup {
	a := astypes.AutoScalingGroup{AutoScalingGroupName: aws.String(name), MinSize: aws.Int32(1), MaxSize: aws.Int32(4), DesiredCapacity: aws.Int32(2),
		AvailabilityZones: []string{"eu-west-1a"}, Instances: []astypes.Instance{{InstanceId: aws.String("i-1")}}}
	for i := 0; i < len(tags); i += 2 {
		a.Tags = append(a.Tags, astypes.TagDescription{Key: aws.String(tags[i]), Value: aws.String(tags[i+1])})
	}
	return a
}

// The groups are read from their tags, proven the cluster's on each; an
// autoscaled group's stack in progress makes it busy.
func TestGroups(t *testing.T) {
	spot := asg("core-spot-Group-2", "clusterctl:cluster", "core", "clusterctl:role", "agents", "clusterctl:group", "spot",
		"clusterctl:autoscale", "20s", "clusterctl:instance-types", "m5.large,m5a.large", "clusterctl:label:disk", "ssd")
	spot.MixedInstancesPolicy = &astypes.MixedInstancesPolicy{InstancesDistribution: &astypes.InstancesDistribution{
		OnDemandBaseCapacity: aws.Int32(0), OnDemandPercentageAboveBaseCapacity: aws.Int32(0)}}
	f := &fakeGroups{stacks: map[string]cfntypes.StackStatus{"core-web": "UPDATE_IN_PROGRESS", "core-spot": "UPDATE_COMPLETE"}, asgs: []astypes.AutoScalingGroup{
		asg("core-web-Group-1", "clusterctl:cluster", "core", "clusterctl:role", "agents", "clusterctl:group", "web",
			"clusterctl:autoscale", "10m0s", "clusterctl:instance-types", "t3.small"),
		spot,
		asg("core-fixed-Group-3", "clusterctl:cluster", "core", "clusterctl:role", "agents", "clusterctl:group", "fixed", "clusterctl:instance-types", "t3.small"),
		asg("core-ManagerGroup-4", "clusterctl:cluster", "core", "clusterctl:role", "core", "clusterctl:group", "control"),
		asg("prod-web-Group-5", "clusterctl:cluster", "prod", "clusterctl:role", "agents", "clusterctl:group", "web", "clusterctl:autoscale", "1m"),
	}}
	g := Groups{AutoScaling: f, EC2: f, Stacks: f}
	got, err := g.Groups(context.Background(), "core")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.filter) != 1 || aws.ToString(f.filter[0].Name) != "tag:clusterctl:cluster" || f.filter[0].Values[0] != "core" {
		t.Errorf("filter %+v", f.filter)
	}
	want := []node.ScalingGroup{
		{Name: "core-fixed-Group-3", Group: "fixed", Min: 1, Max: 4, Desired: 2, InstanceTypes: []string{"t3.small"}, Lifecycles: []string{"on-demand"},
			Zones: []string{"eu-west-1a"}, Labels: map[string]string{}, Instances: []string{"i-1"}},
		{Name: "core-spot-Group-2", Group: "spot", Min: 1, Max: 4, Desired: 2, Autoscale: true, ScaleDownAfter: 20 * time.Second,
			InstanceTypes: []string{"m5.large", "m5a.large"}, Lifecycles: []string{"spot"}, Zones: []string{"eu-west-1a"},
			Labels: map[string]string{"disk": "ssd"}, Instances: []string{"i-1"}},
		{Name: "core-web-Group-1", Group: "web", Min: 1, Max: 4, Desired: 2, Autoscale: true, ScaleDownAfter: 10 * time.Minute,
			InstanceTypes: []string{"t3.small"}, Lifecycles: []string{"on-demand"}, Zones: []string{"eu-west-1a"}, Labels: map[string]string{},
			Instances: []string{"i-1"}, Busy: "its stack core-web is UPDATE_IN_PROGRESS"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
	delete(f.stacks, "core-web")
	got, _ = g.Groups(context.Background(), "core")
	if got[2].Busy != "its stack core-web does not exist" {
		t.Errorf("a group without its stack: %q", got[2].Busy)
	}

	types, err := g.InstanceTypes(context.Background(), []string{"m6g.large"})
	if err != nil || !reflect.DeepEqual(types["m6g.large"], node.InstanceType{VCPUs: 2, MemoryMiB: 8192, Archs: []string{"arm64"}}) || len(f.typesIn) != 1 {
		t.Errorf("types %+v %v", types, err)
	}
	if err := g.SetDesired(context.Background(), "core-web-Group-1", 3); err != nil || aws.ToInt32(f.desired.DesiredCapacity) != 3 ||
		aws.ToString(f.desired.AutoScalingGroupName) != "core-web-Group-1" || aws.ToBool(f.desired.HonorCooldown) {
		t.Errorf("set desired %+v %v", f.desired, err)
	}
	if err := g.Terminate(context.Background(), "i-1"); err != nil || aws.ToString(f.terminate.InstanceId) != "i-1" || !aws.ToBool(f.terminate.ShouldDecrementDesiredCapacity) {
		t.Errorf("terminate %+v %v", f.terminate, err)
	}
}
