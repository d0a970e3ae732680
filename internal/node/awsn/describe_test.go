package awsn

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/clusterctl/clusterctl/internal/node"
)

type fakeDescribe struct{ in *ec2.DescribeInstancesInput }

func (f *fakeDescribe) DescribeInstances(_ context.Context, in *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	f.in = in
	return &ec2.DescribeInstancesOutput{Reservations: []ec2types.Reservation{{Instances: []ec2types.Instance{
		{InstanceId: aws.String("i-1"), InstanceType: "m5.large", InstanceLifecycle: ec2types.InstanceLifecycleTypeSpot,
			Placement: &ec2types.Placement{AvailabilityZone: aws.String("eu-west-1b")}},
		{InstanceId: aws.String("i-2"), InstanceType: "t3.small"},
	}}}}, nil
}
func (f *fakeDescribe) CreateTags(context.Context, *ec2.CreateTagsInput, ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
	return &ec2.CreateTagsOutput{}, nil
}

// What EC2 says of an instance: its type, spot or on-demand, its zone.
func TestDescribe(t *testing.T) {
	f := &fakeDescribe{}
	got, err := Instances{API: f}.Describe(context.Background(), []string{"i-1", "i-2"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]node.InstanceFacts{"i-1": {Type: "m5.large", Lifecycle: "spot", Zone: "eu-west-1b"}, "i-2": {Type: "t3.small", Lifecycle: "on-demand"}}
	if len(got) != 2 || got["i-1"] != want["i-1"] || got["i-2"] != want["i-2"] {
		t.Errorf("got %+v", got)
	}
	if len(f.in.Filters) != 1 || aws.ToString(f.in.Filters[0].Name) != "instance-id" {
		t.Errorf("asked %+v", f.in)
	}
}
