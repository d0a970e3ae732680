package motoserver

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

// A resource that cannot be made fails its stack, as CloudFormation fails
// it: the creation is accepted, the stack rolls back and says why. (moto
// failed the CreateStack call itself and left the stack
// CREATE_IN_PROGRESS for ever, so a caller that retried it waited on it
// without end.)
func TestFailedCreationRollsBack(t *testing.T) {
	ctx, cfg := started(t)
	cfn := cloudformation.NewFromConfig(cfg)
	body := `{"Resources": {"S": {"Type": "AWS::EC2::Subnet", "Properties": {"VpcId": "vpc-12345678", "CidrBlock": "10.9.0.0/24"}}}}`
	if _, err := cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("bad"), TemplateBody: aws.String(body)}); err != nil {
		t.Fatalf("the creation was refused: %v", err)
	}
	out, err := cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("bad")})
	if err != nil {
		t.Fatal(err)
	}
	if st := out.Stacks[0].StackStatus; st != types.StackStatusRollbackComplete {
		t.Errorf("stack %s, want %s", st, types.StackStatusRollbackComplete)
	}
	events, err := cfn.DescribeStackEvents(ctx, &cloudformation.DescribeStackEventsInput{StackName: aws.String("bad")})
	if err != nil {
		t.Fatal(err)
	}
	var said bool
	for _, e := range events.StackEvents {
		if e.ResourceStatus == types.ResourceStatusRollbackInProgress && strings.Contains(aws.ToString(e.ResourceStatusReason), "vpc-12345678") {
			said = true
		}
	}
	if !said {
		t.Errorf("no ROLLBACK_IN_PROGRESS event names the VPC that is not there: %+v", events.StackEvents)
	}
}
