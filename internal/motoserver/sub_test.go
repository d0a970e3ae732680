package motoserver

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// A stack update that changes only a parameter a launch template's user
// data names in Fn::Sub gives the template a new version with the new
// user data, as CloudFormation does (moto alone followed Refs only, and
// the nodes of an upgrade booted with the old user data).
func TestSubParameterUpdatesResource(t *testing.T) {
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
	cfn, ec2c := cloudformation.NewFromConfig(cfg), ec2.NewFromConfig(cfg)
	body := `{"Parameters": {"Agent": {"Type": "String"}},
  "Resources": {"LT": {"Type": "AWS::EC2::LaunchTemplate", "Properties": {"LaunchTemplateData": {
    "ImageId": "ami-12c6146b", "UserData": {"Fn::Base64": {"Fn::Sub": "agent ${Agent} in ${AWS::Region}"}}}}}}}`
	deploy := func(update bool, agent string) {
		t.Helper()
		params := []cfntypes.Parameter{{ParameterKey: aws.String("Agent"), ParameterValue: aws.String(agent)}}
		if update {
			_, err = cfn.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String("lt"), TemplateBody: aws.String(body), Parameters: params})
		} else {
			_, err = cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("lt"), TemplateBody: aws.String(body), Parameters: params})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	latest := func() string {
		t.Helper()
		res, err := cfn.DescribeStackResource(ctx, &cloudformation.DescribeStackResourceInput{StackName: aws.String("lt"), LogicalResourceId: aws.String("LT")})
		if err != nil {
			t.Fatal(err)
		}
		out, err := ec2c.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{
			LaunchTemplateId: res.StackResourceDetail.PhysicalResourceId, Versions: []string{"$Latest"},
		})
		if err != nil || len(out.LaunchTemplateVersions) != 1 {
			t.Fatalf("launch template versions: %v", err)
		}
		ud, err := base64.StdEncoding.DecodeString(aws.ToString(out.LaunchTemplateVersions[0].LaunchTemplateData.UserData))
		if err != nil {
			t.Fatal(err)
		}
		return string(ud)
	}
	deploy(false, "one")
	if got := latest(); got != "agent one in us-east-1" {
		t.Fatalf("created: user data %q", got)
	}
	deploy(true, "two")
	if got := latest(); got != "agent two in us-east-1" {
		t.Errorf("after the parameter's update: user data %q, want the new agent", got)
	}
}
