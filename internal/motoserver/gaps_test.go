package motoserver

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
)

// The server deploys a network load balancer with a TCP listener through
// CloudFormation, and deleting the stack deletes its target group: the
// gaps gaps.py fills (moto alone makes an application load balancer, which
// refuses the listener, and keeps the target group).
func TestLoadBalancerGapsFilled(t *testing.T) {
	s, err := Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("testing", "testing", "")),
		config.WithBaseEndpoint(s.URL))
	if err != nil {
		t.Fatal(err)
	}
	ec2c, cfn, elb := ec2.NewFromConfig(cfg), cloudformation.NewFromConfig(cfg), elbv2.NewFromConfig(cfg)
	vpc, err := ec2c.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.1.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	sn, err := ec2c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, CidrBlock: aws.String("10.1.1.0/24"), AvailabilityZone: aws.String("us-east-1a")})
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"Resources": {
  "LB": {"Type": "AWS::ElasticLoadBalancingV2::LoadBalancer", "Properties": {"Type": "network", "Subnets": [%q]}},
  "TG": {"Type": "AWS::ElasticLoadBalancingV2::TargetGroup", "Properties": {"Protocol": "TCP", "Port": 30080, "VpcId": %q, "TargetType": "instance"}},
  "L": {"Type": "AWS::ElasticLoadBalancingV2::Listener", "Properties": {"LoadBalancerArn": {"Ref": "LB"}, "Port": 80, "Protocol": "TCP",
    "DefaultActions": [{"Type": "forward", "TargetGroupArn": {"Ref": "TG"}}]}}}}`, aws.ToString(sn.Subnet.SubnetId), aws.ToString(vpc.Vpc.VpcId))
	if _, err := cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("nlb"), TemplateBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
	lbs, err := elb.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{})
	if err != nil || len(lbs.LoadBalancers) != 1 || lbs.LoadBalancers[0].Type != "network" {
		t.Fatalf("load balancers %+v, %v", lbs, err)
	}
	if _, err := cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("nlb")}); err != nil {
		t.Fatal(err)
	}
	tgs, err := elb.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{})
	if err != nil || len(tgs.TargetGroups) != 0 {
		t.Errorf("target groups after the stack's deletion: %d, %v", len(tgs.TargetGroups), err)
	}
}
