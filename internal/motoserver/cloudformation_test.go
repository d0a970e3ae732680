package motoserver

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

// The gaps of moto's CloudFormation that gaps.py fills, each as
// CloudFormation behaves, on a server of the test's own.

// cfnStarted starts a server for the test and returns a CloudFormation
// client of it.
func cfnStarted(t *testing.T) (context.Context, *cloudformation.Client) {
	t.Helper()
	ctx, cfg := started(t)
	return ctx, cloudformation.NewFromConfig(cfg)
}

// createStack creates a stack, failing the test if the call fails.
func createStack(ctx context.Context, t *testing.T, cfn *cloudformation.Client, in *cloudformation.CreateStackInput) {
	t.Helper()
	if _, err := cfn.CreateStack(ctx, in); err != nil {
		t.Fatalf("creating stack %s: %v", aws.ToString(in.StackName), err)
	}
}

// A stack's creation events carry the creation's ClientRequestToken, as
// CloudFormation's do: a CreateStack retried after its first response was
// lost meets AlreadyExists, and its caller tells its own stack by the
// token (moto alone left the events without one, and a retry under load
// failed as a stack of someone else's).
func TestCreateEventsCarryTheToken(t *testing.T) {
	ctx, cfn := cfnStarted(t)
	createStack(ctx, t, cfn, &cloudformation.CreateStackInput{StackName: aws.String("tok"), ClientRequestToken: aws.String("create-0123"),
		TemplateBody: aws.String(`{"Resources": {"Q": {"Type": "AWS::SQS::Queue"}}}`)})
	out, err := cfn.DescribeStackEvents(ctx, &cloudformation.DescribeStackEventsInput{StackName: aws.String("tok")})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.StackEvents) == 0 {
		t.Fatal("no events")
	}
	for _, e := range out.StackEvents {
		if got := aws.ToString(e.ClientRequestToken); got != "create-0123" {
			t.Errorf("event %s %s: token %q", aws.ToString(e.LogicalResourceId), e.ResourceStatus, got)
		}
	}
	// Another stack's events carry its own token, or none.
	createStack(ctx, t, cfn, &cloudformation.CreateStackInput{StackName: aws.String("plain"),
		TemplateBody: aws.String(`{"Resources": {"Q": {"Type": "AWS::SQS::Queue"}}}`)})
	out, err = cfn.DescribeStackEvents(ctx, &cloudformation.DescribeStackEventsInput{StackName: aws.String("plain")})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range out.StackEvents {
		if got := aws.ToString(e.ClientRequestToken); got != "" {
			t.Errorf("a creation without a token: event with token %q", got)
		}
	}
}

// A JSON template is read as JSON, as CloudFormation reads it: a character
// outside the Basic Multilingual Plane, escaped as JSON escapes it (a
// surrogate pair), is that one character. (moto read every template as
// YAML, whose escapes make two lone surrogates of it; and the YAML parser
// in Python was most of the server's CPU in the end-to-end tests.)
func TestJSONTemplateReadAsJSON(t *testing.T) {
	ctx, cfn := cfnStarted(t)
	body := `{"Description": "caf\u00e9 \ud83d\ude80", "Parameters": {"P": {"Type": "String", "Default": "x"}},
  "Resources": {"Q": {"Type": "AWS::SQS::Queue"}}, "Outputs": {"O": {"Value": {"Ref": "P"}}}}`
	createStack(ctx, t, cfn, &cloudformation.CreateStackInput{StackName: aws.String("json"), TemplateBody: aws.String(body)})
	out, err := cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("json")})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Stacks) != 1 || aws.ToString(out.Stacks[0].Description) != "café 🚀" {
		t.Fatalf("stacks %+v, want one described as %q", out.Stacks, "café 🚀")
	}
	if o := out.Stacks[0].Outputs; len(o) != 1 || aws.ToString(o[0].OutputValue) != "x" {
		t.Errorf("outputs %+v, want O=x", o)
	}
}

// A resource that cannot be made fails its stack, as CloudFormation fails
// it: the creation is accepted, and the stack rolls back, or stops
// CREATE_FAILED when the creation asked DisableRollback, and says why.
// (moto failed the CreateStack call itself and left the stack
// CREATE_IN_PROGRESS for ever, so a caller that retried it waited on it
// without end.)
func TestFailedCreationRollsBack(t *testing.T) {
	ctx, cfn := cfnStarted(t)
	body := `{"Resources": {"S": {"Type": "AWS::EC2::Subnet", "Properties": {"VpcId": "vpc-12345678", "CidrBlock": "10.9.0.0/24"}}}}`
	for _, c := range []struct {
		name            string
		disableRollback bool
		status          types.StackStatus
		saysWhy         types.ResourceStatus // the stack's event that gives the reason
	}{
		{"rolled-back", false, types.StackStatusRollbackComplete, types.ResourceStatusRollbackInProgress},
		{"kept", true, types.StackStatusCreateFailed, types.ResourceStatusCreateFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			createStack(ctx, t, cfn, &cloudformation.CreateStackInput{StackName: aws.String(c.name), TemplateBody: aws.String(body),
				DisableRollback: aws.Bool(c.disableRollback)})
			out, err := cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(c.name)})
			if err != nil {
				t.Fatal(err)
			}
			if st := out.Stacks[0].StackStatus; st != c.status {
				t.Errorf("stack %s, want %s", st, c.status)
			}
			events, err := cfn.DescribeStackEvents(ctx, &cloudformation.DescribeStackEventsInput{StackName: aws.String(c.name)})
			if err != nil {
				t.Fatal(err)
			}
			var said bool
			for _, e := range events.StackEvents {
				if e.ResourceStatus == c.saysWhy && strings.Contains(aws.ToString(e.ResourceStatusReason), "vpc-12345678") {
					said = true
				}
			}
			if !said {
				t.Errorf("no %s event names the VPC that is not there: %+v", c.saysWhy, events.StackEvents)
			}
		})
	}
}
