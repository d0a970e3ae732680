package awsn

import (
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/clusterctl/clusterctl/internal/names"
	"github.com/clusterctl/clusterctl/internal/node"
)

// twoVPCs is EC2 with an instance in each of two VPCs at the same private
// address, honouring the instance-id, private-ip-address and vpc-id
// filters as EC2 does.
type twoVPCs struct{}

var vpcInstances = []ec2types.Instance{
	{InstanceId: aws.String("i-0000000000000000a"), VpcId: aws.String("vpc-cluster"), PrivateIpAddress: aws.String("10.0.2.7"),
		State: &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning}},
	{InstanceId: aws.String("i-0000000000000000b"), VpcId: aws.String("vpc-other"), PrivateIpAddress: aws.String("10.0.2.7"),
		State: &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning}},
}

func (twoVPCs) DescribeInstances(_ context.Context, in *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	var out []ec2types.Instance
	for _, i := range vpcInstances {
		ok := len(in.InstanceIds) == 0 || slices.Contains(in.InstanceIds, *i.InstanceId)
		for _, f := range in.Filters {
			v := map[string]string{"instance-id": *i.InstanceId, "private-ip-address": *i.PrivateIpAddress, "vpc-id": *i.VpcId}[*f.Name]
			ok = ok && slices.Contains(f.Values, v)
		}
		if ok {
			out = append(out, i)
		}
	}
	return &ec2.DescribeInstancesOutput{Reservations: []ec2types.Reservation{{Instances: out}}}, nil
}
func (twoVPCs) CreateTags(context.Context, *ec2.CreateTagsInput, ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
	return &ec2.CreateTagsOutput{}, nil
}

// A node at 10.0.2.7 claiming the instance of another VPC at that address
// is never proven: only the cluster's VPC is asked.
func TestIdentityOnlyInTheClustersVPC(t *testing.T) {
	ctx := context.Background()
	vpc, err := VPCOf(ctx, twoVPCs{}, "i-0000000000000000a")
	if err != nil || vpc != "vpc-cluster" {
		t.Fatalf("VPC %q %v", vpc, err)
	}
	impostor := node.Node{ID: "n1", Addr: "10.0.2.7", State: "ready", Labels: map[string]string{names.EngineLabelInstanceID: "i-0000000000000000b"}}
	ips, err := Instances{API: twoVPCs{}, VPC: vpc}.PrivateIPs(ctx, []string{"i-0000000000000000b"})
	if err != nil {
		t.Fatal(err)
	}
	if got := node.Identify([]node.Node{impostor}, ips).Instance("n1"); got != "" {
		t.Errorf("a node in the cluster's VPC proven to be instance %s of another VPC", got)
	}
	// Without the filter (as before), it was.
	ips, _ = Instances{API: twoVPCs{}}.PrivateIPs(ctx, []string{"i-0000000000000000b"})
	if node.Identify([]node.Node{impostor}, ips).Instance("n1") == "" {
		t.Error("the unfiltered lookup did not prove it: the test proves nothing")
	}
	// The lost managers' addresses too: only the cluster's VPC.
	at, err := Proof{EC2: twoVPCs{}, VPC: vpc}.At(ctx, []string{"10.0.2.7"})
	if err != nil || len(at["10.0.2.7"]) != 1 || at["10.0.2.7"][0].ID != "i-0000000000000000a" {
		t.Errorf("at %v %v", at, err)
	}
}

type fakeSTS struct{ userID string }

func (f fakeSTS) GetCallerIdentity(context.Context, *sts.GetCallerIdentityInput, ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error) {
	return &sts.GetCallerIdentityOutput{UserId: aws.String(f.userID)}, nil
}

// The confirmation key is the instance role session's aws:userid; other
// credentials give none.
func TestConfirmationKey(t *testing.T) {
	ctx := context.Background()
	if k, err := ConfirmationKey(ctx, fakeSTS{"AROAAGENTS:i-0000000000000000a"}, "i-0000000000000000a"); err != nil || k != "interruptions/AROAAGENTS:i-0000000000000000a" {
		t.Errorf("%q %v", k, err)
	}
	for _, id := range []string{"AIDAUSER", "AROAAGENTS:i-0000000000000000b", "AROAAGENTS:x/i-0000000000000000a"} {
		if k, err := ConfirmationKey(ctx, fakeSTS{id}, "i-0000000000000000a"); err == nil {
			t.Errorf("%s: key %q", id, k)
		}
	}
}
