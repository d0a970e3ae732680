package motoserver

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
)

// A stack's creation events carry the creation's ClientRequestToken, as
// CloudFormation's do: a CreateStack retried after its first response was
// lost meets AlreadyExists, and its caller tells its own stack by the
// token (moto alone left the events without one, and a retry under load
// failed as a stack of someone else's).
func TestCreateEventsCarryTheToken(t *testing.T) {
	ctx, cfg := started(t)
	cfn := cloudformation.NewFromConfig(cfg)
	in := &cloudformation.CreateStackInput{StackName: aws.String("tok"), ClientRequestToken: aws.String("create-0123"),
		TemplateBody: aws.String(`{"Resources": {"Q": {"Type": "AWS::SQS::Queue"}}}`)}
	if _, err := cfn.CreateStack(ctx, in); err != nil {
		t.Fatal(err)
	}
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
	if _, err := cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("plain"),
		TemplateBody: aws.String(`{"Resources": {"Q": {"Type": "AWS::SQS::Queue"}}}`)}); err != nil {
		t.Fatal(err)
	}
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
