package motoserver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwschemas "github.com/aws/aws-sdk-go-v2/service/cloudwatch/schemas"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/transport/http/protocol/awsquery"
)

// The server deploys a network load balancer with a TCP listener through
// CloudFormation, and deleting the stack deletes its target group: the
// gaps gaps.py fills (moto alone makes an application load balancer, which
// refuses the listener, and keeps the target group).
func TestLoadBalancerGapsFilled(t *testing.T) {
	ctx, cfg := started(t)
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

// The server makes a stack's alarms, as the template gives them, and
// deletes them with the stack: moto's CloudFormation alone leaves them out.
func TestAlarmGapFilled(t *testing.T) {
	ctx, cfg := started(t)
	cfn := cloudformation.NewFromConfig(cfg)
	cw := cloudwatch.NewFromConfig(cfg, func(o *cloudwatch.Options) { o.Protocol = awsquery.New(cwschemas.GraniteServiceVersion20100801) })
	body := `{"Resources": {"A": {"Type": "AWS::CloudWatch::Alarm", "Properties": {"AlarmName": "a-down", "Namespace": "ns",
  "MetricName": "Down", "Statistic": "Minimum", "Dimensions": [{"Name": "Cluster", "Value": "c"}], "Period": 60,
  "EvaluationPeriods": 10, "DatapointsToAlarm": 10, "ComparisonOperator": "GreaterThanThreshold", "Threshold": 0,
  "TreatMissingData": "breaching", "AlarmActions": ["arn:aws:sns:us-east-1:123456789012:t"]}}}}`
	if _, err := cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("alarms"), TemplateBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
	res, err := cfn.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String("alarms")})
	if err != nil || len(res.StackResources) != 1 || aws.ToString(res.StackResources[0].PhysicalResourceId) != "a-down" {
		t.Fatalf("stack resources %+v, %v", res, err)
	}
	out, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: []string{"a-down"}})
	if err != nil || len(out.MetricAlarms) != 1 {
		t.Fatalf("alarms %+v, %v", out, err)
	}
	a := out.MetricAlarms[0]
	if aws.ToString(a.MetricName) != "Down" || aws.ToFloat64(a.Threshold) != 0 || aws.ToInt32(a.DatapointsToAlarm) != 10 ||
		aws.ToString(a.TreatMissingData) != "breaching" || len(a.AlarmActions) != 1 || len(a.Dimensions) != 1 {
		t.Errorf("alarm %+v", a)
	}
	if _, err := cfn.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("alarms")}); err != nil {
		t.Fatal(err)
	}
	if out, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{}); err != nil || len(out.MetricAlarms) != 0 {
		t.Errorf("alarms after the stack's deletion: %+v, %v", out, err)
	}
}

// A bucket the template versions is versioned: moto's CloudFormation
// alone leaves it unversioned, and PutObject answers no version id.
func TestBucketVersioningGapFilled(t *testing.T) {
	ctx, cfg := started(t)
	cfn := cloudformation.NewFromConfig(cfg)
	s3c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	body := `{"Resources": {"B": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": "versioned-b", "VersioningConfiguration": {"Status": "Enabled"}}}}}`
	if _, err := cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("bucket"), TemplateBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
	put, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("versioned-b"), Key: aws.String("k"), Body: strings.NewReader("x")})
	if err != nil || aws.ToString(put.VersionId) == "" {
		t.Fatalf("put: %+v, %v: want a version id", put, err)
	}
}
