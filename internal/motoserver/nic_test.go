package motoserver

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// An Auto Scaling group launches from a launch template's network
// interface as EC2 does: with the interface's security group, and a public
// IP exactly when the interface associates one, whatever the subnet maps
// on launch (moto alone gave no security group and the subnet's choice).
func TestLaunchTemplateNetworkInterface(t *testing.T) {
	ctx, cfg := started(t)
	ec2c, cfn := ec2.NewFromConfig(cfg), cloudformation.NewFromConfig(cfg)
	subnet := defaultSubnet(ctx, t, ec2c)
	if !aws.ToBool(subnet.MapPublicIpOnLaunch) {
		t.Fatalf("default subnet %+v maps no public IP on launch", subnet)
	}
	sn, vpc := aws.ToString(subnet.SubnetId), aws.ToString(subnet.VpcId)
	for _, public := range []bool{false, true} {
		name := fmt.Sprintf("nic-%t", public)
		body := fmt.Sprintf(`{"Resources": {
  "SG": {"Type": "AWS::EC2::SecurityGroup", "Properties": {"GroupDescription": "nodes", "VpcId": %q}},
  "LT": {"Type": "AWS::EC2::LaunchTemplate", "Properties": {"LaunchTemplateData": {"ImageId": "ami-12c6146b", "InstanceType": "t3.small",
    "NetworkInterfaces": [{"DeviceIndex": 0, "Groups": [{"Ref": "SG"}], "AssociatePublicIpAddress": %t, "DeleteOnTermination": true}]}}},
  "ASG": {"Type": "AWS::AutoScaling::AutoScalingGroup", "Properties": {"MinSize": "1", "MaxSize": "1", "DesiredCapacity": "1",
    "VPCZoneIdentifier": [%q], "LaunchTemplate": {"LaunchTemplateId": {"Ref": "LT"}, "Version": {"Fn::GetAtt": ["LT", "LatestVersionNumber"]}}}}}}`,
			vpc, public, sn)
		if _, err := cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
		res, err := cfn.DescribeStackResource(ctx, &cloudformation.DescribeStackResourceInput{StackName: aws.String(name), LogicalResourceId: aws.String("SG")})
		if err != nil {
			t.Fatal(err)
		}
		sg := aws.ToString(res.StackResourceDetail.PhysicalResourceId)
		out, err := ec2c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("instance.group-id"), Values: []string{sg}}}})
		if err != nil {
			t.Fatal(err)
		}
		var n int
		for _, r := range out.Reservations {
			for _, i := range r.Instances {
				n++
				if got := aws.ToString(i.PublicIpAddress) != ""; got != public {
					t.Errorf("public %t: instance %s has public IP %q", public, aws.ToString(i.InstanceId), aws.ToString(i.PublicIpAddress))
				}
			}
		}
		if n != 1 {
			t.Errorf("public %t: %d instances in security group %s, want 1", public, n, sg)
		}
	}
}

// defaultSubnet is a subnet of the account's default VPC.
func defaultSubnet(ctx context.Context, t *testing.T, c *ec2.Client) ec2types.Subnet {
	t.Helper()
	subnets, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("default-for-az"), Values: []string{"true"}}}})
	if err != nil || len(subnets.Subnets) == 0 {
		t.Fatalf("default subnets %+v: %v", subnets, err)
	}
	return subnets.Subnets[0]
}
