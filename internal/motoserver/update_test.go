package motoserver

import (
	"encoding/base64"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// A stack update that changes only a parameter a launch template's user
// data names in Fn::Sub gives the template a new version with the new
// user data, as CloudFormation does (moto alone followed Refs only, and
// the nodes of an upgrade booted with the old user data).
func TestSubParameterUpdatesResource(t *testing.T) {
	ctx, cfg := started(t)
	cfn, ec2c := cloudformation.NewFromConfig(cfg), ec2.NewFromConfig(cfg)
	body := `{"Parameters": {"Agent": {"Type": "String"}},
  "Resources": {"LT": {"Type": "AWS::EC2::LaunchTemplate", "Properties": {"LaunchTemplateData": {
    "ImageId": "ami-12c6146b", "UserData": {"Fn::Base64": {"Fn::Sub": "agent ${Agent} in ${AWS::Region}"}}}}}}}`
	deploy := func(update bool, agent string) {
		t.Helper()
		params := []cfntypes.Parameter{{ParameterKey: aws.String("Agent"), ParameterValue: aws.String(agent)}}
		var err error
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

// A change set that changes a parameter an output Refs gives the output
// its new value, as CloudFormation does (moto alone kept the outputs of
// the stack's creation, and a group joined after update-core read the
// core's old engine version).
func TestChangeSetRefreshesOutputs(t *testing.T) {
	ctx, cfg := started(t)
	cfn := cloudformation.NewFromConfig(cfg)
	body := `{"Parameters": {"Engine": {"Type": "String"}}, "Resources": {"Q": {"Type": "AWS::SQS::Queue"}},
  "Outputs": {"Engine": {"Value": {"Ref": "Engine"}}}}`
	params := func(v string) []cfntypes.Parameter {
		return []cfntypes.Parameter{{ParameterKey: aws.String("Engine"), ParameterValue: aws.String(v)}}
	}
	if _, err := cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("o"), TemplateBody: aws.String(body), Parameters: params("24.0.9")}); err != nil {
		t.Fatal(err)
	}
	// Read once, as create-core reads them.
	if _, err := cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("o")}); err != nil {
		t.Fatal(err)
	}
	if _, err := cfn.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{StackName: aws.String("o"), ChangeSetName: aws.String("c"),
		ChangeSetType: cfntypes.ChangeSetTypeUpdate, TemplateBody: aws.String(body), Parameters: params("25.0.8")}); err != nil {
		t.Fatal(err)
	}
	if _, err := cfn.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{StackName: aws.String("o"), ChangeSetName: aws.String("c")}); err != nil {
		t.Fatal(err)
	}
	out, err := cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("o")})
	if err != nil || len(out.Stacks) != 1 || len(out.Stacks[0].Outputs) != 1 {
		t.Fatalf("the stack: %+v, %v", out, err)
	}
	if got := aws.ToString(out.Stacks[0].Outputs[0].OutputValue); got != "25.0.8" {
		t.Errorf("the output after the change set: %q, want the parameter's new value", got)
	}
}
